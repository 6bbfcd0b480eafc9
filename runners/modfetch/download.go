package modfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/dirhash"
	modzip "golang.org/x/mod/zip"
)

// sumGolangOrg is the public key of the Go checksum database, as the go
// command knows it.
const sumGolangOrg = "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8"

// Fetcher downloads module versions into a cache directory, checked as
// the go command checks them: the zip's h1: hash must match the checksum
// database (Env.SumDB, default sum.golang.org, reached through the proxy)
// unless Env.NoSumDB / Env.Private exempt the module or SumDB is "off".
// Its methods are safe for concurrent use.
type Fetcher struct {
	Proxy *Proxy
	// Dir holds extracted modules: Dir/ESCAPED_PATH@VERSION.
	Dir string

	sumdb     *sumdb.Client // nil: no checksum database
	ops       *sumdbOps
	sumdbName string
	mu        sync.Mutex
}

// Module is a downloaded module version.
type Module struct {
	Path, Version string
	Dir           string // the extracted tree
	Hash          string // h1: hash of the zip
	Verified      string // "sumdb NAME", or why it was not checked
}

// NewFetcher configures a Fetcher from env (the proxy chain, the checksum
// database and the modules exempt from it), caching checksum-database
// state under dir/sumdb.
func NewFetcher(dir string, env Env) (*Fetcher, error) {
	p, err := NewProxy(env)
	if err != nil {
		return nil, err
	}
	f := &Fetcher{Proxy: p, Dir: dir}
	gosumdb := env.SumDB
	if gosumdb == "" {
		gosumdb = "sum.golang.org"
	}
	if gosumdb == "off" {
		return f, nil
	}
	key, remote, _ := strings.Cut(gosumdb, " ")
	if key == "sum.golang.org" {
		key = sumGolangOrg
	}
	name, _, _ := strings.Cut(key, "+")
	f.ops = &sumdbOps{name: name, key: key, remote: strings.TrimSuffix(remote, "/"), proxy: p, dir: filepath.Join(dir, "sumdb")}
	f.sumdb = sumdb.NewClient(f.ops)
	f.sumdbName = name
	exempt := env.NoSumDB
	if exempt == "" {
		exempt = env.Private
	}
	f.sumdb.SetGONOSUMDB(exempt)
	return f, nil
}

