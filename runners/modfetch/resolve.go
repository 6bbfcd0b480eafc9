package modfetch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// Source is what resolution needs from a proxy.
type Source interface {
	List(ctx context.Context, mod string) ([]string, error)
	Info(ctx context.Context, mod, version string) (Info, error)
	Mod(ctx context.Context, mod, version string) ([]byte, error)
}

// ResolveOptions choose which versions count.
type ResolveOptions struct {
	// New is "latest" (the newest release after the cutoff, the default)
	// or "first_after" (the first release after the cutoff).
	New string
	// Prerelease keeps pre-release versions (v1.2.0-rc.1).
	Prerelease bool
	// Retracted keeps versions the module retracted.
	Retracted bool
	// FollowMajor lets New come from a successor major version, which Go
	// publishes as another module (example.com/m/v2, /v3, ...): the newest
	// release of the highest successor that has one ("latest"), or the
	// first release after the cutoff of the first successor with one
	// ("first_after", when the module itself has none).
	FollowMajor bool
}

// Resolution is the pair of versions a model is compared on: Old, the
// newest release at or before the cutoff, and New, a release after it.
type Resolution struct {
	Module   string
	Cutoff   time.Time
	Old, New Info
	// NewModule is the module New belongs to: Module, or a successor major
	// version's path when FollowMajor found one.
	NewModule string
	// Why explains the choice in a sentence, for the output row.
	Why string
	// Requests counts .info fetches (resolution searches over times).
	Requests int
}

// ErrUntagged is returned for modules without tagged versions.
var ErrUntagged = errors.New("no tagged versions")

