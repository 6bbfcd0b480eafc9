package pyenv

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Pip is the pip installer: the pip that the interpreter's ensurepip
// bundles, in a tool venv of its own (no network needed to set it up); it
// installs into an environment with `pip --python`, so it must be pip
// 22.3 or newer (Python 3.11.7 bundles 23.2.1).
// pip has no --exclude-newer: it resolves through a loopback index that
// drops the files uploaded after Spec.ExcludeNewer (so the upstream index
// must serve the PEP 691 JSON API with PEP 700 upload times, as PyPI
// does). Resolution is `pip install --dry-run --report` with
// --prefer-binary (an older wheel over a newer sdist); the report names
// the one file pip chose for each distribution and its sha256.
type Pip struct {
	tool    string // the tool venv's interpreter
	version string // "pip 23.2.1"
	cache   string
	opt     Options
	env     []string
	client  *http.Client
}

var _ Installer = (*Pip)(nil)

// NewPip prepares the pip installer under dir (dir/pip-PYTHON-VERSION:
// its tool venv, dir/pip-cache: pip's download cache) for py.
func NewPip(ctx context.Context, dir string, py *Python, opt Options) (*Pip, error) {
	client, err := httpClient(opt.CertFile)
	if err != nil {
		return nil, err
	}
	venv := filepath.Join(dir, "pip-"+py.Implementation+py.Version+"-"+py.Platform)
	tool := filepath.Join(venv, "bin", "python")
	if err := toolVenv(ctx, venv, py, nil); err != nil {
		return nil, fmt.Errorf("pyenv: pip: %w", err)
	}
	out, err := run(ctx, py.environ, "", tool, "-m", "pip", "--version")
	if err != nil {
		return nil, fmt.Errorf("pyenv: pip --version: %w", err)
	}
	f := strings.Fields(string(out)) // pip 23.2.1 from ... (python 3.11)
	if len(f) < 2 || f[0] != "pip" {
		return nil, fmt.Errorf("pyenv: pip --version said %q", out)
	}
	return &Pip{tool: tool, version: "pip " + f[1], cache: filepath.Join(dir, "pip-cache"), opt: opt, env: py.environ, client: client}, nil
}

func (p *Pip) String() string { return p.version }

func (p *Pip) args(ix *cutoffIndex) []string {
	a := []string{"--index-url", ix.URL(), "--cache-dir", p.cache, "--prefer-binary", "--progress-bar", "off"}
	if p.opt.CertFile != "" {
		a = append(a, "--cert", p.opt.CertFile)
	}
	return a
}

// pipReport is the part of pip's installation report (--report) read.
type pipReport struct {
	Install []struct {
		DownloadInfo struct {
			URL         string `json:"url"`
			ArchiveInfo struct {
				Hash   string            `json:"hash"`
				Hashes map[string]string `json:"hashes"`
			} `json:"archive_info"`
		} `json:"download_info"`
		Metadata struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"metadata"`
	} `json:"install"`
}

func (p *Pip) resolve(ctx context.Context, py *Python, spec Spec, work string) ([]Package, error) {
	ix, err := startCutoffIndex(spec.index(), spec.ExcludeNewer, p.client)
	if err != nil {
		return nil, err
	}
	defer ix.Close()
	report := filepath.Join(work, "report.json")
	args := append([]string{"-m", "pip", "install", "--dry-run", "--ignore-installed", "--report", report},
		p.args(ix)...)
	args = append(args, spec.Name+"=="+spec.Version)
	if _, err := run(ctx, p.env, work, p.tool, args...); err != nil {
		return nil, indexError(fmt.Sprintf("pyenv: resolve %s with %s", spec, p), err, ix)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, fmt.Errorf("pyenv: resolve %s: %w", spec, err)
	}
	var r pipReport
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("pyenv: resolve %s: pip's report: %w", spec, err)
	}
	var pkgs []Package
	for _, in := range r.Install {
		h := in.DownloadInfo.ArchiveInfo.Hashes["sha256"]
		if alg, v, ok := strings.Cut(in.DownloadInfo.ArchiveInfo.Hash, "="); h == "" && ok && alg == "sha256" {
			h = v
		}
		pkg := Package{Name: Normalize(in.Metadata.Name), Version: in.Metadata.Version, Files: []string{path.Base(in.DownloadInfo.URL)}}
		if h != "" {
			pkg.SHA256 = []string{h}
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs, nil
}

func (p *Pip) install(ctx context.Context, lock *Lock, index, target, work string) error {
	ix, err := startCutoffIndex(index, time.Time{}, p.client)
	if err != nil {
		return err
	}
	defer ix.Close()
	req := filepath.Join(work, "requirements.txt")
	if err := os.WriteFile(req, []byte(requirements(lock)), 0o644); err != nil {
		return err
	}
	args := append([]string{"-m", "pip", "--python", target, "install", "--no-deps", "--require-hashes", "--quiet"}, p.args(ix)...)
	args = append(args, "-r", req)
	if _, err := run(ctx, p.env, work, p.tool, args...); err != nil {
		return indexError("pip install", err, ix)
	}
	return nil
}

// requirements is lock as a hash-pinned requirements file.
func requirements(lock *Lock) string {
	var b strings.Builder
	for _, pkg := range lock.Packages {
		b.WriteString(pkg.Name + "==" + pkg.Version)
		for _, h := range pkg.SHA256 {
			b.WriteString(" --hash=sha256:" + h)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// indexError adds what the index answered to a failed run's error, and
// ErrUnavailable when the failure is transient.
func indexError(what string, err error, ix *cutoffIndex) error {
	if errs := ix.Errors(); len(errs) > 0 {
		err = fmt.Errorf("%s: %s\n%w", what, strings.Join(errs, "; "), err)
	} else {
		err = fmt.Errorf("%s: %w", what, err)
	}
	if ix.Transient() || transient(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// httpClient trusts the system's certificate authorities and certFile's.
func httpClient(certFile string) (*http.Client, error) {
	if certFile == "" {
		return http.DefaultClient, nil
	}
	pem, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("pyenv: certificates: %w", err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("pyenv: certificates: no PEM certificate in %s", certFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool}
	return &http.Client{Transport: t}, nil
}

// toolVenv makes sure venv holds a venv of py for one of lacuna's tools:
// built in a temporary sibling directory, set up there by setup (given
// the new venv's python; nil: nothing to add), marked complete and
// renamed into place, so a half-made one is never used. Concurrent
// callers are safe: the first rename wins and the others use its venv.
func toolVenv(ctx context.Context, venv string, py *Python, setup func(python string) error) error {
	done := filepath.Join(venv, ".lacuna-ok")
	if _, err := os.Stat(done); err == nil {
		return nil
	}
	dir := filepath.Dir(venv)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(dir, "."+filepath.Base(venv)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	v := filepath.Join(tmp, "v")
	if _, err := run(ctx, py.environ, tmp, py.Path, "-m", "venv", v); err != nil {
		return fmt.Errorf("create a venv with %s -m venv (is python3-venv installed?): %w", py.Path, err)
	}
	if setup != nil {
		if err := setup(filepath.Join(v, "bin", "python")); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(v, ".lacuna-ok"), nil, 0o644); err != nil {
		return err
	}
	if err := os.Rename(v, venv); err != nil {
		if _, serr := os.Stat(done); serr != nil {
			return err
		}
	}
	return nil
}
