package nodes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// LookPath finds a program as the shell does with the PATH list pathList
// (a run's, from Resolve.Getenv: nodes read no other environment); a name
// with a slash is taken relative to dir. Relative PATH entries are skipped:
// the current directory is never searched.
func LookPath(program, dir, pathList string) (string, error) {
	isExec := func(p string) bool {
		st, err := os.Stat(p)
		return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
	}
	if strings.Contains(program, "/") {
		p := program
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if !isExec(p) {
			return "", fmt.Errorf("%s is not an executable file", p)
		}
		return p, nil
	}
	for _, d := range filepath.SplitList(pathList) {
		if d == "" || !filepath.IsAbs(d) {
			continue
		}
		if p := filepath.Join(d, program); isExec(p) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s is not on the run's PATH (%s)", program, pathList)
}

// digests caches ContentDigest by path, size and modification time: a plan
// resolves every node that uses a program or a model, and weights are
// large. Safe for concurrent use.
var digests sync.Map // digestKey → string

type digestKey struct {
	path  string
	size  int64
	mtime int64
}

// ContentDigest is "sha256:HEX" of a file's bytes, or of a directory's
// canonical tar (artifacts.PackDir: the same files give the same digest
// wherever they are): what a node pins of a program, a model's weights or
// an adapter it uses from outside the store.
func ContentDigest(p string) (string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return "", err
	}
	k := digestKey{p, st.Size(), st.ModTime().UnixNano()}
	if d, ok := digests.Load(k); ok {
		return d.(string), nil
	}
	h := sha256.New()
	if st.IsDir() {
		err = artifacts.PackDir(h, p)
	} else {
		var f *os.File
		if f, err = os.Open(p); err == nil {
			_, err = io.Copy(h, f)
			f.Close()
		}
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", p, err)
	}
	d := "sha256:" + hex.EncodeToString(h.Sum(nil))
	digests.Store(k, d)
	return d, nil
}