// Resolve picks Old and New for a module against a cutoff. Release times
// are assumed to rise with semantic version (true of almost every module),
// so the boundary is found by binary search over .info times, a handful of
// requests instead of one per version; the versions just around the
// boundary are then checked directly, which catches a late backport there.
func Resolve(ctx context.Context, src Source, mod string, cutoff time.Time, opts ResolveOptions) (*Resolution, error) {
	all, err := src.List(ctx, mod)
	if err != nil {
		return nil, err
	}
	var vs []string
	dropped := map[string]int{}
	for _, v := range all {
		switch {
		case !semver.IsValid(v):
			dropped["invalid"]++
		case semver.Prerelease(v) != "" && !opts.Prerelease:
			dropped["pre-release"]++
		default:
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		if len(all) == 0 {
			return nil, fmt.Errorf("%s: %w: the proxy lists no versions (an untagged module has only pseudo-versions, which cannot be dated against a cutoff)", mod, ErrUntagged)
		}
		return nil, fmt.Errorf("%s: %w: all %d listed versions are pre-releases or invalid (set prerelease = true to use pre-releases)", mod, ErrUntagged, len(all))
	}
	semver.Sort(vs)
	if !opts.Retracted {
		// Retractions are declared in the newest version's go.mod.
		if gm, err := src.Mod(ctx, mod, vs[len(vs)-1]); err == nil {
			if f, err := modfile.ParseLax("go.mod", gm, nil); err == nil && len(f.Retract) > 0 {
				var kept []string
				for _, v := range vs {
					retracted := false
					for _, r := range f.Retract {
						if semver.Compare(v, r.Low) >= 0 && semver.Compare(v, r.High) <= 0 {
							retracted = true
						}
					}
					if retracted {
						dropped["retracted"]++
					} else {
						kept = append(kept, v)
					}
				}
				vs = kept
			}
		}
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("%s: every version is retracted (set retracted = true to use them)", mod)
	}
	res := &Resolution{Module: mod, Cutoff: cutoff}
	infos := map[int]Info{}
	info := func(i int) (Info, error) {
		if in, ok := infos[i]; ok {
			return in, nil
		}
		in, err := src.Info(ctx, mod, vs[i])
		if err != nil {
			return Info{}, err
		}
		res.Requests++
		infos[i] = in
		return in, nil
	}
	var searchErr error
	// First index whose time is after the cutoff.
	after := sort.Search(len(vs), func(i int) bool {
		in, err := info(i)
		if err != nil {
			searchErr = err
			return true
		}
		return in.Time.After(cutoff)
	})
	if searchErr != nil {
		return nil, searchErr
	}
	// Check the neighbours of the boundary for releases out of order.
	for i := max(0, after-3); i < min(len(vs), after+3); i++ {
		in, err := info(i)
		if err != nil {
			return nil, err
		}
		if (i < after) == in.Time.After(cutoff) {
			return nil, fmt.Errorf("%s: release times are not in version order near the cutoff (%s at %s); pin versions explicitly", mod, vs[i], in.Time.Format(time.RFC3339))
		}
	}
	if after == 0 {
		first, _ := info(0)
		return nil, fmt.Errorf("%s: no release at or before the cutoff %s (the first, %s, is from %s)", mod, cutoff.Format("2006-01-02"), vs[0], first.Time.Format("2006-01-02"))
	}
	res.Old, _ = info(after - 1)
	res.NewModule = mod
	if opts.FollowMajor && (opts.New != "first_after" || after == len(vs)) {
		succ, in, n, err := successorRelease(ctx, src, mod, cutoff, opts)
		res.Requests += n
		if err != nil {
			return nil, err
		}
		if succ != "" {
			res.NewModule, res.New = succ, in
			res.Why = fmt.Sprintf("%d versions listed, %d considered (%s dropped); %s is the newest at or before the cutoff; %s %s is the %s release of the successor major version",
				len(all), len(vs), describe(dropped), res.Old.Version, succ, in.Version, map[bool]string{true: "first", false: "newest"}[opts.New == "first_after"])
			return res, nil
		}
	}
	if after == len(vs) {
		last, _ := info(len(vs) - 1)
		return nil, fmt.Errorf("%s: no release after the cutoff %s (the newest, %s, is from %s): nothing is novel", mod, cutoff.Format("2006-01-02"), vs[len(vs)-1], last.Time.Format("2006-01-02"))
	}
	newIdx := len(vs) - 1
	if opts.New == "first_after" {
		newIdx = after
	}
	res.New, err = info(newIdx)
	if err != nil {
		return nil, err
	}
	mode := "the newest release"
	if opts.New == "first_after" {
		mode = "the first release after the cutoff"
	}
	// Why names no date: models with different cutoffs that pick the same
	// versions must produce the same rows.
	res.Why = fmt.Sprintf("%d versions listed, %d considered (%s dropped); %s is the newest at or before the cutoff, %s is %s",
		len(all), len(vs), describe(dropped), res.Old.Version, res.New.Version, mode)
	return res, nil
}

// successorRelease looks at mod's successor major versions (mod/v2, /v3,
// ... until the proxy has none) and returns the release New should be:
// with "latest", the newest release of the highest successor with a
// release after the cutoff; with "first_after", the first release after
// the cutoff of the first such successor. "" when there is none.
func successorRelease(ctx context.Context, src Source, mod string, cutoff time.Time, opts ResolveOptions) (string, Info, int, error) {
	requests := 0
	var best string
	var bestInfo Info
	for next := NextMajor(mod); next != ""; next = NextMajor(next) {
		list, err := src.List(ctx, next)
		requests++
		if errors.Is(err, ErrNotFound) {
			break
		}
		if err != nil {
			return "", Info{}, requests, err
		}
		var vs []string
		for _, v := range list {
			if semver.IsValid(v) && (opts.Prerelease || semver.Prerelease(v) == "") {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			break
		}
		semver.Sort(vs)
		pick := len(vs) - 1
		if opts.New == "first_after" {
			pick = sort.Search(len(vs), func(i int) bool {
				in, err := src.Info(ctx, next, vs[i])
				requests++
				return err != nil || in.Time.After(cutoff)
			})
			if pick == len(vs) {
				continue
			}
		}
		in, err := src.Info(ctx, next, vs[pick])
		requests++
		if err != nil {
			return "", Info{}, requests, err
		}
		if !in.Time.After(cutoff) {
			continue
		}
		best, bestInfo = next, in
		if opts.New == "first_after" {
			break
		}
	}
	return best, bestInfo, requests, nil
}

// NextMajor is the module path of the next major version: m → m/v2,
// m/v2 → m/v3. gopkg.in paths (m.v1) are not followed.
func NextMajor(mod string) string {
	prefix, major, ok := module.SplitPathVersion(mod)
	if !ok || strings.HasPrefix(major, ".") {
		return ""
	}
	n := 1
	if major != "" {
		fmt.Sscanf(major, "/v%d", &n)
	}
	return fmt.Sprintf("%s/v%d", prefix, n+1)
}

func describe(dropped map[string]int) string {
	if len(dropped) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range []string{"pre-release", "retracted", "invalid"} {
		if n := dropped[k]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k))
		}
	}
	return strings.Join(parts, ", ")
}
