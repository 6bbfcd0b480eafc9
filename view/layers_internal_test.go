package view

import (
	"fmt"
	"testing"
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
