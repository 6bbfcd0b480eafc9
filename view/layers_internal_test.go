package view

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

func TestLayersReadAVerdictLayerByLayer(t *testing.T) {
	tests := []struct {
		name      string
		ecosystem string
		row       map[string]any
		want      string // name=state, in order
	}{
		{"passed", "go", map[string]any{"passed": true, "failed_layers": []any{}},
			"build=passed span=passed channel=passed runtime=passed spy=passed structural=passed comparative=passed behavioural=passed attribution=passed perturbed=passed"},
		{"does not compile", "go", map[string]any{"compile_error": "x.go:3: undefined: shapes.Nope", "failed_layers": []any{}},
			"build=failed span=not reached channel=not reached runtime=not reached spy=not reached structural=not reached comparative=not reached behavioural=not reached attribution=not reached perturbed=not reached"},
		{"crashes", "go", map[string]any{"runtime_error": "panic: boom", "failed_layers": []any{"runtime"}},
			"build=passed span=passed channel=passed runtime=failed spy=not reached structural=not reached comparative=not reached behavioural=not reached attribution=not reached perturbed=not reached"},
		{"check layers are all reported", "go", map[string]any{"failed_layers": []any{"comparative", "perturbed"}, "failures": "comparative: printed \"1\", want \"2\"\nperturbed: same output"},
			"build=passed span=passed channel=passed runtime=passed spy=passed structural=passed comparative=failed behavioural=passed attribution=passed perturbed=failed"},
		{"an unknown layer is kept", "go", map[string]any{"failed_layers": []any{"harness"}, "failures": "the task has no expectation"},
			"build=passed span=passed channel=passed runtime=passed spy=passed structural=passed comparative=passed behavioural=passed attribution=passed perturbed=passed harness=failed"},
		{"python stops at its first failure", "python", map[string]any{"failed_layers": []any{"structural"}, "failures": "the target was not called"},
			"integrity=passed run=passed structural=failed comparative=not reached input=not reached substitution=not reached"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			for i, l := range layers(tc.ecosystem, tc.row) {
				if i > 0 {
					got += " "
				}
				got += l.Name + "=" + l.State
			}
			if got != tc.want {
				t.Errorf("layers\n got %s\nwant %s", got, tc.want)
			}
		})
	}
	ls := layers("go", map[string]any{"failed_layers": []any{"runtime"}, "failures": "panic: boom\n\ngoroutine 1 [running]:\nmain.main()", "runtime_error": "panic: boom\n\ngoroutine 1 [running]:\nmain.main()"})
	if ls[3].Name != "runtime" || len(ls[3].Messages) != 1 || ls[3].Messages[0] != "panic: boom\n\ngoroutine 1 [running]:\nmain.main()" {
		t.Errorf("a stack trace is one message, given once: %q", ls[3].Messages)
	}
	ls = layers("go", map[string]any{"failed_layers": []any{"comparative"}, "failures": "comparative: printed \"1\", want \"2\""})
	for _, l := range ls {
		if l.Name == "comparative" && fmt.Sprint(l.Messages) != `[printed "1", want "2"]` {
			t.Errorf("comparative messages %q", l.Messages)
		}
	}
}

func TestBackStaysOnThisSite(t *testing.T) {
	for in, want := range map[string]string{
		"/sample?x=1": "/sample?x=1", "": "/", "//evil.example/": "/", "http://evil.example/": "/", "javascript:alert(1)": "/", "relative": "/", "/\\evil": "/%5Cevil",
	} {
		if got := back(in); got != want {
			t.Errorf("back(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRunEventsKeepToThePipeline: run logs of another pipeline sharing
// the store are not shown, even for a node of the same address; logs
// without a start event naming a pipeline (older lacunas) are.
func TestRunEventsKeepToThePipeline(t *testing.T) {
	st, err := artifacts.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	logs := map[string]string{
		"20260101T000000Z-1.jsonl": `{"event":"start","total":1,"message":"/work/p.hcl"}` + "\n" + `{"event":"done","node":"node.import.a","rows":1}` + "\n",
		"20260101T000001Z-2.jsonl": `{"event":"start","total":1,"message":"/work/other.hcl"}` + "\n" + `{"event":"done","node":"node.import.a","rows":2}` + "\n",
		"20260101T000002Z-3.jsonl": `{"event":"done","node":"node.import.a","rows":3}` + "\n",
	}
	for name, body := range logs {
		if err := os.WriteFile(filepath.Join(st.Root(), "runs", name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := &Server{cfg: Config{Store: st, Pipeline: "/work/p.hcl"}}
	var rows []int64
	for _, e := range s.runEvents("node.import.a", 10) {
		rows = append(rows, e.Rows)
	}
	if !slices.Equal(rows, []int64{3, 1}) {
		t.Errorf("events with rows %v, want [3 1]: this pipeline's run and the one that names none, newest first", rows)
	}
}
