package pyapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/internal/tailbuf"
)

//go:embed surface.py
var helperSource string

// HelperSource is the embedded Python helper Surface runs. Its output
// depends on it, so callers that cache surfaces put its digest in their
// key.
func HelperSource() string { return helperSource }

// Param is one parameter of a signature.
type Param struct {
	Name string `json:"name"`
	// Kind: positional_only, positional_or_keyword, var_positional,
	// keyword_only or var_keyword.
	Kind string `json:"kind"`
	// Default is the default's source text (its repr, with memory
	// addresses removed, when there is no source); HasDefault says whether
	// there is one.
	Default    string `json:"default,omitempty"`
	HasDefault bool   `json:"has_default,omitempty"`
	Annotation string `json:"annotation,omitempty"` // as written in the source, or formatted
}

// API is one public function, class, method or property of a package,
// named by the object that defines it: every path it is reachable at (a
// re-export, an alias) is one API.
type API struct {
	// ID is the identity compared across versions: the defining module and
	// the object's __qualname__, "pkg._impl:Point.norm". Functions
	// re-exported or aliased under other names keep their identity.
	ID string `json:"id"`
	// Path is the canonical path: see canonical. A private or unlisted
	// path only when there is no public one.
	Path  string   `json:"-"`
	Paths []string `json:"paths"` // every path the object is exported at, sorted
	// UnlistedPaths are paths in modules that define __all__ and leave the
	// object out of it: reachable, but not exported.
	UnlistedPaths []string `json:"unlisted_paths"`
	// Kind: function, class, method, classmethod, staticmethod, property.
	Kind      string  `json:"kind"`
	Name      string  `json:"name"`
	Signature string  `json:"signature"` // "area(w: float, h: float = 1.0) -> float"
	Params    []Param `json:"params"`
	Returns   string  `json:"returns"`
	// SignatureError says why the signature could not be introspected.
	SignatureError string `json:"signature_error"`
	// Doc is the object's own docstring, cleaned (inspect.cleandoc).
	Doc string `json:"doc"`
	// InheritedDoc is what inspect.getdoc shows when the object has no
	// docstring of its own: the docstring of the same member of a base
	// class, or of the base class, DocFrom. StdlibDoc is true when DocFrom
	// is in the standard library or builtins (a dict subclass without docs).
	InheritedDoc string `json:"inherited_doc"`
	DocFrom      string `json:"doc_from"`
	StdlibDoc    bool   `json:"stdlib_doc"`
	// File is relative to the sys.path entry it was found under; Line is
	// the def or class line. NoSource is true when no Python source is
	// retrievable (extension modules, builtins, generated code).
	File     string `json:"file"`
	Line     int    `json:"line"`
	NoSource bool   `json:"no_source"`
	// Deprecated says why the object is deprecated, "" when it is not: a
	// __deprecated__ attribute (warnings.deprecated,
	// typing_extensions.deprecated), a @deprecated/@deprecate decorator, a
	// DeprecationWarning raised or warned in the body (in __init__ or
	// __new__ for a class), or ".. deprecated::" / "Deprecated:" in the
	// docstring.
	Deprecated string `json:"deprecated"`
	// Private: no path of the object is public (every exported path has a
	// component starting with "_", or it is only reachable at unlisted
	// paths).
	Private bool `json:"-"`
	// Static is true when the defining module failed to import and the API
	// was read from its syntax tree alone (no re-export paths, no
	// inherited docs, defaults and annotations as written).
	Static bool `json:"static"`
	// Error says why the object resisted introspection.
	Error string `json:"error"`
}

// Module returns the defining module, from the identity.
func (a API) Module() string { m, _, _ := strings.Cut(a.ID, ":"); return m }

// QualName returns the object's __qualname__, from the identity.
func (a API) QualName() string { _, q, _ := strings.Cut(a.ID, ":"); return q }

// Module is one module of the package and what became of it.
type Module struct {
	Name string `json:"module"`
	File string `json:"file"`
	// Error says why the module failed to import (its APIs then come from
	// its syntax tree, Static); Skipped why it was not imported (a test
	// module, __main__).
	Error   string `json:"error"`
	Skipped string `json:"skipped"`
	// AttributeErrors lists public names whose lookup raised.
	AttributeErrors []string `json:"-"`
}

