package pyapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/internal/tailbuf"
)

//go:embed code.py
var codeHelper string

// CodeHelperSource is the embedded helper SourceCode runs; callers that
// cache M_code put its digest in their key.
func CodeHelperSource() string { return codeHelper }

// Code is an API's implementation as a bundle quotes it (M_code): the
// same shape as goapi.Code.
type Code struct {
	// Source is the declaration, every docstring in it removed (a body
	// left empty gets "pass"; comments and formatting stay), followed by
	// the helpers inlined, each after a blank line, in source order.
	Source    string
	Helpers   []string // the helpers inlined ("_norm", "Point._check"), in source order
	Omitted   []string // helpers left out to stay within the bound
	Truncated bool
	// Unparsed is true when a docstring shared a line with other code in
	// one of the quoted declarations: that one was printed by ast.unparse,
	// without its comments.
	Unparsed bool
}

type codeDecl struct {
	Line     int      `json:"line"`
	Source   string   `json:"source"`
	Uses     []string `json:"uses"`
	Unparsed bool     `json:"unparsed"`
}

// SourceCode returns M_code of the definitions qualnames ("area",
// "Point.norm", "Point") of the Python source file file, read from its
// syntax tree by the embedded helper (code.py) run by python: the file is
// parsed, never imported or run. The helpers are the rule of goapi.Code
// carried over to Python: the module-level functions, classes and
// assignments of the same file that are not exported (a name starting with
// "_", or left out of a literal __all__) the declaration refers to by
// name, where no local binding shadows it, and the private methods of the
// enclosing class it calls as self._m or cls._m; transitively, each once,
// a recursive call adding nothing. A name bound by an import is never a
// helper, even one with the same name as a function of another module.
// Helpers are taken in the order first used until the source reaches
// maxBytes (one that would cross the bound is named in Omitted, and what
// only it uses is not followed), then printed in source order. The result
// maps each qualname to its Code; one that names no def or class of the
// file is an error in errs. Safe for concurrent use; each call is its own
// process.
func SourceCode(ctx context.Context, python, file string, qualnames []string, maxBytes int) (codes map[string]*Code, errs map[string]error, err error) {
	args := append([]string{"-I", "-S", "-B", "-X", "utf8", "-c", codeHelper, file}, qualnames...)
	out, err := runHelper(ctx, python, args)
	if err != nil {
		return nil, nil, fmt.Errorf("m_code %s: %w", file, err)
	}
	var res struct {
		Error string                     `json:"error"`
		Roots map[string]json.RawMessage `json:"roots"`
		Decls map[string]codeDecl        `json:"decls"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return nil, nil, fmt.Errorf("m_code %s: helper output: %w", file, err)
	}
	if res.Error != "" {
		return nil, nil, fmt.Errorf("m_code %s: %s", file, res.Error)
	}
	codes, errs = map[string]*Code{}, map[string]error{}
	for _, q := range qualnames {
		var key string
		if json.Unmarshal(res.Roots[q], &key) != nil {
			var e struct{ Error string }
			json.Unmarshal(res.Roots[q], &e)
			errs[q] = fmt.Errorf("m_code %s: %s", file, e.Error)
			continue
		}
		codes[q] = assemble(key, res.Decls, maxBytes)
	}
	return codes, errs, nil
}

// assemble follows the helpers of root breadth-first, in the order first
// used, within maxBytes, and prints them in source order.
func assemble(root string, decls map[string]codeDecl, maxBytes int) *Code {
	c := &Code{}
	d := decls[root]
	size := len(d.Source)
	c.Unparsed = d.Unparsed
	seen := map[string]bool{root: true}
	queue := append([]string(nil), d.Uses...)
	var kept []string
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		hd, ok := decls[h]
		if !ok {
			continue
		}
		if size+2+len(hd.Source) > maxBytes {
			c.Omitted = append(c.Omitted, h)
			c.Truncated = true
			continue
		}
		size += 2 + len(hd.Source)
		kept = append(kept, h)
		c.Unparsed = c.Unparsed || hd.Unparsed
		queue = append(queue, hd.Uses...)
	}
	sort.SliceStable(kept, func(i, j int) bool { return decls[kept[i]].Line < decls[kept[j]].Line })
	var b strings.Builder
	b.WriteString(d.Source)
	for _, h := range kept {
		b.WriteString("\n\n")
		b.WriteString(decls[h].Source)
	}
	c.Helpers = kept
	if b.Len() > maxBytes { // the declaration alone is over the bound
		c.Truncated = true
		c.Source = b.String()[:maxBytes] + "\n# ... truncated"
	} else {
		c.Source = b.String()
	}
	return c
}

// runHelper runs python with args in its own process group with a minimal
// environment, and returns its standard output; ctx ends the group. The
// error ends with the helper's stderr.
func runHelper(ctx context.Context, python string, args []string) ([]byte, error) {
	return runHelperInput(ctx, python, args, nil)
}

func runHelperInput(ctx context.Context, python string, args []string, stdin []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, python, args...)
	cmd.Dir = os.TempDir()
	cmd.Env = []string{"LC_ALL=C.UTF-8", "HOME=" + os.TempDir(), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout bytes.Buffer
	stderr := tailbuf.New(4 << 10)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// APICode returns M_code of each API of apis, by ID, reading the files
// the surface located (API.File, relative to one of paths, the sys.path
// entries the surface was listed with): one helper process per file. An
// API without retrievable source (NoSource, no file, a file none of paths
// holds, a qualified name with <locals>) has an error in errs instead.
func APICode(ctx context.Context, python string, paths []string, apis []API, maxBytes int) (codes map[string]*Code, errs map[string]error, err error) {
	codes, errs = map[string]*Code{}, map[string]error{}
	byFile := map[string][]API{}
	var files []string
	for _, a := range apis {
		if a.NoSource || a.File == "" || strings.Contains(a.QualName(), "<locals>") {
			errs[a.ID] = fmt.Errorf("m_code %s: no retrievable source", a.ID)
			continue
		}
		file := ""
		for _, p := range paths {
			f := filepath.Join(p, filepath.FromSlash(a.File))
			if filepath.IsAbs(a.File) {
				f = a.File
			}
			if _, err := os.Stat(f); err == nil {
				file = f
				break
			}
		}
		if file == "" {
			errs[a.ID] = fmt.Errorf("m_code %s: %s is under none of the paths", a.ID, a.File)
			continue
		}
		if byFile[file] == nil {
			files = append(files, file)
		}
		byFile[file] = append(byFile[file], a)
	}
	for _, f := range files {
		var quals []string
		for _, a := range byFile[f] {
			quals = append(quals, a.QualName())
		}
		cs, es, err := SourceCode(ctx, python, f, quals, maxBytes)
		if err != nil {
			for _, a := range byFile[f] {
				errs[a.ID] = err
			}
			if ctx.Err() != nil {
				return nil, nil, err
			}
			continue
		}
		for _, a := range byFile[f] {
			if c, ok := cs[a.QualName()]; ok {
				codes[a.ID] = c
			} else {
				errs[a.ID] = es[a.QualName()]
			}
		}
	}
	return codes, errs, nil
}
