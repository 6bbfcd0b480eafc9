package analysis

import "math"

// MeanCI is a level confidence interval for the mean of values that lie
// in [0, 1], one value per group (a task's pass@1, its pass@k, its
// API_acc, a failure-class indicator, …): a score interval that keeps
// its coverage on few groups, where Bootstrap's percentile interval runs
// narrow and collapses to a point when every group agrees. Over the grid
// of TestMeanCIHoldsCoverageOnSmallGroups, at level 0.95, Bootstrap
// covers 79% of the time at 10 tasks and 92% at 30; MeanCI 94% and 95%.
// At 100 tasks both cover 95%, MeanCI's intervals 2% wider.
//
// The method is the quasi-binomial score interval (Wilson 1927;
// Wedderburn 1974; McCullagh and Nelder 1989, §9.2). For data in [0, 1]
// the variance is at most the Bernoulli variance μ(1-μ), so the interval
// is the set of μ with
//
//	(m - μ)² ≤ c² · φ · μ(1-μ) / n
//
// where m is the mean of the n values and φ in (0, 1] the dispersion,
// a quadratic in μ solved in closed form (Wilson's interval with n/φ
// trials). Three choices make it hold up on few groups:
//
//   - φ is the sample variance (n-1 denominator) over m(1-m), capped at
//     1, the bound that [0, 1] data cannot exceed. Values that are all 0
//     or 1 reach the cap, and the interval is then exactly Wilson's score
//     interval for a binomial proportion, which keeps its coverage at
//     n = 10 where the Wald and percentile intervals do not (Brown, Cai
//     and DasGupta 2001).
//   - c interpolates between the normal quantile z and Student's t with
//     n-1 degrees of freedom, c² = φ·z² + (1-φ)·t². Only the 1-φ share
//     of the Bernoulli variance is estimated from the data (1-φ is the
//     mean of x(1-x) over m(1-m), up to the n/(n-1) factor): at φ = 1
//     the variance is a function of the mean and z is exact; as φ falls
//     the variance becomes a free nuisance parameter, estimated with n-1
//     degrees of freedom, and c tends to t, as in a t interval. The blend
//     keeps the interval continuous in the values (one fractional value
//     among 0s and 1s moves it a little, not to a t interval).
//   - φ is floored at 1/n, the dispersion that one Bernoulli task's
//     variance spread over n tasks would give. Without it, n equal values
//     inside (0, 1) would give an estimated variance of 0 and a
//     zero-width interval; with it they give a width of order 1/n, the
//     order that the rule of three (and Wilson, for n equal 0s or 1s)
//     gives for a distribution whose remaining mass the n draws missed.
//
// The blend and the floor are lacuna's choices, not the literature's;
// TestMeanCIHoldsCoverageOnSmallGroups measures the result (Bernoulli
// and beta-binomial c/20 data, 10 to 100 groups) against Bootstrap's.
// On 0/1 data the coverage is Wilson's, whose lattice dips (91% at
// p = 0.05 and n = 10, 93% at p = 0.3 and n = 30) are the worst cells.
// BCa with Hesterberg's expanded percentile correction was the other
// candidate (considered, not simulated here): it resamples, B times the
// work and a seed to carry, and when n values agree every resample has
// the same mean, so it too has zero width without a floor of its own.
// A Student-t interval clipped to [0, 1] was rejected for the same zero
// width and for its coverage on rare events (0/1 data with p = 0.05).
// With one value the dispersion cannot be estimated and the interval is
// Wilson's for one trial (φ = 1, c = z).
//
// The interval lies within [0, 1], contains m, and has positive width
// for every n ≥ 1. ok is false, and the interval zero, for no values, a
// level outside (0, 1), or a value outside [0, 1] or NaN: such a value
// is a bug upstream (a rate cannot exceed 1), so it is rejected rather
// than clipped. MeanCI draws nothing: the same values give the same
// interval, in any order up to floating-point rounding of the sums, and
// it is safe for concurrent use.
func MeanCI(values []float64, level float64) (ci CI, ok bool) {
	n := len(values)
	if n == 0 || !(level > 0 && level < 1) {
		return CI{}, false
	}
	sum := 0.0
	for _, x := range values {
		if !(x >= 0 && x <= 1) {
			return CI{}, false
		}
		sum += x
	}
	m := sum / float64(n)
	z := math.Sqrt2 * math.Erfinv(level)
	phi, c := 1.0, z
	// All 0s or all 1s (m(1-m) = 0) are binary data: φ = 1, Wilson.
	if n > 1 && m > 0 && m < 1 {
		ss := 0.0
		for _, x := range values {
			ss += (x - m) * (x - m)
		}
		phi = min(1, ss/float64(n-1)/(m*(1-m)))
		t := studentQuantile(level, n-1)
		c = math.Sqrt(phi*z*z + (1-phi)*t*t)
		phi = max(phi, 1/float64(n))
	}
	return wilson(m, float64(n)/phi, c), true
}