// PackageSurface is the API surface of one installed package.
type PackageSurface struct {
	Package      string
	Python       string // the interpreter's version, "3.11.7"
	Distribution string // the distribution providing the package, when known
	Version      string
	Modules      []Module
	APIs         []API // sorted by ID
}

// ImportErrors returns the modules that failed to import.
func (s *PackageSurface) ImportErrors() []Module {
	var out []Module
	for _, m := range s.Modules {
		if m.Error != "" {
			out = append(out, m)
		}
	}
	return out
}

// Option configures Surface.
type Option func(*options)

type options struct {
	moduleTimeout time.Duration
	siblings      []string
}

// WithSiblings names the other top-level packages of pkg's distribution
// (attrs installs attr and attrs): an object defined in one of them that
// pkg exports is listed at pkg's paths too, as pkg's own objects are. An
// object of any other package pkg imports stays out.
func WithSiblings(pkgs ...string) Option {
	return func(o *options) { o.siblings = append(o.siblings, pkgs...) }
}

// WithModuleTimeout bounds the import of each module (default 30s); a
// module that takes longer is reported with an error and read from its
// syntax tree. It interrupts Python code only: a hang in native code is
// bounded by ctx.
func WithModuleTimeout(d time.Duration) Option {
	return func(o *options) { o.moduleTimeout = d }
}

// HelperArgs are the interpreter arguments that run the helper on package
// pkg with the directories paths put first on sys.path: isolated mode (-I:
// no PYTHON* variables, no user site, no current directory), no bytecode
// written (-B), UTF-8 mode. A caller that runs the interpreter itself (in
// a sandbox, with the environment mounted read-only) passes them after the
// interpreter and hands the standard output to ParseOutput.
func HelperArgs(paths []string, pkg string, opts ...Option) []string {
	o := options{moduleTimeout: 30 * time.Second}
	for _, f := range opts {
		f(&o)
	}
	args := []string{"-I", "-B", "-X", "utf8", "-c", helperSource}
	for _, p := range paths {
		args = append(args, "--path", p)
	}
	for _, p := range o.siblings {
		args = append(args, "--sibling", p)
	}
	return append(args, "--module-timeout", strconv.FormatFloat(o.moduleTimeout.Seconds(), 'f', -1, 64), pkg)
}

