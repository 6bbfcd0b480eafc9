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
	Exec string // go test -exec program: the sandbox wrapper
	// ExecFD runs a program handed descriptors of its own (Built.Run and
	// Built.Exec with ExtraFiles); Exec when empty.
	ExecFD  string
	WorkDir string // where the generated module goes (removed after)
	TestOptions
}

// RunBatch writes units into a generated module that requires mod
// through a replace directive to its verified tree, compiles everything
// with one `go test -json` (outside the sandbox) and runs the test
// binaries through opts.Exec (inside it). A unit that does not compile is
// set aside and its package rebuilt without it, so it costs only itself.
func (t *Toolchain) RunBatch(ctx context.Context, mod *modfetch.Module, units []Unit, opts BatchOptions) ([]UnitResult, error) {
	b, err := t.newBatch(ctx, mod, units, opts.WorkDir, opts.Offline)
	if err != nil {
		return nil, err
	}
	defer b.close()
	res := make([]UnitResult, len(units))
	var run *TestRun
	test := func(dirs []string) (map[string]string, bool, error) {
		topts := opts.TestOptions
		topts.Exec, topts.Packages = opts.Exec, dirs
		r, err := t.Test(ctx, b.work, topts)
		if err != nil {
			return nil, false, err
		}
		run = r
		return run.BuildErrors, run.TimedOut, nil
	}
	record := func(p *pkg) ([]int, error) {
		ip := importPath(p.dir)
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
		if len(p.members) == 1 || !strings.HasPrefix(run.Failed[ip], diedPrefix) {
			return nil, nil
		}
		// The binary died (os.Exit, a panic in a goroutine, a crash): the
		// unit it died in may be a victim of another's leftover goroutine,
		// and the units after it never ran. Each of them runs again alone,
		// so that one sample's crash decides no other sample's verdict.
		var again []int
		for _, i := range p.members {
			if diedIn(res[i]) {
				res[i] = UnitResult{}
				again = append(again, i)
			}
		}
		return again, nil
	}
	timedOut, err := b.rounds(test, record)
	if err != nil {
		return nil, err
	}
	for _, i := range timedOut {
		res[i].TimedOut = true
	}
	for i, msg := range b.compileError {
		if msg != "" {
			res[i].CompileError = msg
		}
	}
	return res, nil
}

// batch is the generated module of a set of units, with a package per
// group (or per unit that clashes with its group), and the rounds that
// build it until every unit compiled or was set aside. It belongs to one
// RunBatch or BuildBatch call.
type batch struct {
	work    string
	keep    bool
	units   []Unit
	pkgs    []*pkg
	pending map[string]*pkg // by import path: to build in the next round
	// compileError is each unit's reason for being set aside, "" while
	// it is not.
	compileError []string
}

// pkg is one generated package and the units written into it.
type pkg struct {
	dir      string // its directory under the module, and its name
	members  []int
	declared map[string]string
}

// importPath is the import path of the generated package in dir.
func importPath(dir string) string { return "lacuna.batch/m/" + dir }

// newBatch writes the module into a new directory of workDir: go.mod,
// then each unit into its group's package. A unit that does not parse is
// set aside before the build: the go command reports one parse error per
// package and round.
func (t *Toolchain) newBatch(ctx context.Context, mod *modfetch.Module, units []Unit, workDir string, offline bool) (*batch, error) {
	work, err := os.MkdirTemp(workDir, "batch-")
	if err != nil {
		return nil, err
	}
	b := &batch{work: work, keep: t.opts.KeepWork, units: units, pending: map[string]*pkg{}, compileError: make([]string, len(units))}
	if err := b.write(ctx, t, mod, offline); err != nil {
		b.close()
		return nil, err
	}
	return b, nil
}

func (b *batch) write(ctx context.Context, t *Toolchain, mod *modfetch.Module, offline bool) error {
	goVersion, err := t.goVersion(ctx)
	if err != nil {
		return err
	}
	gomod := fmt.Sprintf("module lacuna.batch/m\n\ngo %s\n\nrequire %s %s\n\nreplace %s => %s\n", goVersion, mod.Path, mod.Version, mod.Path, mod.Dir)
	if err := os.WriteFile(filepath.Join(b.work, "go.mod"), []byte(gomod), 0o644); err != nil {
		return err
	}
	if offline {
		// Before any unit is written: what is downloaded is the target's
		// graph, whatever the units import.
		if err := t.downloadAll(ctx, b.work); err != nil {
			return err
		}
	}
	fset := token.NewFileSet()
	for i, u := range b.units {
		if _, err := parser.ParseFile(fset, unitFile(i), u.Source("p", map[string]string{}), parser.SkipObjectResolution); err != nil {
			b.compileError[i] = bound(err.Error(), 4000)
		}
	}
	byGroup := map[string]*pkg{}
	for i, u := range b.units {
		if b.compileError[i] != "" {
			continue
		}
		p := byGroup[u.Group]
		if p == nil || (u.Clashes != nil && u.Clashes(p.declared)) {
			if p, err = b.newPkg(); err != nil {
				return err
			}
			if byGroup[u.Group] == nil {
				byGroup[u.Group] = p
			}
		}
		if err := b.writeUnit(p, i); err != nil {
			return err
		}
		p.members = append(p.members, i)
	}
	for _, p := range b.pkgs {
		b.pending[importPath(p.dir)] = p
	}
	return nil
}