// Download fetches, verifies and extracts mod@version, or returns the copy
// already in the cache. A checksum mismatch is a security error and leaves
// nothing behind.
func (f *Fetcher) Download(ctx context.Context, mod, version string) (*Module, error) {
	esc, err := module.EscapePath(mod)
	if err != nil {
		return nil, err
	}
	ev, err := module.EscapeVersion(version)
	if err != nil {
		return nil, err
	}
	dst := filepath.Join(f.Dir, esc+"@"+ev)
	marker := dst + ".lacuna-hash"
	if b, err := os.ReadFile(marker); err == nil {
		hash, verified, _ := strings.Cut(strings.TrimSpace(string(b)), "\t")
		return &Module{Path: mod, Version: version, Dir: dst, Hash: hash, Verified: verified}, nil
	}
	data, err := f.Proxy.get(ctx, mod, "@v/"+ev+".zip")
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return nil, err
	}
	zf, err := os.CreateTemp(f.Dir, ".zip-*")
	if err != nil {
		return nil, err
	}
	defer os.Remove(zf.Name())
	if _, err := zf.Write(data); err != nil {
		zf.Close()
		return nil, err
	}
	zf.Close()
	hash, err := dirhash.HashZip(zf.Name(), dirhash.Hash1)
	if err != nil {
		return nil, fmt.Errorf("%s@%s: hash zip: %w", mod, version, err)
	}
	verified, err := f.verify(mod, version, hash)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(f.Dir, ".extract-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// modzip.Unzip enforces the module zip rules: no paths outside the
	// module, no duplicate or oversized files.
	if err := modzip.Unzip(filepath.Join(tmp, "m"), module.Version{Path: mod, Version: version}, zf.Name()); err != nil {
		return nil, fmt.Errorf("%s@%s: %w", mod, version, err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return nil, err
	}
	if err := os.Rename(filepath.Join(tmp, "m"), dst); err != nil && !errors.Is(err, os.ErrExist) {
		if _, statErr := os.Stat(dst); statErr != nil { // not a concurrent download of the same version
			return nil, err
		}
	}
	if err := os.WriteFile(marker, []byte(hash+"\t"+verified+"\n"), 0o644); err != nil {
		return nil, err
	}
	return &Module{Path: mod, Version: version, Dir: dst, Hash: hash, Verified: verified}, nil
}

// verify checks an h1: hash against the checksum database.
func (f *Fetcher) verify(mod, version, hash string) (string, error) {
	if f.sumdb == nil {
		return "not checked: GOSUMDB=off", nil
	}
	f.mu.Lock()
	lines, err := f.sumdb.Lookup(mod, version)
	security := f.ops.takeSecurityErrors()
	f.mu.Unlock()
	if errors.Is(err, sumdb.ErrGONOSUMDB) {
		return "not checked: GONOSUMDB/GOPRIVATE", nil
	}
	if err != nil && len(security) > 0 {
		// The database contradicted itself (or an earlier view of it):
		// the message says how, and belongs in the error the user sees.
		return "", fmt.Errorf("%s@%s: checksum database %s: %w\n%s", mod, version, f.sumdbName, err, strings.Join(security, "\n"))
	}
	if err != nil {
		return "", fmt.Errorf("%s@%s: checksum database: %w", mod, version, err)
	}
	want := mod + " " + version + " " + hash
	for _, l := range lines {
		if l == want {
			return "sumdb " + f.sumdbName, nil
		}
	}
	return "", fmt.Errorf("SECURITY ERROR: %s@%s: downloaded zip has %s, but the checksum database %s says %q; not using it", mod, version, hash, f.sumdbName, strings.Join(lines, "; "))
}

// sumdbOps connects the sumdb client to the proxy's /sumdb/ passthrough
// (or the URL given in GOSUMDB) and keeps its state on disk.
type sumdbOps struct {
	name, key, remote string
	proxy             *Proxy
	dir               string
	mu                sync.Mutex
	security          []string // SecurityError messages not yet reported
}

func (o *sumdbOps) ReadRemote(path string) ([]byte, error) {
	ctx := context.Background()
	if o.remote != "" {
		return o.proxy.fetch(ctx, o.remote+path)
	}
	var last error = ErrNotFound
	for _, e := range o.proxy.entries {
		if !strings.HasPrefix(e.base, "http") {
			continue
		}
		b, err := o.proxy.fetch(ctx, e.base+"/sumdb/"+o.name+path)
		if err == nil {
			return b, nil
		}
		last = err
	}
	return nil, fmt.Errorf("checksum database %s through GOPROXY: %w", o.name, last)
}

func (o *sumdbOps) ReadConfig(file string) ([]byte, error) {
	if file == "key" {
		return []byte(o.key), nil
	}
	b, err := os.ReadFile(filepath.Join(o.dir, "config", url.PathEscape(file)))
	if errors.Is(err, os.ErrNotExist) {
		return []byte{}, nil
	}
	return b, err
}

func (o *sumdbOps) WriteConfig(file string, old, new []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	p := filepath.Join(o.dir, "config", url.PathEscape(file))
	cur, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !bytes.Equal(cur, old) {
		return sumdb.ErrWriteConflict
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, new, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (o *sumdbOps) ReadCache(file string) ([]byte, error) {
	return os.ReadFile(filepath.Join(o.dir, "cache", filepath.FromSlash(file)))
}

func (o *sumdbOps) WriteCache(file string, data []byte) {
	p := filepath.Join(o.dir, "cache", filepath.FromSlash(file))
	if os.MkdirAll(filepath.Dir(p), 0o755) == nil {
		os.WriteFile(p, data, 0o644)
	}
}

func (o *sumdbOps) Log(string) {}

// SecurityError records the client's message: verify returns it as part
// of the lookup's error (a library never prints).
func (o *sumdbOps) SecurityError(msg string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.security = append(o.security, msg)
}

func (o *sumdbOps) takeSecurityErrors() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	msgs := o.security
	o.security = nil
	return msgs
}
