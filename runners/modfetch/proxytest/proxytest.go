// Package proxytest writes module proxies on disk for tests, to be served
// as GOPROXY=file://DIR (or over HTTP with http.FileServer), and holds the
// offline test module example.com/shapes that the Go layers' tests share.
package proxytest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// Write adds module mod to the proxy at root: each version's .info with the
// given release date (YYYY-MM-DD, at noon UTC) and .mod, and the list.
func Write(root, mod string, versions map[string]string, gomod string) error {
	esc, err := module.EscapePath(mod)
	if err != nil {
		return err
	}
	dir := filepath.Join(root, esc, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	var list []string
	for v, date := range versions {
		list = append(list, v)
		ev, err := module.EscapeVersion(v)
		if err != nil {
			return err
		}
		info := fmt.Sprintf(`{"Version":%q,"Time":"%sT12:00:00Z"}`, v, date)
		if err := os.WriteFile(filepath.Join(dir, ev+".info"), []byte(info), 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, ev+".mod"), []byte(gomod), 0o644); err != nil {
			return err
		}
	}
	sort.Strings(list)
	return os.WriteFile(filepath.Join(dir, "list"), []byte(strings.Join(list, "\n")+"\n"), 0o644)
}

// WriteZip adds the zip of mod@version to the proxy at root, built from
// files (name → content; go.mod included), and returns the zip's path.
func WriteZip(root, mod, version string, files map[string]string) (string, error) {
	src, err := os.MkdirTemp("", "proxytest-src-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(src)
	for name, content := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	esc, err := module.EscapePath(mod)
	if err != nil {
		return "", err
	}
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return "", err
	}
	zp := filepath.Join(root, esc, "@v", ev+".zip")
	if err := os.MkdirAll(filepath.Dir(zp), 0o755); err != nil {
		return "", err
	}
	f, err := os.Create(zp)
	if err != nil {
		return "", err
	}
	defer f.Close()
	return zp, modzip.CreateFromDir(f, module.Version{Path: mod, Version: version}, src)
}

// WriteTrees adds module mod to the proxy at root from source trees on
// disk: trees/VERSION/ holds each version's files (go.mod included), and
// dates maps each version to its release date (YYYY-MM-DD).
func WriteTrees(root, mod, trees string, dates map[string]string) error {
	gomod := ""
	for v := range dates {
		files := map[string]string{}
		dir := filepath.Join(trees, v)
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, p)
			files[filepath.ToSlash(rel)] = string(b)
			return nil
		})
		if err != nil {
			return err
		}
		if _, err := WriteZip(root, mod, v, files); err != nil {
			return err
		}
		gomod = files["go.mod"]
	}
	return Write(root, mod, dates, gomod)
}

// ShapesModule is the test module under testdata/shapes: v1.0.0 and
// v1.1.0, released on the dates in ShapesDates.
const ShapesModule = "example.com/shapes"

// ShapesDates are the release dates WriteShapes gives the fixture's
// versions: a cutoff between them makes v1.1.0 the new version.
var ShapesDates = map[string]string{"v1.0.0": "2024-01-10", "v1.1.0": "2024-09-01"}

// Shapes is the absolute path of the fixture's source tree of version
// ("v1.0.0" or "v1.1.0"). It is found beside this file's source, so it is
// for tests run from a checkout.
func Shapes(version string) string {
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "testdata", "shapes", version)
}

// WriteShapes adds the fixture module to the proxy at root.
func WriteShapes(root string) error {
	return WriteTrees(root, ShapesModule, filepath.Dir(Shapes("v1.0.0")), ShapesDates)
}
