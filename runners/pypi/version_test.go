package pypi

import (
	"sort"
	"testing"
)

// TestVersionOrderFollowsPEP440: the PEP's own examples, in the order
// its "Summary of permitted suffixes and relative ordering" gives, plus
// epochs and local labels.
func TestVersionOrderFollowsPEP440(t *testing.T) {
	ordered := []string{
		"1.dev0", "1.0.dev456", "1.0a1", "1.0a2.dev456", "1.0a12.dev456", "1.0a12",
		"1.0b1.dev456", "1.0b2", "1.0b2.post345.dev456", "1.0b2.post345", "1.0rc1.dev456", "1.0rc1",
		"1.0", "1.0+abc.5", "1.0+abc.7", "1.0+5", "1.0.post456.dev34", "1.0.post456", "1.0.15", "1.1.dev1",
		"1.1a1", "1.1", "1.10", "2.0", "2013.10", "1!0.1", "1!1.0",
	}
	for i := range ordered {
		for j := range ordered {
			a, err := ParseVersion(ordered[i])
			if err != nil {
				t.Fatal(err)
			}
			b, _ := ParseVersion(ordered[j])
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(a, b); got != want {
				t.Errorf("Compare(%s, %s) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
	}
}

func TestVersionNormalisesAlternativeSpellings(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"1.0", "1.0"},
		{"v1.0", "1.0"},
		{"1.0-alpha.1", "1.0a1"},
		{"1.0.beta2", "1.0b2"},
		{"1.0c3", "1.0rc3"},
		{"1.0-preview-4", "1.0rc4"},
		{"1.0a", "1.0a0"},
		{"1.0-1", "1.0.post1"},
		{"1.0.rev", "1.0.post0"},
		{"1.0_r5", "1.0.post5"},
		{"1.0-DEV", "1.0.dev0"},
		{"01.002.0003", "1.2.3"},
		{"0!1.0", "1.0"},
		{"2!1.0", "2!1.0"},
		{"1.0+Ubuntu-1_2", "1.0+ubuntu.1.2"},
		{" 1.0.post1.dev2 ", "1.0.post1.dev2"},
	} {
		v, err := ParseVersion(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if v.String() != c.want {
			t.Errorf("%q normalises to %q, want %q", c.in, v.String(), c.want)
		}
	}
}

func TestVersionRejectsNonPEP440(t *testing.T) {
	for _, s := range []string{"", "latest", "1.0-foo", "1..0", "1.0+", "1.0+a..b", "French Toast", "1.0.dev1.post1"} {
		if _, err := ParseVersion(s); err == nil {
			t.Errorf("%q parsed as a version", s)
		}
	}
}

func TestVersionPrereleaseDetection(t *testing.T) {
	for s, want := range map[string]bool{
		"1.0": false, "1.0.post1": false, "1.0+local": false,
		"1.0a1": true, "1.0rc1": true, "1.0.dev0": true, "1.0.post1.dev1": true, "1.0b1.post1": true,
	} {
		v, err := ParseVersion(s)
		if err != nil {
			t.Fatal(err)
		}
		if v.IsPrerelease() != want {
			t.Errorf("%s: IsPrerelease %v, want %v", s, v.IsPrerelease(), want)
		}
	}
}

func TestVersionTrailingZerosAreEqualAndBigNumbersCompare(t *testing.T) {
	a, _ := ParseVersion("1.0.0")
	b, _ := ParseVersion("1")
	if Compare(a, b) != 0 {
		t.Error("1.0.0 != 1")
	}
	vs := []string{"99999999999999999999999", "100000000000000000000000", "9"}
	sort.Slice(vs, func(i, j int) bool {
		x, _ := ParseVersion(vs[i])
		y, _ := ParseVersion(vs[j])
		return Compare(x, y) < 0
	})
	if vs[0] != "9" || vs[2] != "100000000000000000000000" {
		t.Errorf("order %v", vs)
	}
}
