// Package pyenv makes isolated Python environments for one PyPI release
// (NAME==VERSION and its dependencies), pinned by an exact lock and cached
// by the lock's digest, the way runners/modfetch caches Go modules. It
// knows nothing of the graph.
//
// Making an environment has two steps, kept apart so that a node can pin
// the first in its key and hand it to its run (nodes.Resolver):
//
//  1. Cache.Resolve asks the installer (uv by default, pip as the
//     fallback) for the dependency set of NAME==VERSION as of a date
//     (Spec.ExcludeNewer), wheels preferred, and returns the Lock: every
//     distribution with its version and the sha256 of the file it comes
//     from, plus the interpreter and the installer. Lock.Digest is the
//     environment's identity.
//  2. Cache.Install creates the environment for a Lock, installing exactly
//     the locked files (hash-checked, no dependency resolution), or
//     returns the one already cached under the digest.
//
// The cache directory holds envs/DIGEST (a finished environment),
// locks/DIGEST (the Text of every lock Resolve made or Install was given,
// a few hundred bytes each), tmp/ (environments and lock files being
// written), heal.lock (see Install) and the installers' own caches and
// tools. An environment appears under its digest only complete (built in
// tmp/, made readable by everyone, then renamed), and is never changed
// afterwards; a lock file is written in tmp/, flushed and renamed too.
// Any number of goroutines and processes may Resolve and Install in one
// cache at once: two that build the same digest both build it, one
// rename wins and the other's copy is discarded. Remove and GC must not
// run while something uses an environment they remove. GC is a library
// function only: lacuna's gc command does not call it (nothing collects
// the environments or locks today); wiring it in must keep every lock
// that a stored result refers to (the v_new_env digests of surface_diff,
// bundle and tasks rows), or the nodes downstream cannot rebuild them.
//
// The environments are a cache, like the Go module cache: envs/ (or any
// envs/DIGEST) may be deleted, by Remove or by hand (rm -rf, even one
// interrupted half-way), and an environment whose lock is kept is made
// again, exactly, from Cache.Lock(DIGEST) and Install: the same locked
// files, hash-checked, so the same digest and the same installed files.
// Get checks each environment before handing it out (every installed
// distribution's RECORD, every file it lists), so what a deletion
// interrupted half-way leaves is not used but rebuilt over. Deleting
// locks/ too (or the whole cache directory) loses that: an environment
// whose lock is gone must be resolved again (Resolve), which is not
// guaranteed to give the same lock.
//
// A failure of Resolve or Install that a later try may not meet (the
// index or file host unreachable or answering 5xx or 429, the installer
// stopped or killed) wraps ErrUnavailable; any other failure recurs, and
// a caller may record it as the release's answer.
//
// An environment is used through its interpreter (Env.Python, and
// `python -m MODULE` for tools): it was built under tmp/ and moved, so the
// console scripts in its bin/ carry a stale path in their #! line. For the
// same reason it may be mounted elsewhere (a sandbox mounting it read-only
// at another path) as long as the base interpreter stays where it was.
//
// Both installers reach the index through a loopback server of this
// package that applies the cutoff and records what the index answered
// (so that a 404 or a page that is not JSON is named in the error): the
// index must serve the PEP 691 JSON simple API with PEP 700 upload times,
// as PyPI does; a PEP 503 HTML-only index is refused.
//
// No function here reads the process environment: what the installers
// see is Options.Environ, cleaned of the variables that would change what
// they install (PIP_*, UV_*, PYTHON*, VIRTUAL_ENV, CONDA_*).
package pyenv

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ReleaseGrace is what lacuna adds to a release's time (the earliest
// upload of its files) to get the Spec.ExcludeNewer it installs that
// release with: see ExcludeNewerFor.
const ReleaseGrace = 24 * time.Hour

