package annotations_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lacuna-dev/lacuna/annotations"
	"github.com/lacuna-dev/lacuna/artifacts"
)

const pipeline = "/tmp/some/pipeline.hcl"

func openStore(t *testing.T) *artifacts.Store {
	t.Helper()
	s, err := artifacts.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func label(item, class, who string) annotations.Label {
	return annotations.Label{Kind: annotations.KindFailureClass, Node: "node.judge.qwen", Item: item, Label: class, Annotator: who}
}

func TestAddSavesWholeSetAsArtifact(t *testing.T) {
	s := openStore(t)
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.FixedZone("CET", 3600))
	d1, err := annotations.Add(s, pipeline, annotations.Label{Kind: annotations.KindRRBItem, Node: "node.import.rrb", Item: annotations.RRBItem("bb5f"), Label: "valid", Annotator: "ann", Note: "seed <b>ok</b>", Time: t0})
	if err != nil {
		t.Fatal(err)
	}
	d2, err := annotations.Add(s, pipeline, label(annotations.JudgeItem("lo/Map/easy", "base#0", "qwen", "base"), "WrongParam", "ann"))
	if err != nil {
		t.Fatal(err)
	}
	if d1 == d2 || !d1.Valid() || !d2.Valid() {
		t.Fatalf("digests %q, %q: want two valid, different sets", d1, d2)
	}
	for _, d := range []artifacts.Digest{d1, d2} {
		if _, err := os.Stat(s.ObjectPath(d)); err != nil {
			t.Errorf("set %s is not in cas/: %v", d, err)
		}
	}
	got, err := annotations.Load(s, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Load: %d labels, want 2: %+v", len(got), got)
	}
	// Key order: failure_class before rrb_item.
	if got[0].Label != "WrongParam" || got[0].Time.IsZero() || got[0].Time.Location() != time.UTC {
		t.Errorf("first label %+v: want WrongParam with the save's time in UTC", got[0])
	}
	if got[1].Note != "seed <b>ok</b>" || !got[1].Time.Equal(t0) {
		t.Errorf("second label %+v: want the note and time %v kept to the nanosecond", got[1], t0)
	}
	h, err := annotations.History(s, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || h[0].Digest != d1 || h[1].Digest != d2 || h[0].Rows != 1 || h[1].Rows != 2 {
		t.Fatalf("history %+v: want [%s 1] [%s 2]", h, d1, d2)
	}
	old, err := annotations.LoadSave(s, pipeline, h[0])
	if err != nil || len(old) != 1 || old[0].Label != "valid" {
		t.Fatalf("the earlier set: %+v, %v", old, err)
	}
	// The artifact is an ordinary store artifact, typed as annotations.
	r, err := s.Open(artifacts.Object{Digest: d2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Meta()[artifacts.MetaType] != annotations.ArtifactType || r.NumRows() != 2 {
		t.Errorf("artifact meta %v, %d rows", r.Meta(), r.NumRows())
	}
	roots, err := annotations.Roots(s)
	if err != nil || len(roots) != 2 {
		t.Fatalf("Roots: %v, %v; want both sets", roots, err)
	}
	// Another pipeline has its own set.
	if other, err := annotations.Load(s, "/elsewhere.hcl"); err != nil || len(other) != 0 {
		t.Errorf("another pipeline's labels: %v, %v; want none", other, err)
	}
}

func TestAddReplacesSameAnnotatorsLabel(t *testing.T) {
	item := annotations.JudgeItem("t", "s", "m", "c")
	tests := []struct {
		name  string
		saves [][]annotations.Label
		want  []string // annotator=label, in key order
	}{
		{"later save replaces", [][]annotations.Label{{label(item, "WrongParam", "a")}, {label(item, "WrongLogic", "a")}}, []string{"a=WrongLogic"}},
		{"two annotators kept", [][]annotations.Label{{label(item, "WrongParam", "a")}, {label(item, "WrongLogic", "b")}}, []string{"a=WrongParam", "b=WrongLogic"}},
		{"last of one call counts", [][]annotations.Label{{label(item, "OK", "a"), label(item, "WrongImport", "a")}}, []string{"a=WrongImport"}},
		{"other items kept", [][]annotations.Label{{label(item, "OK", "a")}, {label("x", "OK", "a")}}, []string{"a=OK", "a=OK"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			for _, ls := range tc.saves {
				if _, err := annotations.Add(s, pipeline, ls...); err != nil {
					t.Fatal(err)
				}
			}
			got, err := annotations.Load(s, pipeline)
			if err != nil {
				t.Fatal(err)
			}
			var gs []string
			for _, l := range got {
				gs = append(gs, l.Annotator+"="+l.Label)
			}
			if strings.Join(gs, ",") != strings.Join(tc.want, ",") {
				t.Errorf("labels %v, want %v", gs, tc.want)
			}
		})
	}
}

func TestAddUnchangedSetAddsNoSave(t *testing.T) {
	s := openStore(t)
	l := label("i", "OK", "a")
	l.Time = time.Unix(100, 0)
	d1, err := annotations.Add(s, pipeline, l)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := annotations.Add(s, pipeline, l)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := annotations.History(s, pipeline)
	if d1 != d2 || len(h) != 1 {
		t.Errorf("same label twice: %s, %s, %d saves; want one save", d1, d2, len(h))
	}
}

func TestAddRefusesIncompleteLabels(t *testing.T) {
	good := label("i", "OK", "a")
	tests := []struct {
		name string
		edit func(*annotations.Label)
		want string
	}{
		{"unknown kind", func(l *annotations.Label) { l.Kind = "mood" }, `kind "mood"`},
		{"no node", func(l *annotations.Label) { l.Node = "" }, "node is empty"},
		{"no item", func(l *annotations.Label) { l.Item = " " }, "item is empty"},
		{"no label", func(l *annotations.Label) { l.Label = "" }, "label is empty"},
		{"no annotator", func(l *annotations.Label) { l.Annotator = "" }, "annotator is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			bad := good
			tc.edit(&bad)
			_, err := annotations.Add(s, pipeline, good, bad)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "label 2") {
				t.Fatalf("error %v, want one naming label 2 and %q", err, tc.want)
			}
			if got, err := annotations.Load(s, pipeline); err != nil || len(got) != 0 {
				t.Errorf("after a refused call: %v, %v; want nothing saved", got, err)
			}
		})
	}
}

// TestConcurrentAddLosesNothing saves from many goroutines at once: each
// save must see every label saved before it.
func TestConcurrentAddLosesNothing(t *testing.T) {
	s := openStore(t)
	const workers, each = 8, 6
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if _, err := annotations.Add(s, pipeline, label(fmt.Sprintf("w%d-i%d", w, i), "OK", "a")); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := annotations.Load(s, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != workers*each {
		t.Fatalf("%d labels after %d concurrent saves, want all of them", len(got), workers*each)
	}
	h, _ := annotations.History(s, pipeline)
	if len(h) != workers*each {
		t.Errorf("%d saves in the history, want %d", len(h), workers*each)
	}
	for i, sv := range h {
		if sv.Rows != int64(i+1) {
			t.Fatalf("save %d holds %d labels: a save missed its predecessors", i+1, sv.Rows)
		}
	}
}

// TestConcurrentAddAcrossProcesses runs the same race between processes
// (this test binary, re-executed): the flock must serialise them too.
func TestConcurrentAddAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("ANNOTATIONS_TEST_CHILD_STORE"); dir != "" {
		s, err := artifacts.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		id := os.Getenv("ANNOTATIONS_TEST_CHILD_ID")
		for i := range 5 {
			if _, err := annotations.Add(s, pipeline, label(id+"-"+strconv.Itoa(i), "OK", "a")); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	dir := t.TempDir()
	const procs = 4
	cmds := make([]*exec.Cmd, procs)
	for p := range procs {
		cmds[p] = exec.Command(os.Args[0], "-test.run=^TestConcurrentAddAcrossProcesses$")
		cmds[p].Env = append(os.Environ(), "ANNOTATIONS_TEST_CHILD_STORE="+dir, "ANNOTATIONS_TEST_CHILD_ID=p"+strconv.Itoa(p))
		if err := cmds[p].Start(); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatalf("child: %v", err)
		}
	}
	s, err := artifacts.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := annotations.Load(s, pipeline)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != procs*5 {
		t.Fatalf("%d labels after %d processes saved 5 each, want %d", len(got), procs, procs*5)
	}
}

func TestDamagedRefIsAClearError(t *testing.T) {
	tests := []struct {
		name string
		ref  func(good string) string
		want string
	}{
		{"garbage", func(string) string { return "hello\n" }, "line 1 is not"},
		{"cut short", func(g string) string { return g[:len(g)-5] }, "does not end with a newline"},
		{"bad digest", func(g string) string { return strings.Replace(g, "\n", "\nzz\t1\t2025-01-01T00:00:00Z\n", 1) }, "line 2"},
		{"no saves", func(g string) string { return strings.SplitAfter(g, "\n")[0] }, "names no label set"},
		{"wrong row count", func(g string) string { return strings.Replace(g, "\t1\t", "\t7\t", 1) }, "its ref line says 7"},
		{"another pipeline", func(g string) string { return strings.Replace(g, strconv.Quote(pipeline), `"/other.hcl"`, 1) }, `belongs to pipeline "/other.hcl"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openStore(t)
			if _, err := annotations.Add(s, pipeline, label("i", "OK", "a")); err != nil {
				t.Fatal(err)
			}
			path := annotations.RefPath(s, pipeline)
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.ref(string(good))), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err = annotations.Load(s, pipeline)
			if err == nil || !errors.Is(err, annotations.ErrDamagedRef) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Load: %v; want ErrDamagedRef saying %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), filepath.Join("annotations", filepath.Base(path))) && tc.name != "wrong row count" {
				t.Errorf("error %q does not name the ref file", err)
			}
			// A save on top of a damaged ref fails too: it must not
			// start a new set that drops the labels the ref names.
			if _, err := annotations.Add(s, pipeline, label("j", "OK", "a")); err == nil {
				t.Errorf("Add over a damaged ref succeeded")
			}
			if after, _ := os.ReadFile(path); string(after) != tc.ref(string(good)) {
				t.Errorf("Add rewrote the damaged ref")
			}
		})
	}
}

func TestCorruptSetIsAnErrorNotAnEmptySet(t *testing.T) {
	s := openStore(t)
	d, err := annotations.Add(s, pipeline, label("i", "OK", "a"))
	if err != nil {
		t.Fatal(err)
	}
	p := s.ObjectPath(d)
	data, _ := os.ReadFile(p)
	data[len(data)/2] ^= 0xff
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := annotations.Load(s, pipeline); err == nil || !strings.Contains(err.Error(), string(d)) {
		t.Fatalf("Load of a corrupt set: %v; want an error naming %s", err, d)
	}
	if _, err := annotations.Add(s, pipeline, label("j", "OK", "a")); err == nil || !strings.Contains(err.Error(), "nothing was saved") {
		t.Fatalf("Add over a corrupt set: %v; want a refusal", err)
	}
}

func TestGCKeepsLabelSets(t *testing.T) {
	s := openStore(t)
	d1, _ := annotations.Add(s, pipeline, label("i", "OK", "a"))
	d2, err := annotations.Add(s, pipeline, label("j", "OK", "a"))
	if err != nil {
		t.Fatal(err)
	}
	roots := func() ([]artifacts.Digest, error) { return annotations.Roots(s) }
	rep, err := s.GC(t.Context(), map[artifacts.Digest]bool{}, false, artifacts.GCRoots(roots))
	if err != nil {
		t.Fatal(err)
	}
	if rep.ObjectsRemoved != 0 || rep.ObjectsKept != 2 {
		t.Errorf("gc report %+v: want both sets kept", rep)
	}
	for _, d := range []artifacts.Digest{d1, d2} {
		if _, err := os.Stat(s.ObjectPath(d)); err != nil {
			t.Errorf("gc removed set %s", d)
		}
	}
	if got, err := annotations.Load(s, pipeline); err != nil || len(got) != 2 {
		t.Errorf("after gc: %v, %v", got, err)
	}
}

func TestItemKeys(t *testing.T) {
	tests := []struct{ got, want string }{
		{annotations.JudgeItem("lo/Map/easy", "base#0", "qwen", "base"), `"lo/Map/easy" "base#0" "qwen" "base"`},
		{annotations.JudgeItem("t", "reference", "", ""), `"t" "reference" "" ""`},
		{annotations.JudgeItem(`a" "b`, "", "", ""), `"a\" \"b" "" "" ""`},
		{annotations.RRBItem("bb5ffd3b"), `"bb5ffd3b"`},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("item key %s, want %s", tc.got, tc.want)
		}
	}
	if annotations.JudgeItem("a b", "c", "", "") == annotations.JudgeItem("a", "b c", "", "") {
		t.Error("two rows share an item key")
	}
}

func TestKappa(t *testing.T) {
	rep := func(s string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	cat := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name  string
		a, b  []string
		kappa float64
		n     int
	}{
		// Wikipedia's worked example: 50 proposals, 20 yes/yes, 5
		// yes/no, 10 no/yes, 15 no/no: pₒ = 0.7, pₑ = 0.5·0.6 + 0.5·0.4
		// = 0.5, κ = 0.4.
		{"textbook", cat(rep("yes", 25), rep("no", 25)), cat(rep("yes", 20), rep("no", 5), rep("yes", 10), rep("no", 15)), 0.4, 50},
		// By hand: 6 pairs, agree on 5 (pₒ = 5/6); a: A3 B2 C1, b: A2
		// B3 C1; pₑ = (6+6+1)/36 = 13/36; κ = (30/36−13/36)/(23/36) = 17/23.
		{"three classes", []string{"A", "A", "A", "B", "B", "C"}, []string{"A", "A", "B", "B", "B", "C"}, 17.0 / 23, 6},
		{"perfect", []string{"x", "y"}, []string{"x", "y"}, 1, 2},
		{"empty labels skipped", []string{"x", "", "y", "x"}, []string{"x", "y", "y", ""}, 1, 2},
		{"shorter slice", []string{"x", "y", "x"}, []string{"x", "y"}, 1, 2},
		// Systematic disagreement: pₒ = 0, pₑ = 0.5, κ = −1.
		{"opposite", []string{"x", "y"}, []string{"y", "x"}, -1, 2},
		{"undefined: one class", []string{"x", "x"}, []string{"x", "x"}, math.NaN(), 2},
		{"undefined: no pairs", nil, []string{"x"}, math.NaN(), 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k, n := annotations.Kappa(tc.a, tc.b)
			if n != tc.n || !(math.Abs(k-tc.kappa) < 1e-12 || math.IsNaN(k) && math.IsNaN(tc.kappa)) {
				t.Errorf("Kappa = %v, %d; want %v, %d", k, n, tc.kappa, tc.n)
			}
		})
	}
}

// TestKappaMatchesSklearn compares Kappa with scikit-learn's
// cohen_kappa_score on random label pairs, in the first of the test
// venvs that has scikit-learn (LACUNA_TEST_PYTHON, LACUNA_EMBED_PYTHON,
// LACUNA_TORCH_PYTHON; the sentence-transformers venv has it). Skipped
// when none has it: TestKappa's worked examples still check the formula.
func TestKappaMatchesSklearn(t *testing.T) {
	classes := []string{"OK", "WrongParam", "WrongLogic", "WrongImport"}
	var cases [][2][]string
	seed := uint64(7)
	next := func() uint64 { seed = seed*6364136223846793005 + 1442695040888963407; return seed >> 33 }
	for c := range 20 {
		n := 5 + c*7
		a, b := make([]string, n), make([]string, n)
		for i := range n {
			a[i] = classes[next()%uint64(len(classes))]
			if next()%3 == 0 {
				b[i] = classes[next()%uint64(len(classes))]
			} else {
				b[i] = a[i]
			}
		}
		cases = append(cases, [2][]string{a, b})
	}
	in, _ := json.Marshal(cases)
	script := `import json, sys
from sklearn.metrics import cohen_kappa_score
print(json.dumps([cohen_kappa_score(a, b) for a, b in json.load(sys.stdin)]))`
	var out []byte
	for _, v := range []string{"LACUNA_TEST_PYTHON", "LACUNA_EMBED_PYTHON", "LACUNA_TORCH_PYTHON"} {
		python := os.Getenv(v)
		if python == "" {
			continue
		}
		cmd := exec.Command(python, "-c", script)
		cmd.Stdin = strings.NewReader(string(in))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		o, err := cmd.Output()
		if err != nil && strings.Contains(stderr.String(), "No module named 'sklearn'") {
			continue
		}
		if err != nil {
			t.Fatalf("%s: cohen_kappa_score: %v\n%s", v, err, stderr.String())
		}
		out = o
		break
	}
	if out == nil {
		t.Skip("no test venv with scikit-learn (LACUNA_TEST_PYTHON, LACUNA_EMBED_PYTHON, LACUNA_TORCH_PYTHON)")
	}
	var want []float64
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("sklearn output %q: %v", out, err)
	}
	for i, c := range cases {
		got, n := annotations.Kappa(c[0], c[1])
		if n != len(c[0]) || math.Abs(got-want[i]) > 1e-12 {
			t.Errorf("case %d: Kappa = %v (n %d), sklearn %v", i, got, n, want[i])
		}
	}
}
