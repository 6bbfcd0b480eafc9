package pypitest_test

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/pypi/pypitest"
)

// python is the interpreter pip runs under: LACUNA_TEST_PYTHON (the venv
// `make test` builds) or python3 on PATH. A missing one, or one without
// pip, skips the test locally and fails it under CI=true.
func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("LACUNA_TEST_PYTHON")
	if py == "" {
		py = "python3"
	}
	out, err := exec.Command(py, "-m", "pip", "--version").CombinedOutput()
	if err != nil {
		msg := fmt.Sprintf("%s with pip is needed: %v %s", py, err, out)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return py
}

// pipDownload runs pip download from the index alone: no pip
// configuration or PIP_* variable of the machine (a find-links folder, a
// mirror) takes part.
func pipDownload(t *testing.T, py, index, req, dir string, args ...string) {
	t.Helper()
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "PIP_") {
			env = append(env, kv)
		}
	}
	env = append(env, "PIP_CONFIG_FILE="+os.DevNull, "PIP_NO_INPUT=1")
	cmd := exec.Command(py, append([]string{"-m", "pip", "download", "--index-url", index, "--no-deps", "--no-cache-dir",
		"--disable-pip-version-check", "-d", dir, req}, args...)...)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip download %s: %v\n%s", req, err, out)
	}
}

// TestPipDownloadsFromTheFixtureIndex: real pip resolves a pinned version
// through the fixture's PEP 691 page, fetches the wheel and checks its
// hash; the file it saves is the wheel the index built.
func TestPipDownloadsFromTheFixtureIndex(t *testing.T) {
	py := python(t)
	ix := pypitest.NewIndex()
	if err := ix.Publish(pypitest.DemoProject, pypitest.Demo(nil)...); err != nil {
		t.Fatal(err)
	}
	url := pypitest.Serve(t, ix)
	for _, v := range []string{"1.2.0", "1.3.0"} {
		dir := t.TempDir()
		pipDownload(t, py, url, pypitest.DemoProject+"=="+v, dir, "--only-binary", ":all:")
		want, _ := ix.Wheel(pypitest.DemoProject, v)
		got, err := os.ReadFile(filepath.Join(dir, want.Filename))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Data) {
			t.Errorf("%s: pip saved other bytes than the index served", v)
		}
	}
}

// TestPipSkipsYankedAndPrereleases: unpinned, pip picks 1.3.0; with the
// newest as the ceiling (<1.3) it skips yanked 1.2.1 and takes 1.2.0.
func TestPipSkipsYankedAndPrereleases(t *testing.T) {
	py := python(t)
	ix := pypitest.NewIndex()
	if err := ix.Publish(pypitest.DemoProject, pypitest.Demo(nil)...); err != nil {
		t.Fatal(err)
	}
	url := pypitest.Serve(t, ix)
	for spec, want := range map[string]string{"": "1.3.0", "<1.3": "1.2.0", "<1.2": "1.1.0"} {
		dir := t.TempDir()
		pipDownload(t, py, url, pypitest.DemoProject+spec, dir)
		w, _ := ix.Wheel(pypitest.DemoProject, want)
		if _, err := os.Stat(filepath.Join(dir, w.Filename)); err != nil {
			entries, _ := os.ReadDir(dir)
			t.Errorf("%q: want %s, pip saved %v", spec, w.Filename, entries)
		}
	}
}

// TestWheelRecordHashesItsFiles: RECORD lists every file with the sha256
// of its bytes, and the same input builds the same wheel.
func TestWheelRecordHashesItsFiles(t *testing.T) {
	files := map[string]string{"pkg/__init__.py": "from .mod import f\n", "pkg/mod.py": "def f():\n    return 1\n"}
	r := pypitest.Release{Version: "0.1.0", Files: files, RequiresPython: ">=3.8", Metadata: []string{"License-Expression: Apache-2.0"}}
	w, err := pypitest.BuildWheel("My.Pkg", r)
	if err != nil {
		t.Fatal(err)
	}
	if w.Filename != "my_pkg-0.1.0-py3-none-any.whl" {
		t.Errorf("file name %s", w.Filename)
	}
	again, _ := pypitest.BuildWheel("My.Pkg", r)
	if !bytes.Equal(again.Data, w.Data) {
		t.Error("the same input built different bytes")
	}
	zr, err := zip.NewReader(bytes.NewReader(w.Data), int64(len(w.Data)))
	if err != nil {
		t.Fatal(err)
	}
	contents := map[string][]byte{}
	for _, f := range zr.File {
		rc, _ := f.Open()
		contents[f.Name], _ = io.ReadAll(rc)
		rc.Close()
	}
	record := string(contents["my_pkg-0.1.0.dist-info/RECORD"])
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(record), "\n") {
		parts := strings.Split(line, ",")
		if parts[0] == "my_pkg-0.1.0.dist-info/RECORD" {
			continue
		}
		listed++
		b, ok := contents[parts[0]]
		sum := sha256.Sum256(b)
		if want := "sha256=" + base64.RawURLEncoding.EncodeToString(sum[:]); !ok || len(parts) != 3 || parts[1] != want || parts[2] != strconv.Itoa(len(b)) {
			t.Errorf("RECORD line %q, want hash %s", line, want)
		}
	}
	if listed != len(contents)-1 {
		t.Errorf("RECORD lists %d of %d files", listed, len(contents)-1)
	}
	if meta := string(contents["my_pkg-0.1.0.dist-info/METADATA"]); !strings.Contains(meta, "\nRequires-Python: >=3.8\n") || !strings.Contains(meta, "\nLicense-Expression: Apache-2.0\n") || meta != string(w.Metadata) {
		t.Errorf("METADATA %q", meta)
	}
}

// TestIndexServesFilesWithTheirHashes: each file URL on the page answers
// bytes whose sha256 is the page's.
func TestIndexServesFilesWithTheirHashes(t *testing.T) {
	ix := pypitest.Published(t, pypitest.DemoProject, pypitest.Demo(nil)...)
	url := pypitest.Serve(t, ix)
	w, _ := ix.Wheel(pypitest.DemoProject, "1.1.0")
	resp, err := http.Get(strings.TrimSuffix(url, "simple/") + "files/" + w.Filename)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sum := sha256.Sum256(b)
	if hex.EncodeToString(sum[:]) != w.SHA256 {
		t.Error("served bytes do not match the hash")
	}
}

func TestFilesFromDirReadsATree(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "pkg", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "pkg", "__init__.py"), []byte("x = 1\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "pkg", "sub", "m.py"), []byte("y = 2\n"), 0o644)
	files, err := pypitest.FilesFromDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || files["pkg/__init__.py"] != "x = 1\n" || files["pkg/sub/m.py"] != "y = 2\n" {
		t.Errorf("files %v", files)
	}
	if _, err := pypitest.FilesFromDir(filepath.Join(dir, "absent")); err == nil {
		t.Error("a missing folder read without error")
	}
}