// wilson is the score interval for a proportion m of trials trials at
// critical value c (Wilson 1927), clipped against rounding to [0, 1].
func wilson(m, trials, c float64) CI {
	c2n := c * c / trials
	center := (m + c2n/2) / (1 + c2n)
	half := c / (1 + c2n) * math.Sqrt(m*(1-m)/trials+c2n/(4*trials))
	ci := CI{max(0, center-half), min(1, center+half)}
	// At m = 0 (1) the bound is exactly 0 (1); rounding may miss it.
	if m == 0 {
		ci.Lo = 0
	}
	if m == 1 {
		ci.Hi = 1
	}
	return ci
}

// studentQuantile is the t with P(|T| ≤ t) = level for Student's t
// with nu ≥ 1 degrees of freedom: the (1+level)/2 quantile. It solves
// studentTwoSided by Newton's method from the normal quantile, which lies
// below t; P(|T| ≤ t) is concave in t ≥ 0, so the iterates rise
// monotonically to the root without overshooting it.
func studentQuantile(level float64, nu int) float64 {
	t := math.Sqrt2 * math.Erfinv(level)
	lg1, _ := math.Lgamma(float64(nu+1) / 2)
	lg2, _ := math.Lgamma(float64(nu) / 2)
	logNorm := math.Log(2) + lg1 - lg2 - 0.5*math.Log(float64(nu)*math.Pi)
	for range 200 {
		density := math.Exp(logNorm - float64(nu+1)/2*math.Log1p(t*t/float64(nu)))
		step := (level - studentTwoSided(t, nu)) / density
		t += step
		if math.Abs(step) <= 1e-14*t {
			break
		}
	}
	return t
}

// studentTwoSided is P(|T| ≤ t) for Student's t with nu ≥ 1 degrees of
// freedom and t ≥ 0, by the finite series for integer nu (Abramowitz and
// Stegun 26.7.3 and 26.7.4) in θ = atan(t/√nu): exact up to rounding,
// with nu/2 terms.
func studentTwoSided(t float64, nu int) float64 {
	theta := math.Atan(t / math.Sqrt(float64(nu)))
	sin, cos := math.Sincos(theta)
	cos2 := cos * cos
	if nu%2 == 1 {
		// (2/π)(θ + sinθ (cosθ + (2/3)cos³θ + … + (2·4…(nu-3))/(3·5…(nu-2)) cos^(nu-2)θ))
		sum := 0.0
		if nu > 1 {
			term := cos
			sum = term
			for k := 3; k <= nu-2; k += 2 {
				term *= cos2 * float64(k-1) / float64(k)
				sum += term
			}
		}
		return 2 / math.Pi * (theta + sin*sum)
	}
	// sinθ (1 + (1/2)cos²θ + (1·3)/(2·4)cos⁴θ + … + (1·3…(nu-3))/(2·4…(nu-2)) cos^(nu-2)θ)
	term, sum := 1.0, 1.0
	for k := 2; k <= nu-2; k += 2 {
		term *= cos2 * float64(k-1) / float64(k)
		sum += term
	}
	return sin * sum
}
