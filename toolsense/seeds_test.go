package toolsense

import (
	"math/rand"
	"reflect"
	"sort"
	"testing"
)

// TestStratifiedSeedsAllocatesProportionallyWithOnePerService checks the
// allocation per service, the draw's determinism and its errors.
func TestStratifiedSeedsAllocatesProportionallyWithOnePerService(t *testing.T) {
	// Services A (10 tools), B (5), C (1), D (4): N = 20, S = 4.
	var services []string
	for s, n := range map[string]int{"A": 10, "B": 5, "C": 1, "D": 4} {
		for i := 0; i < n; i++ {
			services = append(services, s)
		}
	}
	sort.Strings(services)
	rand.New(rand.NewSource(3)).Shuffle(len(services), func(i, j int) { services[i], services[j] = services[j], services[i] })
	for _, tc := range []struct {
		n    int
		want map[string]int
	}{
		// 4 one each; the other 4 over (9, 4, 0, 3)/16: 2.25, 1, 0, 0.75
		// → A 2, B 1, D 0 floors, the last one to D (0.75).
		{8, map[string]int{"A": 3, "B": 2, "C": 1, "D": 2}},
		{4, map[string]int{"A": 1, "B": 1, "C": 1, "D": 1}},
		{20, map[string]int{"A": 10, "B": 5, "C": 1, "D": 4}},
		// 12 − 4 = 8 over 16: 4.5, 2, 0, 1.5 → floors 4, 2, 0, 1; the
		// remainder tie (A, D at .5) goes to the earlier service.
		{12, nil},
	} {
		got, err := StratifiedSeeds(services, tc.n, 1)
		if err != nil {
			t.Fatal(err)
		}
		count := map[string]int{}
		for i, g := range got {
			count[services[g]]++
			if i > 0 && got[i-1] >= g {
				t.Errorf("n=%d: seeds not in catalog order: %v", tc.n, got)
			}
		}
		want := tc.want
		if want == nil { // the earlier of A and D in first-occurrence order gets the tie
			want = map[string]int{"A": 5, "B": 3, "C": 1, "D": 3}
			for _, s := range services {
				if s == "D" {
					want = map[string]int{"A": 5, "B": 3, "C": 1, "D": 3}
					break
				}
				if s == "A" {
					want = map[string]int{"A": 6, "B": 3, "C": 1, "D": 2}
					break
				}
			}
		}
		if len(got) != tc.n || !reflect.DeepEqual(count, want) {
			t.Errorf("n=%d: %d seeds, per service %v, want %v", tc.n, len(got), count, want)
		}
		again, _ := StratifiedSeeds(services, tc.n, 1)
		if !reflect.DeepEqual(got, again) {
			t.Errorf("n=%d: the same seed drew %v then %v", tc.n, got, again)
		}
	}
	a, _ := StratifiedSeeds(services, 8, 1)
	b, _ := StratifiedSeeds(services, 8, 2)
	if reflect.DeepEqual(a, b) {
		t.Errorf("seeds 1 and 2 drew the same tools %v", a)
	}
	// Fewer seeds than services: distinct services, one tool each.
	for seed := uint64(0); seed < 20; seed++ {
		got, _ := StratifiedSeeds(services, 2, seed)
		if len(got) != 2 || services[got[0]] == services[got[1]] {
			t.Errorf("seed %d: n=2 drew %v (services %s, %s)", seed, got, services[got[0]], services[got[1]])
		}
	}
	for _, n := range []int{0, 21} {
		if _, err := StratifiedSeeds(services, n, 1); err == nil {
			t.Errorf("n=%d of 20 tools: no error", n)
		}
	}
}
