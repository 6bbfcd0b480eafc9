package pyapi

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// pthVenv makes a venv of python whose site-packages holds a .pth file
// that, run by site at interpreter start, writes the returned marker file:
// what a hostile or careless wheel can ship. It returns the venv's python.
func pthVenv(t *testing.T, python string) (venvPython, marker string) {
	t.Helper()
	dir := t.TempDir()
	venv := filepath.Join(dir, "venv")
	if out, err := exec.Command(python, "-m", "venv", "--without-pip", venv).CombinedOutput(); err != nil {
		t.Skipf("python -m venv: %v: %s", err, out)
	}
	site, err := filepath.Glob(filepath.Join(venv, "lib", "python3*", "site-packages"))
	if err != nil || len(site) != 1 {
		t.Fatalf("site-packages of %s: %v %v", venv, site, err)
	}
	marker = filepath.Join(dir, "pth-ran")
	pth := "import os; open(" + pyQuote(marker) + ", 'w').close()\n"
	if err := os.WriteFile(filepath.Join(site[0], "evil.pth"), []byte(pth), 0o644); err != nil {
		t.Fatal(err)
	}
	venvPython = filepath.Join(venv, "bin", "python")
	// The venv does run .pth files when site is on: the check below means
	// something only if this one trips it.
	if out, err := exec.Command(venvPython, "-I", "-c", "pass").CombinedOutput(); err != nil {
		t.Fatalf("venv python: %v: %s", err, out)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the .pth file did not run with site on (%v): the test proves nothing", err)
	}
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	return venvPython, marker
}

func pyQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// TestParsingHelpersRunNoCodeOfTheEnvironment: the helpers that only parse
// (M_code, doctest parsing, doc-file scanning) run outside the sandbox
// with the environment's interpreter, so they must not start site: a .pth
// file in the environment's site-packages would run on the host.
func TestParsingHelpersRunNoCodeOfTheEnvironment(t *testing.T) {
	py, marker := pthVenv(t, python(t))
	dir := t.TempDir()
	writeTree(t, dir, map[string]string{
		"pkg/__init__.py": `
def f(x):
    """Double.

    >>> f(2)
    4
    """
    return 2 * x
`,
		"pkg/usage.md": "```\n>>> 1 + 1\n2\n```\n",
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, _, err := SourceCode(ctx, py, filepath.Join(dir, "pkg", "__init__.py"), []string{"f"}, 1<<20); err != nil {
		t.Fatal(err)
	}
	api := API{ID: "pkg:f", Path: "pkg.f", Kind: "function", Doc: "Double.\n\n>>> f(2)\n4\n"}
	if _, _, err := Doctests(ctx, py, []API{api}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := DocFileExamples(ctx, py, filepath.Join(dir, "pkg")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("a parsing helper started site: the environment's .pth file ran on the host")
	}
}
