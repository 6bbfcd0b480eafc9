package main

import (
	"slices"
	"strings"
	"testing"
)

func TestReadEnvironmentReadsEachVariable(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars map[string]string
		want environment
	}{
		{"nothing set", nil, environment{}},
		{"store and profiles", map[string]string{"LACUNA_STORE": "/s", "LACUNA_CPUPROFILE": "c", "LACUNA_MEMPROFILE": "m"},
			environment{store: "/s", cpuProfile: "c", memProfile: "m"}},
		{"fsync always", map[string]string{"LACUNA_FSYNC": "always"}, environment{syncEach: true}},
		{"fsync 1", map[string]string{"LACUNA_FSYNC": "1"}, environment{syncEach: true}},
		{"fsync other values are off", map[string]string{"LACUNA_FSYNC": "never"}, environment{}},
		{"Go runtime settings", map[string]string{"GOGC": "off", "GOMEMLIMIT": "1GiB"}, environment{gogcSet: true, memLimitSet: true}},
		{"dumb terminal", map[string]string{"TERM": "dumb"}, environment{dumbTerminal: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := readEnvironment(func(k string) string { return tc.vars[k] }); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestParseFlagsAcceptsFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantPos []string
		jobs    int
		json    bool
		vars    []string
	}{
		{[]string{"p.hcl", "-j", "4"}, []string{"p.hcl"}, 4, false, nil},
		{[]string{"-j", "3", "p.hcl", "--json"}, []string{"p.hcl"}, 3, true, nil},
		{[]string{"--var=a=b", "p.hcl", "--var", "c=d"}, []string{"p.hcl"}, 1, false, []string{"a=b", "c=d"}},
		{[]string{"--json", "--", "-j", "x"}, []string{"-j", "x"}, 1, true, nil},
	} {
		var f struct {
			pipelineFlags
			jobsFlag
		}
		c := newCommand("t", "PIPELINE", "test", "")
		f.pipelineFlags.add(c.Flag)
		f.jobsFlag.add(c.Flag)
		f.n = 1
		pos, err := c.parseFlags(tc.args)
		if err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if !slices.Equal(pos, tc.wantPos) || f.n != tc.jobs || f.json != tc.json || !slices.Equal(f.vars, tc.vars) {
			t.Errorf("%q: positional %q, -j %d, --json %v, --var %q", tc.args, pos, f.n, f.json, f.vars)
		}
	}
}

// TestMistypedCommandGetsASuggestion: an unknown command close to one
// names it; one close to none lists the commands; both exit 2.
func TestMistypedCommandGetsASuggestion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rn"}, `lacuna: unknown command "rn"; did you mean "run"?`},
		{[]string{"shwo", "x"}, `lacuna: unknown command "shwo"; did you mean "show"?`},
		{[]string{"dif"}, `did you mean "diff"?`},
		{[]string{"help", "rn"}, `lacuna help: unknown command "rn"; did you mean "run"?`},
		{[]string{"zzzzzzzz"}, "unknown command \"zzzzzzzz\"\n\nlacuna "},
	} {
		r := lacuna(t, dir, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("lacuna %v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}