// ExcludeNewerFor is the dependency cutoff lacuna uses for a release
// uploaded at release: the release time plus ReleaseGrace.
//
// Each version is installed as of its own release, not as of the model's
// cutoff and not as of one common date. The cutoff cannot be used for the
// version released after it (the version itself would be excluded), and a
// common date pairs one of the two versions with dependencies of another
// period: the old version with releases of its dependencies it was never
// tested against (and that may have dropped what it uses), or the new one
// with dependencies older than it requires. As of its own release, each
// version gets the dependency set a user installing it that day got. The
// grace admits the release's own files uploaded after the first one
// (platform wheels are often built and uploaded hours after the sdist),
// which otherwise would force a build from source.
func ExcludeNewerFor(release time.Time) time.Time {
	return release.Add(ReleaseGrace).UTC()
}

// Spec says which release to install and from where.
type Spec struct {
	// Name and Version of the release (Version exact, as on the index).
	Name, Version string
	// IndexURL is the PEP 691 simple index (https://pypi.org/simple/
	// when empty). The lock does not depend on it: the same files from a
	// mirror give the same digest.
	IndexURL string
	// ExcludeNewer, when not zero, ignores every file uploaded after it
	// (PEP 700 upload-time) while resolving; files with no upload time
	// are ignored too. See ExcludeNewerFor for the date lacuna uses.
	ExcludeNewer time.Time
}

// DefaultIndex is the index used when Spec.IndexURL is empty.
const DefaultIndex = "https://pypi.org/simple/"

func (s Spec) index() string {
	if s.IndexURL == "" {
		return DefaultIndex
	}
	return s.IndexURL
}

func (s Spec) String() string { return Normalize(s.Name) + "==" + s.Version }

// Options configure how the installers are run.
type Options struct {
	// Environ is the environment the interpreter and the installers run
	// in (the CLI passes its own; FindPython takes it, and the installers
	// made for that Python inherit it); PIP_*, UV_*, PYTHON*, VIRTUAL_ENV
	// and CONDA_* are removed from it. Nil: an empty environment. It
	// needs HOME and PATH where an sdist's build looks for tools, and a
	// proxy's settings (HTTPS_PROXY) where there is one.
	Environ []string
	// CertFile is a PEM bundle of the certificate authorities to trust
	// for HTTPS (pip's --cert, uv's SSL_CERT_FILE). Empty: each tool's
	// default (certifi for pip).
	CertFile string
}

// Lock is the exact content of an environment. Its Text, and so its
// Digest, depends only on what is installed and by what: the
// interpreter, the installer, and for each distribution its normalized
// name, version and the sha256 of its file. Two locks with the same
// digest describe the same environment.
type Lock struct {
	// Python is the interpreter's identity (Python.ID).
	Python string
	// Installer is the installer's name and version ("uv 0.13.9").
	Installer string
	// Root is the release the environment is for (NAME==VERSION).
	Root string
	// Packages, sorted by name, each once.
	Packages []Package
}

// Package is one installed distribution.
type Package struct {
	Name    string // normalized (PEP 503)
	Version string
	// SHA256 of the file it is installed from, lower-case hex. pip's
	// locks name exactly one file. uv's name every file of the version
	// uv would accept for this interpreter (usually one wheel; several
	// when several wheels fit, uv installing the best); the install
	// accepts no other file.
	SHA256 []string
	// Files are the file names, in the order of SHA256 (informative:
	// not part of the digest).
	Files []string
}

const lockMagic = "lacuna-pyenv-lock-v1"

