package toolsense

import (
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"sort"
)

// StratifiedSeeds draws n of the tools whose services are given (one per
// tool, in catalog order) and returns their indexes in catalog order.
// Strata are the distinct services in first-occurrence order; the draw is
// a function of (services, n, seed) alone, from a PCG stream seeded with
// (seed, 0):
//
//   - n ≥ the number of services S: every service gets one seed, and the
//     other n − S are allocated proportionally to each service's remaining
//     tools (size − 1) by largest remainder (Hamilton's method): service s
//     gets 1 + floor(q_s) with q_s = (n − S)(size_s − 1)/(N − S) (integer
//     arithmetic), and the seeds left over go one each to the largest
//     remainders, ties to the earlier service. No service gets more than its size.
//   - n < S (one per service is impossible): n services are drawn without
//     replacement with probability proportional to their sizes
//     (Efraimidis–Spirakis: the n largest u^(1/size), u uniform in (0, 1),
//     one u per service in stratum order), and each gets one seed.
//
// Within a service, its a_s seeds are the first a_s of a Fisher–Yates
// shuffle of its tools (catalog order; the swap index for position i is
// the high 64 bits of a 64-bit draw times i+1), services shuffled in
// stratum order. n larger than the catalog is an error.
func StratifiedSeeds(services []string, n int, seed uint64) ([]int, error) {
	N := len(services)
	if n < 1 || n > N {
		return nil, fmt.Errorf("%d seeds asked of a catalog of %d tools", n, N)
	}
	var order []string
	members := map[string][]int{}
	for i, s := range services {
		if _, ok := members[s]; !ok {
			order = append(order, s)
		}
		members[s] = append(members[s], i)
	}
	rng := rand.New(rand.NewPCG(seed, 0))
	S := len(order)
	alloc := make([]int, S)
	if n >= S {
		rest := n - S
		type rem struct{ s, r int }
		var rems []rem
		given := 0
		for i, s := range order {
			alloc[i] = 1
			if rest == 0 {
				continue
			}
			num := rest * (len(members[s]) - 1)
			alloc[i] += num / (N - S)
			given += num / (N - S)
			rems = append(rems, rem{i, num % (N - S)})
		}
		sort.SliceStable(rems, func(a, b int) bool { return rems[a].r > rems[b].r })
		for j := 0; given < rest; j++ {
			alloc[rems[j].s]++
			given++
		}
	} else {
		type key struct {
			s int
			k float64
		}
		keys := make([]key, S)
		for i, s := range order {
			u := rng.Float64()
			for u == 0 {
				u = rng.Float64()
			}
			keys[i] = key{i, logKey(u, len(members[s]))}
		}
		sort.SliceStable(keys, func(a, b int) bool { return keys[a].k > keys[b].k })
		for _, k := range keys[:n] {
			alloc[k.s] = 1
		}
	}
	var out []int
	for i, s := range order {
		if alloc[i] == 0 {
			continue
		}
		m := append([]int(nil), members[s]...)
		for j := len(m) - 1; j > 0; j-- {
			hi, _ := bits.Mul64(rng.Uint64(), uint64(j+1))
			m[j], m[hi] = m[hi], m[j]
		}
		out = append(out, m[:alloc[i]]...)
	}
	sort.Ints(out)
	return out, nil
}

// logKey is log(u^(1/w)) = log(u)/w: Efraimidis–Spirakis keys compared in
// log space, so that large weights do not round every key to 1.
func logKey(u float64, w int) float64 {
	return math.Log(u) / float64(w)
}
