package pyharness

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// InterpreterMounts are the host paths a sandbox must mount read-only for
// python to run there: for a virtual environment (DIR/bin/python beside
// DIR/pyvenv.cfg, as runners/pyenv makes them) the environment and its
// base interpreter's prefix (pyvenv.cfg's home, one level up), otherwise
// the interpreter's own prefix. Paths the sandbox always mounts (/usr,
// /bin, /lib...) are left out. Config.ReadOnly takes the result; the
// sandbox refuses paths under /tmp and /work, which it keeps for itself.
func InterpreterMounts(python string) ([]string, error) {
	abs, err := filepath.Abs(python)
	if err != nil {
		return nil, fmt.Errorf("pyharness: %w", err)
	}
	var out []string
	add := func(p string) {
		p = filepath.Clean(p)
		for _, sys := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
			if p == sys || strings.HasPrefix(p, sys+"/") {
				return
			}
		}
		for _, q := range out {
			if q == p {
				return
			}
		}
		out = append(out, p)
	}
	env := filepath.Dir(filepath.Dir(abs))
	if f, err := os.Open(filepath.Join(env, "pyvenv.cfg")); err == nil {
		defer f.Close()
		add(env)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), "=")
			if ok && strings.TrimSpace(k) == "home" {
				home, err := filepath.EvalSymlinks(strings.TrimSpace(v))
				if err != nil {
					return nil, fmt.Errorf("pyharness: %s: home: %w", env, err)
				}
				add(filepath.Dir(home))
			}
		}
		return out, sc.Err()
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("pyharness: %w", err)
	}
	add(filepath.Dir(filepath.Dir(real)))
	return out, nil
}