// Text is the canonical encoding of the lock, the bytes its digest is
// taken of: the magic line, then "python ID", "installer NAME VERSION",
// "root NAME==VERSION", then one line per package, sorted by name:
// "NAME==VERSION sha256:H[ sha256:H...]" with the hashes sorted.
func (l *Lock) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\npython %s\ninstaller %s\nroot %s\n", lockMagic, l.Python, l.Installer, l.Root)
	for _, p := range l.Packages {
		hs := append([]string(nil), p.SHA256...)
		sort.Strings(hs)
		fmt.Fprintf(&b, "%s==%s", p.Name, p.Version)
		for _, h := range hs {
			b.WriteString(" sha256:" + h)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// Digest is the environment's identity: the lower-case hex sha256 of
// Text. A node puts it in its key.
func (l *Lock) Digest() string {
	s := sha256.Sum256([]byte(l.Text()))
	return hex.EncodeToString(s[:])
}

// ParseLock reads what Text wrote. Any other text is an error (it never
// panics); a text that parses may still not be canonical, which the
// callers see by comparing its Digest with the one they expect.
func ParseLock(text string) (*Lock, error) {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) < 4 || lines[0] != lockMagic {
		return nil, errors.New("pyenv: not a lock (bad magic line)")
	}
	l := &Lock{}
	for i, f := range []*string{&l.Python, &l.Installer, &l.Root} {
		k := []string{"python ", "installer ", "root "}[i]
		if !strings.HasPrefix(lines[i+1], k) {
			return nil, fmt.Errorf("pyenv: lock line %d: want %q", i+2, k)
		}
		*f = strings.TrimPrefix(lines[i+1], k)
	}
	for n, line := range lines[4:] {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			return nil, fmt.Errorf("pyenv: lock line %d: %q", n+5, line)
		}
		name, ver, ok := strings.Cut(fields[0], "==")
		if !ok {
			return nil, fmt.Errorf("pyenv: lock line %d: %q", n+5, line)
		}
		if !validName(name) || !validVersion(ver) {
			return nil, fmt.Errorf("pyenv: lock line %d: bad package %q", n+5, fields[0])
		}
		p := Package{Name: name, Version: ver}
		for _, h := range fields[1:] {
			hex, ok := strings.CutPrefix(h, "sha256:")
			if !ok || !isSHA256(hex) {
				return nil, fmt.Errorf("pyenv: lock line %d: bad hash %q", n+5, h)
			}
			p.SHA256 = append(p.SHA256, hex)
		}
		l.Packages = append(l.Packages, p)
	}
	return l, nil
}

var sha256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)

func isSHA256(s string) bool { return sha256RE.MatchString(s) }

