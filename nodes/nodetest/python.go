package nodetest

import (
	"os"
	"os/exec"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// NeedPython skips the test without python3, or fails it under CI=true.
func NeedPython(tb testing.TB) {
	tb.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			tb.Fatalf("python3 not found: %v", err)
		}
		tb.Skipf("python3 not found: %v (the test fails instead under CI=true)", err)
	}
}

// StoreDir is a directory for a Python test's store outside /tmp
// (bubblewrap mounts the environments at their paths, and /tmp is the
// sandbox's own) that the sandbox's uid can reach: /var/tmp. It is removed
// when the test ends.
func StoreDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("/var/tmp", "lacuna-test-")
	if err == nil {
		err = os.Chmod(dir, 0o755) // MkdirTemp's 0700 would keep uid 65534 out
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// UseIndex points the run's installers at index url (pypi.org when "").
func UseIndex(tb testing.TB, url string) {
	tb.Helper()
	tb.Setenv("PIP_INDEX_URL", url)
	tb.Setenv("UV_INDEX_URL", "")
	tb.Setenv("UV_DEFAULT_INDEX", "")
}

// ReachablePython makes the run's interpreter /usr/bin/python3 when the
// test runs as root and it exists: the sandbox then runs library code as
// uid 65534, which cannot reach an interpreter under a private /root (a
// pyenv), and nodes/pyenv would run it unsandboxed.
func ReachablePython(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil && os.Geteuid() == 0 {
		tb.Setenv("LACUNA_PYTHON", "/usr/bin/python3")
	}
}

// OfflinePython serves ix on loopback as the run's index and installs
// with the interpreter's pip (the fixture index holds no uv), from an
// interpreter the sandbox can reach (ReachablePython). It skips the test
// without python3 (NeedPython).
func OfflinePython(tb testing.TB, ix *pypitest.Index) {
	tb.Helper()
	NeedPython(tb)
	ReachablePython(tb)
	UseIndex(tb, pypitest.Serve(tb, ix))
	tb.Setenv("LACUNA_PY_INSTALLER", "pip")
}
