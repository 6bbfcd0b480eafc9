package gotool

import (
	"context"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/lacuna-dev/lacuna/runners/modfetch"
)

// Unit is one program of a batch: one test file, in a package it shares
// with the other units of its group. Many programs then share one build
// and one test binary, which is what makes thousands of them affordable.
type Unit struct {
	Group string // units of one group share a package, unless they clash
	// Source renders the file for package pkg; its test functions are
	// named with UnitName. declared holds the
	// top-level declarations already written to that package (name →
	// source): a unit adds what it declares and leaves out what is
	// there. It is called again when the package is rebuilt without a
	// unit that did not compile.
	Source func(pkg string, declared map[string]string) string
	// Clashes reports whether the unit declares a name the package has
	// with other source; such a unit gets a package of its own.
	Clashes func(declared map[string]string) bool
}

// UnitResult is what the batch found for one unit.
type UnitResult struct {
	// CompileError holds the compiler's messages about this unit's file,
	// or about its package when they name no unit.
	CompileError string
	Tests        map[string]TestResult // by test or example name
	// PackageFailure is the test binary's output when it failed outside
	// any test (a crash, a timeout).
	PackageFailure string
	TimedOut       bool
}

// BatchOptions configure RunBatch.
type BatchOptions struct {
	Exec    string // go test -exec program: the sandbox wrapper
	WorkDir string // where the generated module goes (removed after)
	TestOptions
}