// Surface lists the public API of package pkg as installed for the
// interpreter python with the directories paths put first on sys.path
// (site-packages of an environment, or a source tree), running the helper
// (HelperArgs) as a subprocess in its own process group with a minimal
// environment; ctx ends the group. Import-time failures of the library's
// modules are reported on PackageSurface.Modules; an error is returned
// when the package cannot be found, the interpreter cannot run, or the
// helper dies or is stopped by ctx before finishing (the error names the
// module being imported or listed, and ends with the helper's stderr).
// Safe for concurrent use; each call is its own process.
func Surface(ctx context.Context, python string, paths []string, pkg string, opts ...Option) (*PackageSurface, error) {
	cmd := exec.CommandContext(ctx, python, HelperArgs(paths, pkg, opts...)...)
	cmd.Dir = os.TempDir()
	cmd.Env = []string{"LC_ALL=C.UTF-8", "HOME=" + os.TempDir(), "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout bytes.Buffer
	stderr := tailbuf.New(4 << 10)
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	runErr := cmd.Run()
	s, err := ParseOutput(pkg, stdout.Bytes())
	if err == nil {
		return s, nil
	}
	var unfinished *UnfinishedError
	if errors.As(err, &unfinished) {
		if ctx.Err() != nil {
			unfinished.Cause = ctx.Err()
		} else if runErr != nil {
			unfinished.Cause = runErr
		}
		unfinished.Stderr = strings.TrimSpace(stderr.String())
	}
	return nil, fmt.Errorf("surface %s: %w", pkg, err)
}

// UnfinishedError is returned when the helper's output stops before its
// last line: the interpreter died (a crash in native code, os._exit) or
// was stopped.
type UnfinishedError struct {
	Stage  string // "importing" or "listing", "" before the first module
	Module string // the module being imported or listed then
	Cause  error  // the exit status or the context's error, when known
	Stderr string // the end of the helper's stderr, when known
}

func (e *UnfinishedError) Error() string {
	msg := "the helper stopped before finishing"
	if e.Cause != nil {
		msg += " (" + e.Cause.Error() + ")"
	}
	if e.Module != "" {
		msg += " while " + e.Stage + " " + e.Module
	}
	if e.Stderr != "" {
		msg += ": " + e.Stderr
	}
	return msg
}

func (e *UnfinishedError) Unwrap() error { return e.Cause }

// ParseOutput reads the helper's standard output (JSON lines). It returns
// an *UnfinishedError when the output stops before the helper's last line,
// and an error when the helper could not find the package.
func ParseOutput(pkg string, out []byte) (*PackageSurface, error) {
	s := &PackageSurface{Package: pkg}
	byName := map[string]int{}
	var stage, current string
	done := false
	for _, line := range bytes.Split(out, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var head struct {
			Type, Module, Stage, Error, Python, Distribution, Version string
		}
		if err := json.Unmarshal(line, &head); err != nil {
			return nil, fmt.Errorf("helper output: %w", err)
		}
		switch head.Type {
		case "start":
			stage, current = head.Stage, head.Module
		case "module":
			var m Module
			if err := json.Unmarshal(line, &m); err != nil {
				return nil, fmt.Errorf("helper output: %w", err)
			}
			byName[m.Name] = len(s.Modules)
			s.Modules = append(s.Modules, m)
		case "attribute_error":
			if i, ok := byName[head.Module]; ok {
				s.Modules[i].AttributeErrors = append(s.Modules[i].AttributeErrors, head.Error)
			}
		case "api":
			var a API
			if err := json.Unmarshal(line, &a); err != nil {
				return nil, fmt.Errorf("helper output: %w", err)
			}
			a.Path, a.Private = canonical(a)
			s.APIs = append(s.APIs, a)
		case "error":
			return nil, errors.New(head.Error)
		case "done":
			s.Python, s.Distribution, s.Version = head.Python, head.Distribution, head.Version
			done = true
		}
	}
	if !done {
		return nil, &UnfinishedError{Stage: stage, Module: current}
	}
	sort.Slice(s.APIs, func(i, j int) bool { return s.APIs[i].ID < s.APIs[j].ID })
	return s, nil
}

// IsPrivatePath reports whether a dotted path has a component starting
// with "_" (a private module, class or name).
func IsPrivatePath(p string) bool {
	for _, part := range strings.Split(p, ".") {
		if strings.HasPrefix(part, "_") {
			return true
		}
	}
	return false
}

// Canonical is the canonical path of a and whether a is private, as
// ParseOutput sets Path and Private: for a caller that merges the
// surfaces of several packages of one distribution (unioning the Paths of
// an object two of them export).
func Canonical(a API) (path string, private bool) { return canonical(a) }

// canonical picks the canonical path of a: public before private, then
// the fewest components, then a path ending in the object's own qualified
// name (shapes.Point over its alias shapes.Coord), then one in the
// defining module, then the smallest.
func canonical(a API) (string, bool) {
	paths := a.Paths
	if len(paths) == 0 {
		paths = a.UnlistedPaths
	}
	if len(paths) == 0 {
		return "", true
	}
	mod, qual := a.Module(), a.QualName()
	key := func(p string) [4]int {
		k := [4]int{0, strings.Count(p, "."), 0, 0}
		if IsPrivatePath(p) {
			k[0] = 1
		}
		if !strings.HasSuffix(p, "."+qual) {
			k[2] = 1
		}
		if !strings.HasPrefix(p, mod+".") {
			k[3] = 1
		}
		return k
	}
	best := paths[0]
	for _, p := range paths[1:] {
		kp, kb := key(p), key(best)
		if kp != kb {
			for i := range kp {
				if kp[i] != kb[i] {
					if kp[i] < kb[i] {
						best = p
					}
					break
				}
			}
		} else if p < best {
			best = p
		}
	}
	return best, len(a.Paths) == 0 || IsPrivatePath(best)
}
