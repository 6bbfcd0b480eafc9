package parametric

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// scripts is the Python package and its pinned requirements.
//
//go:embed lacuna_parametric/*.py requirements.txt
var scripts embed.FS

// Package is the Python package's import name.
const Package = "lacuna_parametric"

var digestOnce = sync.OnceValue(func() string {
	h := sha256.New()
	var names []string
	_ = fs.WalkDir(scripts, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	for _, n := range names {
		b, _ := scripts.ReadFile(n)
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
})

// Digest names the scripts' content: the SHA-256 of every embedded file
// (name, length, bytes, in name order). It enters the key of every node
// that runs them.
func Digest() string { return digestOnce() }

// Requirements is requirements.txt: the pinned packages the scripts need.
func Requirements() string {
	b, _ := scripts.ReadFile("requirements.txt")
	return string(b)
}

// Materialize writes the scripts under dir/<digest>/ (once: a directory
// that exists is reused, written to a temporary name and renamed into
// place, so concurrent callers are safe) and returns the directory to put
// on PYTHONPATH.
func Materialize(dir string) (string, error) {
	d := Digest()
	root := filepath.Join(dir, strings.TrimPrefix(d, "sha256:")[:16])
	if _, err := os.Stat(filepath.Join(root, Package, "__init__.py")); err == nil {
		return root, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(dir, ".scripts-")
	if err != nil {
		return "", err
	}
	err = fs.WalkDir(scripts, ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			return os.MkdirAll(filepath.Join(tmp, p), 0o755)
		}
		b, err := scripts.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(tmp, p), b, 0o644)
	})
	if err == nil {
		err = os.Rename(tmp, root)
		if err != nil {
			if _, serr := os.Stat(filepath.Join(root, Package, "__init__.py")); serr == nil {
				err = nil // another caller won
			}
		}
	}
	if err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("writing the parametric scripts: %w", err)
	}
	return root, nil
}

// Versions asks python which versions of the pinned packages it has,
// as "name==version" lines in requirements.txt's order ("name==missing"
// when absent). It runs python with no site customisation beyond its own.
func Versions(ctx context.Context, python string) ([]string, error) {
	var names []string
	for _, l := range strings.Split(Requirements(), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, _, _ := strings.Cut(l, "==")
		names = append(names, name)
	}
	prog := `import sys, importlib.metadata as m
for n in sys.argv[1:]:
    try: print(n + "==" + m.version(n))
    except m.PackageNotFoundError: print(n + "==missing")`
	cmd := exec.CommandContext(ctx, python, append([]string{"-c", prog}, names...)...)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s: asking for package versions: %w", python, err)
	}
	return strings.Fields(string(out)), nil
}

// Check compares Versions with requirements.txt and returns an error
// naming every package that is missing or at another version.
func Check(ctx context.Context, python string) ([]string, error) {
	have, err := Versions(ctx, python)
	if err != nil {
		return nil, err
	}
	want := map[string]string{}
	for _, l := range strings.Split(Requirements(), "\n") {
		if n, v, ok := strings.Cut(strings.TrimSpace(l), "=="); ok && !strings.HasPrefix(l, "#") {
			want[n] = v
		}
	}
	var bad []string
	for _, h := range have {
		n, v, _ := strings.Cut(h, "==")
		if want[n] != v {
			bad = append(bad, fmt.Sprintf("%s %s (want %s)", n, v, want[n]))
		}
	}
	if len(bad) > 0 {
		return have, fmt.Errorf("%s lacks the parametric scripts' packages: %s; install runners/parametric/requirements.txt", python, strings.Join(bad, ", "))
	}
	return have, nil
}