func (b *batch) newPkg() (*pkg, error) {
	p := &pkg{dir: "p" + strconv.Itoa(len(b.pkgs)), declared: map[string]string{}}
	b.pkgs = append(b.pkgs, p)
	return p, os.MkdirAll(filepath.Join(b.work, p.dir), 0o755)
}

func (b *batch) writeUnit(p *pkg, i int) error {
	return os.WriteFile(filepath.Join(b.work, p.dir, unitFile(i)), []byte(b.units[i].Source(p.dir, p.declared)), 0o644)
}

// alone queues unit i for the next round in a package of its own.
func (b *batch) alone(next map[string]*pkg, i int) error {
	q, err := b.newPkg()
	if err != nil {
		return err
	}
	q.members = []int{i}
	next[importPath(q.dir)] = q
	return b.writeUnit(q, i)
}

// close removes the module, unless Options.KeepWork.
func (b *batch) close() error {
	if b.keep {
		return nil
	}
	return os.RemoveAll(b.work)
}

// A buildStep builds the packages in dirs (directories of the module,
// "./p3"), and runs them or not. It returns the compiler's output for
// each package that did not build, by import path (other paths are
// ignored), and whether it ran out of its wall clock.
type buildStep func(dirs []string) (failed map[string]string, timedOut bool, err error)

// rounds builds the pending packages with step until each one built or
// lost all its units, for at most 8 rounds. built is called for every
// package that built, and returns the units to build and run again, each
// alone. A package that did not build loses the units its compiler
// output names (their compileError says why) and is rebuilt without
// them; when the output names no unit (the compiler crashed or ran out
// of its limits), each unit is built alone, so that the one at fault
// costs only itself. rounds returns the units still pending when step
// ran out of time; units still failing after the last round are set
// aside.
func (b *batch) rounds(step buildStep, built func(p *pkg) (again []int, err error)) (timedOut []int, err error) {
	fileRE := regexp.MustCompile(`u(\d+)_test\.go:\d+(:\d+)?: (.*)`)
	for round := 0; round < 8 && len(b.pending) > 0; round++ {
		var dirs []string
		for _, p := range b.pending {
			dirs = append(dirs, "./"+p.dir)
		}
		sort.Strings(dirs)
		failed, out, err := step(dirs)
		if err != nil {
			return nil, err
		}
		if out {
			for _, p := range b.pending {
				timedOut = append(timedOut, p.members...)
			}
			sort.Ints(timedOut)
			return timedOut, nil
		}
		next := map[string]*pkg{}
		for ip, p := range b.pending {
			msg, bad := failed[ip]
			if !bad {
				again, err := built(p)
				if err != nil {
					return nil, err
				}
				for _, i := range again {
					if err := b.alone(next, i); err != nil {
						return nil, err
					}
				}
				continue
			}
			named := map[int][]string{}
			mine := map[int]bool{}
			for _, i := range p.members {
				mine[i] = true
			}
			for _, m := range fileRE.FindAllStringSubmatch(msg, -1) {
				if k, _ := strconv.Atoi(m[1]); mine[k] {
					named[k] = append(named[k], m[3])
				}
			}
			if len(named) == 0 && len(p.members) > 1 {
				for _, i := range p.members {
					os.Remove(filepath.Join(b.work, p.dir, unitFile(i)))
					if err := b.alone(next, i); err != nil {
						return nil, err
					}
				}
				continue
			}
			if len(named) == 0 { // a lone unit that fails with no position
				for _, i := range p.members {
					b.compileError[i] = bound(msg, 4000)
				}
				continue
			}
			var keep []int
			for _, i := range p.members {
				if lines, ok := named[i]; ok {
					b.compileError[i] = bound(strings.Join(lines, "\n"), 4000)
					os.Remove(filepath.Join(b.work, p.dir, unitFile(i)))
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
				if err := b.writeUnit(p, i); err != nil {
					return nil, err
				}
			}
			next[ip] = p
		}
		b.pending = next
	}
	for _, p := range b.pending {
		for _, i := range p.members {
			if b.compileError[i] == "" {
				b.compileError[i] = "still failing to build after several rounds"
			}
		}
	}
	return nil, nil
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