// RunBatch writes units into a generated module that requires mod
// through a replace directive to its verified tree, compiles everything
// with one `go test -json` (outside the sandbox) and runs the test
// binaries through opts.Exec (inside it). A unit that does not compile is
// set aside and its package rebuilt without it, so it costs only itself.
func (t *Toolchain) RunBatch(ctx context.Context, mod *modfetch.Module, units []Unit, opts BatchOptions) ([]UnitResult, error) {
	res := make([]UnitResult, len(units))
	work, err := os.MkdirTemp(opts.WorkDir, "batch-")
	if err != nil {
		return nil, err
	}
	if !t.opts.KeepWork {
		defer os.RemoveAll(work)
	}
	goVersion, err := t.goVersion(ctx)
	if err != nil {
		return nil, err
	}
	gomod := fmt.Sprintf("module lacuna.batch/m\n\ngo %s\n\nrequire %s %s\n\nreplace %s => %s\n", goVersion, mod.Path, mod.Version, mod.Path, mod.Dir)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(gomod), 0o644); err != nil {
		return nil, err
	}
	type pkg struct {
		dir      string
		members  []int
		declared map[string]string
	}
	var pkgs []*pkg
	byGroup := map[string]*pkg{}
	newPkg := func() (*pkg, error) {
		p := &pkg{dir: "p" + strconv.Itoa(len(pkgs)), declared: map[string]string{}}
		pkgs = append(pkgs, p)
		return p, os.MkdirAll(filepath.Join(work, p.dir), 0o755)
	}
	write := func(p *pkg, i int) error {
		return os.WriteFile(filepath.Join(work, p.dir, unitFile(i)), []byte(units[i].Source(p.dir, p.declared)), 0o644)
	}
	// alone queues unit i for the next round in a package of its own.
	alone := func(next map[string]*pkg, i int) error {
		q, err := newPkg()
		if err != nil {
			return err
		}
		q.members = []int{i}
		next["lacuna.batch/m/"+q.dir] = q
		return write(q, i)
	}
	// A unit that does not parse is set aside before the build: the go
	// command reports one parse error per package and round.
	fset := token.NewFileSet()
	for i, u := range units {
		if _, err := parser.ParseFile(fset, unitFile(i), u.Source("p", map[string]string{}), parser.SkipObjectResolution); err != nil {
			res[i].CompileError = bound(err.Error(), 4000)
		}
	}
	for i, u := range units {
		if res[i].CompileError != "" {
			continue
		}
		p := byGroup[u.Group]
		if p == nil || (u.Clashes != nil && u.Clashes(p.declared)) {
			if p, err = newPkg(); err != nil {
				return nil, err
			}
			if byGroup[u.Group] == nil {
				byGroup[u.Group] = p
			}
		}
		if err := write(p, i); err != nil {
			return nil, err
		}
		p.members = append(p.members, i)
	}
	pending := map[string]*pkg{}
	for _, p := range pkgs {
		pending["lacuna.batch/m/"+p.dir] = p
	}
	fileRE := regexp.MustCompile(`u(\d+)_test\.go:\d+(:\d+)?: (.*)`)
	for round := 0; round < 8 && len(pending) > 0; round++ {
		var dirs []string
		for _, p := range pending {
			dirs = append(dirs, "./"+p.dir)
		}
		sort.Strings(dirs)
		topts := opts.TestOptions
		topts.Exec, topts.Packages = opts.Exec, dirs
		run, err := t.Test(ctx, work, topts)
		if err != nil {
			return nil, err
		}
		if run.TimedOut {
			for _, p := range pending {
				for _, i := range p.members {
					res[i].TimedOut = true
				}
			}
			return res, nil
		}
		next := map[string]*pkg{}
		for ip, p := range pending {
			msg, failed := run.BuildErrors[ip]
			if !failed {
				for _, i := range p.members {
					res[i].Tests = map[string]TestResult{}
					res[i].PackageFailure = run.Failed[ip]
				}
				for _, tr := range run.Tests {
					if tr.Package != ip {
						continue
					}
					if m := unitSuffix.FindStringSubmatch(tr.Test); m != nil {
						if i, err := strconv.Atoi(m[1]); err == nil && i < len(res) {
							res[i].Tests[tr.Test] = tr
						}
					}
				}
				if len(p.members) > 1 && strings.HasPrefix(run.Failed[ip], diedPrefix) {
					// The binary died (os.Exit, a panic in a goroutine, a
					// crash): the unit it died in may be a victim of another's
					// leftover goroutine, and the units after it never ran.
					// Each of them runs again alone, so that one sample's
					// crash decides no other sample's verdict.
					for _, i := range p.members {
						if !diedIn(res[i]) {
							continue
						}
						res[i] = UnitResult{}
						if err := alone(next, i); err != nil {
							return nil, err
						}
					}
				}
				continue
			}
			bad := map[int][]string{}
			mine := map[int]bool{}
			for _, i := range p.members {
				mine[i] = true
			}
			for _, m := range fileRE.FindAllStringSubmatch(msg, -1) {
				if k, _ := strconv.Atoi(m[1]); mine[k] {
					bad[k] = append(bad[k], m[3])
				}
			}
			if len(bad) == 0 && len(p.members) > 1 {
				// Nothing names a unit (the compiler crashed or ran out of
				// its limits): build each unit alone, so the one at fault
				// costs only itself.
				for _, i := range p.members {
					os.Remove(filepath.Join(work, p.dir, unitFile(i)))
					if err := alone(next, i); err != nil {
						return nil, err
					}
				}
				continue
			}
			if len(bad) == 0 { // a lone unit that fails with no position
				for _, i := range p.members {
					res[i].CompileError = bound(msg, 4000)
				}
				continue
			}
			var keep []int
			for _, i := range p.members {
				if lines, ok := bad[i]; ok {
					res[i].CompileError = bound(strings.Join(lines, "\n"), 4000)
					os.Remove(filepath.Join(work, p.dir, unitFile(i)))
					continue
				}
				keep = append(keep, i)
			}
			p.members = keep
			if len(keep) == 0 {
				continue
			}
			// A removed file may have declared what the others use: write
			// the survivors again.
			p.declared = map[string]string{}
			for _, i := range keep {
				if err := write(p, i); err != nil {
					return nil, err
				}
			}
			next[ip] = p
		}
		pending = next
	}
	for _, p := range pending {
		for _, i := range p.members {
			if res[i].CompileError == "" && res[i].Tests == nil {
				res[i].CompileError = "still failing to build after several rounds"
			}
		}
	}
	return res, nil
}

// diedPrefix starts a package failure whose test binary died in a test
// (see Toolchain.Test).
const diedPrefix = "the test binary died during "

// diedIn reports whether a unit did not run to a verdict of its own: the
// binary died before it, or while it ran.
func diedIn(r UnitResult) bool {
	if len(r.Tests) == 0 {
		return true
	}
	for _, tr := range r.Tests {
		if strings.Contains(tr.Output, BinaryDied) {
			return true
		}
	}
	return false
}

// unitFile names unit i's file. Not u_N: u_386_test.go would be a GOARCH
// build constraint.
func unitFile(i int) string { return fmt.Sprintf("u%d_test.go", i) }

// unitSuffix: the test and example functions of unit i end in "_uI", so
// results find their unit (ExampleMap_u12 is still an example of Map).
var unitSuffix = regexp.MustCompile(`_u(\d+)$`)

// UnitName is the name a unit's test function i must have.
func UnitName(base string, i int) string { return fmt.Sprintf("%s_u%d", base, i) }