var (
	normRE    = regexp.MustCompile(`[-_.]+`)
	nameRE    = regexp.MustCompile(`^(?i:[a-z0-9]|[a-z0-9][a-z0-9._-]*[a-z0-9])$`)
	versionRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+!_-]*$`)
)

// validName says whether s is a project name (PEP 508): these are
// written into requirement files and command lines, so nothing else may
// pass.
func validName(s string) bool { return nameRE.MatchString(s) }

// validVersion says whether s can be a version (PEP 440's characters).
func validVersion(s string) bool { return versionRE.MatchString(s) }

// Normalize is a project name as PEP 503 compares them.
func Normalize(name string) string {
	return strings.ToLower(normRE.ReplaceAllString(name, "-"))
}

// check refuses a lock with a package that is not a name, version and
// hashes (the lock becomes a requirements file).
func (l *Lock) check() error {
	for _, p := range l.Packages {
		if !validName(p.Name) || !validVersion(p.Version) || len(p.SHA256) == 0 {
			return fmt.Errorf("pyenv: lock of %s: bad package %q==%q", l.Root, p.Name, p.Version)
		}
		for _, h := range p.SHA256 {
			if !isSHA256(h) {
				return fmt.Errorf("pyenv: lock of %s: %s: bad sha256 %q", l.Root, p.Name, h)
			}
		}
	}
	return nil
}

// finish sorts the packages and checks the lock holds the root.
func (l *Lock) finish(spec Spec) error {
	sort.Slice(l.Packages, func(i, j int) bool { return l.Packages[i].Name < l.Packages[j].Name })
	root := false
	for i, p := range l.Packages {
		if i > 0 && l.Packages[i-1].Name == p.Name {
			return fmt.Errorf("pyenv: %s: %s resolved twice", spec, p.Name)
		}
		if len(p.SHA256) == 0 {
			return fmt.Errorf("pyenv: %s: the index gave no sha256 for %s==%s", spec, p.Name, p.Version)
		}
		if p.Name == Normalize(spec.Name) && p.Version == spec.Version {
			root = true
		}
	}
	if !root {
		return fmt.Errorf("pyenv: %s: the resolution does not contain the release itself", spec)
	}
	return l.check()
}

// Installer resolves and installs environments: uv (NewUV, BootstrapUV)
// or pip (NewPip). Its methods are safe for concurrent use.
type Installer interface {
	// String is the installer's name and version, as in Lock.Installer.
	String() string
	// resolve returns the packages of spec's environment for py.
	resolve(ctx context.Context, py *Python, spec Spec, work string) ([]Package, error)
	// install installs exactly lock's files into the environment whose
	// interpreter is target.
	install(ctx context.Context, lock *Lock, index, target, work string) error
}

// Cache is a directory of environments made with one interpreter and one
// installer. Its methods are safe for concurrent use, also by several
// processes sharing Dir (see the package comment).
type Cache struct {
	Dir       string
	Python    *Python
	Installer Installer
}

// Env is an environment in the cache.
type Env struct {
	Dir  string // the environment (a venv), ENV/lacuna-lock.txt its lock
	Lock *Lock
}

// Python is the environment's interpreter.
func (e *Env) Python() string { return filepath.Join(e.Dir, "bin", "python") }

// Digest is the environment's identity (its lock's digest).
func (e *Env) Digest() string { return e.Lock.Digest() }

const lockFile = "lacuna-lock.txt"

// Resolve pins spec's environment: the exact lock, made by c's installer
// for c's interpreter. It installs nothing.
func (c *Cache) Resolve(ctx context.Context, spec Spec) (*Lock, error) {
	if !validName(spec.Name) || !validVersion(spec.Version) {
		return nil, fmt.Errorf("pyenv: resolve %q==%q: not a project name and version", spec.Name, spec.Version)
	}
	work, err := c.tempDir("resolve-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	pkgs, err := c.Installer.resolve(ctx, c.Python, spec, work)
	if err != nil {
		return nil, err
	}
	l := &Lock{Python: c.Python.ID(), Installer: c.Installer.String(), Root: spec.String(), Packages: pkgs}
	if err := l.finish(spec); err != nil {
		return nil, err
	}
	if err := c.keepLock(l); err != nil {
		return nil, err
	}
	return l, nil
}

// Create is Resolve then Install.
func (c *Cache) Create(ctx context.Context, spec Spec) (*Env, error) {
	l, err := c.Resolve(ctx, spec)
	if err != nil {
		return nil, err
	}
	return c.Install(ctx, l, spec.IndexURL)
}

// ErrUnavailable is wrapped by the error of Resolve, Install and Create
// when the failure is transient: the index or the file host could not be
// reached, timed out, dropped the connection or answered 5xx or 429, or
// the installer was stopped (ctx ended) or killed by a signal. A later
// try may succeed, so the failure must not be recorded as the release's
// answer. Any other failure (a 404, no installable file, a build that
// fails, a dependency conflict, an index answering garbage) recurs and
// does not wrap it. See transient for how it is told.
var ErrUnavailable = errors.New("the index or file host is unavailable or the installer was stopped (transient: a re-run retries)")

// ErrToolsChanged is wrapped by the error of Get for an environment made
// with another interpreter than the cache's (the base interpreter was
// upgraded in place: the environment links to it, so it cannot be used),
// and of Install for a lock made for another interpreter or by another
// installer. Either way the environment cannot be had from this cache:
// its release must be resolved again (Resolve), which gives another lock.
var ErrToolsChanged = errors.New("made with another interpreter or installer than this cache's")

// ErrBadLock is wrapped by the error of Lock when the kept lock file is
// not a lock, or not the lock of its digest (a damaged file).
var ErrBadLock = errors.New("the kept lock file is damaged")

// incompleteError is Get's error for an envs/DIGEST that is not a whole
// environment (a deletion interrupted half-way): it is os.ErrNotExist to
// callers, since what is there cannot be used, and Install replaces it.
type incompleteError struct{ digest, why string }

func (e *incompleteError) Error() string {
	return fmt.Sprintf("pyenv: environment %s is incomplete (%s)", e.digest, e.why)
}

func (e *incompleteError) Is(target error) bool { return target == os.ErrNotExist }

// Get returns the cached environment of digest, or an error wrapping
// os.ErrNotExist (see Lock for what can make it again) when envs/DIGEST
// is not there or is not whole (see checkEnv: a deletion interrupted
// half-way leaves part of it; Install replaces such a directory), or
// ErrToolsChanged when it was made with another interpreter than
// c.Python. Every call checks the environment, so that a deletion made
// while a long process runs is seen too (checkEnv: it reads the installed
// distributions' RECORD files and stats the files they list, starting no
// process: about 0.14 s for 98 distributions and 39k files). It keeps the
// environment's lock (locks/DIGEST) when the kept one is missing or
// differs, so that an environment made before locks were kept, or whose
// lock file was damaged, can be made again too.
func (c *Cache) Get(digest string) (*Env, error) {
	if !isSHA256(digest) {
		return nil, fmt.Errorf("pyenv: %q is not an environment digest", digest)
	}
	dir := filepath.Join(c.Dir, "envs", digest)
	if _, err := os.Lstat(dir); err != nil {
		return nil, fmt.Errorf("pyenv: environment %s: %w", digest, err)
	}
	b, err := os.ReadFile(filepath.Join(dir, lockFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, &incompleteError{digest, "no " + lockFile}
	}
	if err != nil {
		return nil, fmt.Errorf("pyenv: environment %s: %w", digest, err)
	}
	l, err := ParseLock(string(b))
	if err != nil {
		return nil, &incompleteError{digest, err.Error()}
	}
	if l.Digest() != digest {
		return nil, &incompleteError{digest, lockFile + " holds the lock of " + l.Digest()}
	}
	if l.Python != c.Python.ID() {
		return nil, fmt.Errorf("pyenv: environment %s of %s was %w: it is for %s, this cache's interpreter is %s", digest, l.Root, ErrToolsChanged, l.Python, c.Python.ID())
	}
	if err := checkEnv(dir, l); err != nil {
		return nil, &incompleteError{digest, err.Error()}
	}
	if err := c.keepLock(l); err != nil {
		return nil, err
	}
	return &Env{Dir: dir, Lock: l}, nil
}

// checkEnv says whether the environment at dir holds the whole of lock: its
// interpreter link and pyvenv.cfg, and in its site-packages exactly the
// locked distributions (by the Name and Version of each *.dist-info's
// METADATA) with every file their RECORD lists under dir. Every
// installed file is in some RECORD, so a directory that a deletion
// interrupted half-way fails. It reads files only.
func checkEnv(dir string, lock *Lock) error {
	for _, f := range []string{filepath.Join("bin", "python"), "pyvenv.cfg"} {
		if _, err := os.Lstat(filepath.Join(dir, f)); err != nil {
			return fmt.Errorf("no %s", f)
		}
	}
	sites, _ := filepath.Glob(filepath.Join(dir, "lib", "python*", "site-packages"))
	if len(sites) != 1 {
		return fmt.Errorf("%d site-packages directories, want 1", len(sites))
	}
	site := sites[0]
	ents, err := os.ReadDir(site)
	if err != nil {
		return err
	}
	var have, want []string
	for _, e := range ents {
		if !e.IsDir() || !strings.HasSuffix(e.Name(), ".dist-info") {
			continue
		}
		dist := filepath.Join(site, e.Name())
		name, version, err := distMetadata(filepath.Join(dist, "METADATA"))
		if err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
		have = append(have, Normalize(name)+"=="+version)
		if err := checkRecord(dir, site, filepath.Join(dist, "RECORD")); err != nil {
			return fmt.Errorf("%s: %w", e.Name(), err)
		}
	}
	for _, p := range lock.Packages {
		want = append(want, p.Name+"=="+p.Version)
	}
	// Both sorted as strings: the lock's order (by name) is not the
	// strings' when one name prefixes another ("pydantic-core==" sorts
	// before "pydantic==").
	sort.Strings(have)
	sort.Strings(want)
	if strings.Join(have, " ") != strings.Join(want, " ") {
		return fmt.Errorf("site-packages holds %v, the lock says %v", have, want)
	}
	return nil
}

// distMetadata reads the Name and Version headers of a METADATA file.
func distMetadata(path string) (name, version string, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", "", fmt.Errorf("no METADATA: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "Name:"); ok && name == "" {
			name = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "Version:"); ok && version == "" {
			version = strings.TrimSpace(v)
		}
	}
	if name == "" || version == "" {
		return "", "", errors.New("METADATA names no Name and Version")
	}
	return name, version, nil
}

// checkRecord checks that every file a RECORD lists (paths relative to
// site) that lies under the environment dir exists.
func checkRecord(dir, site, record string) error {
	f, err := os.Open(record)
	if err != nil {
		return fmt.Errorf("no RECORD: %w", err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	r.FieldsPerRecord = -1
	rows, err := r.ReadAll()
	if err != nil {
		return fmt.Errorf("RECORD: %w", err)
	}
	for _, row := range rows {
		if len(row) == 0 || row[0] == "" || filepath.IsAbs(row[0]) {
			continue
		}
		p := filepath.Join(site, filepath.FromSlash(row[0]))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue
		}
		if _, err := os.Lstat(p); err != nil {
			rel, _ := filepath.Rel(dir, p)
			return fmt.Errorf("RECORD lists %s, which is missing", rel)
		}
	}
	return nil
}

// Lock returns the kept lock of digest (locks/DIGEST), from which Install
// makes its environment again when it is gone, or an error wrapping
// os.ErrNotExist when the lock is not kept, or ErrBadLock when the file
// is not a lock or not digest's.
func (c *Cache) Lock(digest string) (*Lock, error) {
	if !isSHA256(digest) {
		return nil, fmt.Errorf("pyenv: %q is not an environment digest", digest)
	}
	b, err := os.ReadFile(c.lockPath(digest))
	if err != nil {
		return nil, fmt.Errorf("pyenv: lock %s: %w", digest, err)
	}
	l, err := ParseLock(string(b))
	if err != nil {
		return nil, fmt.Errorf("pyenv: lock %s: %w: %w", digest, ErrBadLock, err)
	}
	if l.Digest() != digest {
		return nil, fmt.Errorf("pyenv: lock %s: %w: it holds the lock of %s", digest, ErrBadLock, l.Digest())
	}
	return l, nil
}

func (c *Cache) lockPath(digest string) string { return filepath.Join(c.Dir, "locks", digest) }

// keepLock writes l's Text to locks/DIGEST unless it holds it already:
// written in tmp/, flushed to disk and renamed, the directory flushed
// after, so a reader sees a whole lock or none, even after a crash, and
// concurrent writers of the same lock write the same bytes.
func (c *Cache) keepLock(l *Lock) error {
	text := l.Text()
	dst := c.lockPath(l.Digest())
	if b, err := os.ReadFile(dst); err == nil && string(b) == text {
		return nil
	}
	if err := os.MkdirAll(filepath.Join(c.Dir, "tmp"), 0o755); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Join(c.Dir, "tmp"), "lock-"+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err == nil {
		err = syncDir(filepath.Dir(dst))
	}
	if err != nil {
		return fmt.Errorf("pyenv: keep the lock of %s: %w", l.Root, err)
	}
	return nil
}

// syncDir flushes a directory's entries (a rename into it) to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Install returns lock's environment, creating it from index (the default
// index when empty) when it is not cached: a venv of c's interpreter with
// exactly the locked files installed (hashes required, no resolution),
// then checked: the distributions the interpreter sees must be the lock's,
// and every file their RECORDs list must be there (what Get checks).
// Every directory and file of it is then made readable by everyone
// (a+rX), whatever the process's umask, so that a sandbox running as
// another user can use it and every build of a digest has the same
// modes. The lock must have been made for c's interpreter and installer
// (else an error wrapping ErrToolsChanged: another installer could pick
// another of a package's locked files, so it would not make the same
// environment); it is kept (locks/DIGEST) before the environment is
// built. Making a deleted environment again is Install of its kept lock
// (Lock); several processes doing so at once each build it and one rename
// wins. An envs/DIGEST that is not whole (Get) is replaced: under an
// exclusive flock on heal.lock, the builder that finds it still broken
// renames it aside, deletes it and renames its build in.
func (c *Cache) Install(ctx context.Context, lock *Lock, index string) (*Env, error) {
	if err := lock.check(); err != nil {
		return nil, err
	}
	if lock.Python != c.Python.ID() {
		return nil, fmt.Errorf("pyenv: install %s: the lock was %w: it is for %s, this cache's interpreter is %s", lock.Root, ErrToolsChanged, lock.Python, c.Python.ID())
	}
	digest := lock.Digest()
	e, err := c.Get(digest)
	if err == nil {
		return e, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if lock.Installer != c.Installer.String() {
		return nil, fmt.Errorf("pyenv: install %s: the lock was %w: it was made by %s, this cache installs with %s", lock.Root, ErrToolsChanged, lock.Installer, c.Installer)
	}
	if err := c.keepLock(lock); err != nil {
		return nil, err
	}
	if index == "" {
		index = DefaultIndex
	}
	work, err := c.tempDir("env-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	env := filepath.Join(work, "env")
	if _, err := run(ctx, c.Python.environ, work, c.Python.Path, "-m", "venv", "--without-pip", env); err != nil {
		return nil, fmt.Errorf("pyenv: install %s: create venv: %w", lock.Root, err)
	}
	if err := c.Installer.install(ctx, lock, index, filepath.Join(env, "bin", "python"), work); err != nil {
		return nil, fmt.Errorf("pyenv: install %s with %s: %w", lock.Root, lock.Installer, err)
	}
	if err := checkInstalled(ctx, c.Python.environ, filepath.Join(env, "bin", "python"), lock); err != nil {
		return nil, fmt.Errorf("pyenv: install %s: %w", lock.Root, err)
	}
	if err := os.WriteFile(filepath.Join(env, lockFile), []byte(lock.Text()), 0o644); err != nil {
		return nil, err
	}
	if err := checkEnv(env, lock); err != nil {
		return nil, fmt.Errorf("pyenv: install %s: the new environment fails its own check: %w", lock.Root, err)
	}
	if err := readableByAll(env); err != nil {
		return nil, fmt.Errorf("pyenv: install %s: %w", lock.Root, err)
	}
	dst := filepath.Join(c.Dir, "envs", digest)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(env, dst); err != nil {
		// Another caller finished the same environment first: use theirs;
		// or what is there is not whole: replace it.
		if e, gerr := c.Get(digest); gerr == nil {
			return e, nil
		} else if !errors.Is(gerr, os.ErrNotExist) {
			return nil, gerr
		}
		return c.replace(env, lock)
	}
	return &Env{Dir: dst, Lock: lock}, nil
}

// replace puts the environment built at env in the place of envs/DIGEST,
// which was found not whole, unless another builder did so first. It
// holds an exclusive flock on heal.lock, so that of two builders finding
// the same broken directory only the first removes it: the second finds
// the first's whole environment and uses it.
func (c *Cache) replace(env string, lock *Lock) (*Env, error) {
	digest := lock.Digest()
	f, err := os.OpenFile(filepath.Join(c.Dir, "heal.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pyenv: install %s: %w", lock.Root, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return nil, fmt.Errorf("pyenv: install %s: lock heal.lock: %w", lock.Root, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if e, err := c.Get(digest); err == nil {
		return e, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := c.Remove(digest); err != nil {
		return nil, err
	}
	dst := filepath.Join(c.Dir, "envs", digest)
	if err := os.Rename(env, dst); err != nil {
		if e, gerr := c.Get(digest); gerr == nil {
			return e, nil
		}
		return nil, fmt.Errorf("pyenv: install %s: replace the incomplete environment: %w", lock.Root, err)
	}
	return &Env{Dir: dst, Lock: lock}, nil
}

// readableByAll adds read permission for everyone to every file and
// directory under root, and search permission to the directories and to
// the files someone may execute (chmod -R a+rX).
func readableByAll(root string) error {
	return filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.Type()&os.ModeSymlink != 0 {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode().Perm() | 0o444
		if d.IsDir() || mode&0o111 != 0 {
			mode |= 0o111
		}
		if mode == fi.Mode().Perm() {
			return nil
		}
		return os.Chmod(p, mode|fi.Mode()&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky))
	})
}

// List returns the digests of the cached environments, sorted.
func (c *Cache) List() ([]string, error) {
	ents, err := os.ReadDir(filepath.Join(c.Dir, "envs"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if isSHA256(e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// Remove deletes the environment of digest (no error if there is none),
// keeping its lock, so that Install of Lock(digest) makes it again. It
// first renames it out of envs/, so a concurrent Get or Install sees it
// whole or not at all; nothing may be running in it.
func (c *Cache) Remove(digest string) error {
	if !isSHA256(digest) {
		return fmt.Errorf("pyenv: %q is not an environment digest", digest)
	}
	dst, err := c.tempDir("rm-")
	if err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(c.Dir, "envs", digest), filepath.Join(dst, "env")); err != nil && !errors.Is(err, os.ErrNotExist) {
		os.Remove(dst)
		return fmt.Errorf("pyenv: remove %s: %w", digest, err)
	}
	return os.RemoveAll(dst)
}

// GC removes every environment and every kept lock whose digest keep
// rejects (nothing refers to it any more), and what processes that died
// left in tmp/ (their half-built environments and lock files), and
// returns the digests whose environment it removed. The lock of a digest
// keep accepts stays, whether its environment is there or not.
// Like Remove, it must not run while something uses an environment it
// removes. The cache must be on a file system only this host writes (tmp/
// entries are named by process id). It is a library function: lacuna's
// gc command does not call it (see the package comment for what a caller
// must keep).
func (c *Cache) GC(keep func(digest string) bool) ([]string, error) {
	ds, err := c.List()
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, d := range ds {
		if keep(d) {
			continue
		}
		if err := c.Remove(d); err != nil {
			return removed, err
		}
		removed = append(removed, d)
	}
	locks, err := os.ReadDir(filepath.Join(c.Dir, "locks"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return removed, err
	}
	for _, e := range locks {
		if isSHA256(e.Name()) && !keep(e.Name()) {
			if err := os.Remove(c.lockPath(e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return removed, err
			}
		}
	}
	ents, err := os.ReadDir(filepath.Join(c.Dir, "tmp"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return removed, err
	}
	for _, e := range ents {
		if pid, ok := tempPID(e.Name()); ok && !alive(pid) {
			if err := os.RemoveAll(filepath.Join(c.Dir, "tmp", e.Name())); err != nil {
				return removed, err
			}
		}
	}
	return removed, nil
}

// tempDir makes tmp/PREFIX-PID-RANDOM.
func (c *Cache) tempDir(prefix string) (string, error) {
	if err := os.MkdirAll(filepath.Join(c.Dir, "tmp"), 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(filepath.Join(c.Dir, "tmp"), prefix+strconv.Itoa(os.Getpid())+"-")
}

// tempPID is the process id in a tempDir name.
func tempPID(name string) (int, bool) {
	parts := strings.Split(name, "-")
	if len(parts) != 3 {
		return 0, false
	}
	pid, err := strconv.Atoi(parts[1])
	return pid, err == nil && pid > 0
}

// alive says whether process pid exists (EPERM: it does, another user's).
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
