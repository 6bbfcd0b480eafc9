package bundle

import (
	"context"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/pyenv"
	"github.com/lacuna-dev/lacuna/runners/pyapi"
)

// TestExamplesNeverRunOutsideTheSandbox: where the sandbox cannot mount
// the environments (a store under /tmp; LACUNA_PY_UNSANDBOXED=1 let
// surface_diff run), a library with examples fails its bundle, saying why
// and what to change, instead of storing bundles without E; a library
// without examples has nothing to run.
func TestExamplesNeverRunOutsideTheSandbox(t *testing.T) {
	p := &pyenv.Python{Unsandboxed: "the store /tmp/s is under /tmp, which the sandbox replaces"}
	_, err := runExamples(context.Background(), nil, &config{}, p, nil, []pyapi.Example{{}, {}})
	if err == nil || !strings.Contains(err.Error(), "2 examples can only run in the sandbox") || !strings.Contains(err.Error(), "/tmp/s is under /tmp") ||
		!strings.Contains(err.Error(), "LACUNA_STORE under /var/tmp") {
		t.Errorf("unsandboxed examples: %v", err)
	}
	if v, err := runExamples(context.Background(), nil, &config{}, p, nil, nil); err != nil || len(v) != 0 {
		t.Errorf("no examples: %v, %v", v, err)
	}
}
