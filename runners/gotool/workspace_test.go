package gotool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/sandbox"
)

// TestWorkspaceIsRemovedUnlessKept: a workspace lives under the
// toolchain's tmp with its wrapper inside; Close removes it, except with
// KeepWork.
func TestWorkspaceIsRemovedUnlessKept(t *testing.T) {
	sb, err := sandbox.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		keep bool
	}{{"removed", false}, {"kept", true}} {
		t.Run(c.name, func(t *testing.T) {
			cache := t.TempDir()
			tc, err := NewToolchain(cache, Options{KeepWork: c.keep})
			if err != nil {
				t.Skip(err) // no go command
			}
			ws, err := tc.NewWorkspace(sb, "bundle", sandbox.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if filepath.Dir(ws.Dir) != filepath.Join(cache, "tmp") || !strings.HasPrefix(filepath.Base(ws.Dir), "bundle-") {
				t.Errorf("work directory %s, want under %s/tmp", ws.Dir, cache)
			}
			if st, err := os.Stat(ws.Exec); err != nil || st.Mode()&0o111 == 0 || !strings.HasPrefix(ws.Exec, ws.Dir) {
				t.Errorf("wrapper %s: %v", ws.Exec, err)
			}
			if o := ws.BatchOptions(TestOptions{Timeout: 7}); o.Exec != ws.Exec || o.WorkDir != ws.Dir || o.Timeout != 7 {
				t.Errorf("batch options %+v", o)
			}
			if err := ws.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(ws.Dir); (err == nil) != c.keep {
				t.Errorf("after Close: %v, keep %v", err, c.keep)
			}
		})
	}
}
