package modfetch

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/runners/modfetch/proxytest"
	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/sumdb/note"
)

const libMod = "module example.com/lib\n\ngo 1.21\n"

// checksumDB stands up a signed checksum database that answers with the
// real hashes of the zips in the proxy, except for versions in lie.
func checksumDB(t *testing.T, zips map[string]string, lie map[string]bool) (gosumdb string) {
	t.Helper()
	skey, vkey, err := note.GenerateKey(rand.Reader, "test.sumdb")
	if err != nil {
		t.Fatal(err)
	}
	return checksumDBWithKey(t, skey, vkey, zips, lie)
}

// checksumDBWithKey is checksumDB signing with the given key: two of them
// with one key are a forked database.
func checksumDBWithKey(t *testing.T, skey, vkey string, zips map[string]string, lie map[string]bool) (gosumdb string) {
	t.Helper()
	modHash, _ := dirhash.Hash1([]string{"go.mod"}, func(string) (io.ReadCloser, error) {
		return io.NopCloser(strings.NewReader(libMod)), nil
	})
	ts := sumdb.NewTestServer(skey, func(path, vers string) ([]byte, error) {
		h, err := dirhash.HashZip(zips[vers], dirhash.Hash1)
		if err != nil {
			return nil, err
		}
		if lie[vers] {
			h = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
		}
		return []byte(path + " " + vers + " " + h + "\n" + path + " " + vers + "/go.mod " + modHash + "\n"), nil
	})
	srv := httptest.NewServer(sumdb.NewServer(ts))
	t.Cleanup(srv.Close)
	return vkey + " " + srv.URL
}

func TestDownloadVerifiesAgainstTheChecksumDatabase(t *testing.T) {
	proxy, cache := t.TempDir(), t.TempDir()
	proxytest.Write(proxy, "example.com/lib", map[string]string{"v1.0.0": "2024-01-01", "v1.0.1": "2024-02-01"}, libMod)
	zips := map[string]string{}
	for _, v := range []string{"v1.0.0", "v1.0.1"} {
		zp, err := proxytest.WriteZip(proxy, "example.com/lib", v, map[string]string{
			"go.mod": libMod, "lib.go": "package lib\n\n// Hello greets.\nfunc Hello() string { return \"" + v + "\" }\n",
		})
		if err != nil {
			t.Fatal(err)
		}
		zips[v] = zp
	}
	env := Env{Proxy: "file://" + proxy, SumDB: checksumDB(t, zips, map[string]bool{"v1.0.1": true})}
	f, err := NewFetcher(cache, env)
	if err != nil {
		t.Fatal(err)
	}
	m, err := f.Download(context.Background(), "example.com/lib", "v1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if src, _ := os.ReadFile(filepath.Join(m.Dir, "lib.go")); !bytes.Contains(src, []byte(`"v1.0.0"`)) || m.Verified != "sumdb test.sumdb" {
		t.Errorf("module %+v, lib.go %q", m, src)
	}
	again, err := f.Download(context.Background(), "example.com/lib", "v1.0.0")
	if err != nil || again.Hash != m.Hash || again.Verified != m.Verified {
		t.Errorf("cached download: %+v %v", again, err)
	}
	// The database says otherwise for v1.0.1: refuse it, keep nothing.
	_, err = f.Download(context.Background(), "example.com/lib", "v1.0.1")
	if err == nil || !strings.Contains(err.Error(), "SECURITY ERROR") {
		t.Fatalf("tampered version: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "example.com", "lib@v1.0.1")); err == nil {
		t.Error("a module that failed verification was extracted")
	}
	// GONOSUMDB exempts a module from the database, and says so.
	env.NoSumDB = "example.com"
	f2, _ := NewFetcher(t.TempDir(), env)
	m2, err := f2.Download(context.Background(), "example.com/lib", "v1.0.1")
	if err != nil || !strings.HasPrefix(m2.Verified, "not checked") {
		t.Errorf("GONOSUMDB: %+v %v", m2, err)
	}
}

// TestAForkedChecksumDatabaseIsASecurityErrorInTheResult: a database that
// contradicts what it signed before is a security error the caller gets
// in the returned error (a library never prints it).
func TestAForkedChecksumDatabaseIsASecurityErrorInTheResult(t *testing.T) {
	proxy, cache := t.TempDir(), t.TempDir()
	if err := proxytest.Write(proxy, "example.com/lib", map[string]string{"v1.0.0": "2024-01-01", "v1.0.1": "2024-02-01"}, libMod); err != nil {
		t.Fatal(err)
	}
	zips := map[string]string{}
	for _, v := range []string{"v1.0.0", "v1.0.1"} {
		zp, err := proxytest.WriteZip(proxy, "example.com/lib", v, map[string]string{"go.mod": libMod, "lib.go": "package lib\n"})
		if err != nil {
			t.Fatal(err)
		}
		zips[v] = zp
	}
	skey, vkey, err := note.GenerateKey(rand.Reader, "test.sumdb")
	if err != nil {
		t.Fatal(err)
	}
	a := checksumDBWithKey(t, skey, vkey, zips, nil)
	b := checksumDBWithKey(t, skey, vkey, zips, nil)
	// b's log starts with v1.0.1, a's with v1.0.0: two trees of one size,
	// both signed.
	_, bURL, _ := strings.Cut(b, " ")
	resp, err := http.Get(bURL + "/lookup/example.com/lib@v1.0.1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	f, err := NewFetcher(cache, Env{Proxy: "file://" + proxy, SumDB: a})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Download(context.Background(), "example.com/lib", "v1.0.0"); err != nil {
		t.Fatal(err)
	}
	forked, err := NewFetcher(cache, Env{Proxy: "file://" + proxy, SumDB: b}) // the same saved state
	if err != nil {
		t.Fatal(err)
	}
	_, err = forked.Download(context.Background(), "example.com/lib", "v1.0.1")
	if err == nil || !strings.HasPrefix(err.Error(), "example.com/lib@v1.0.1: checksum database test.sumdb: ") || !strings.Contains(err.Error(), "SECURITY ERROR\ngo.sum database server misbehavior detected!") {
		t.Fatalf("forked database: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cache, "example.com", "lib@v1.0.1")); err == nil {
		t.Error("a module that failed verification was extracted")
	}
}
