package pyenv

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// quickPip is the shared pip with one retry and a 1 s timeout, so that
// tests of failing servers end in seconds.
func quickPip(t *testing.T) *Cache {
	c := pipCache(t)
	p := *shared.pip
	p.env = append(append([]string(nil), p.env...), "PIP_RETRIES=1", "PIP_TIMEOUT=1")
	c.Installer = &p
	return c
}

// failing serves ix except where bad (for pages, or for files) answers.
func failing(t *testing.T, ix *fixtureIndex, files bool, bad http.HandlerFunc) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/files/") == files {
			bad(w, r)
			return
		}
		ix.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/simple/"
}

var (
	answer503 = func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}
	answer429 = func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "slow down", http.StatusTooManyRequests)
	}
	// dropConnection closes the connection without an answer.
	dropConnection = func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	}
	// cutShort promises a long body, sends a little and closes.
	cutShort = func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 100000\r\n\r\nPK\x03\x04")
		buf.Flush()
		conn.Close()
	}
	// hang answers nothing until the client gives up.
	hang = func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
)

// TestTransientFailuresAreErrUnavailable: an index or file host that
// answers 5xx or 429, drops the connection or hangs makes Create's error
// wrap ErrUnavailable, naming the release; a failure that would recur
// (404, no installable file, a conflict, garbage) does not.
func TestTransientFailuresAreErrUnavailable(t *testing.T) {
	c := quickPip(t)
	ix := standardIndex(t)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", pep691)
		w.Write([]byte("<html>not json"))
	}))
	defer garbage.Close()
	unreachable := httptest.NewServer(http.NotFoundHandler())
	unreachable.Close()
	for _, tc := range []struct {
		name, spec string
		index      string
		transient  bool
	}{
		{"index answers 503", "alpha==1.0", failing(t, ix, false, answer503), true},
		{"index answers 429", "alpha==1.0", failing(t, ix, false, answer429), true},
		{"index drops the connection", "alpha==1.0", failing(t, ix, false, dropConnection), true},
		{"index hangs", "alpha==1.0", failing(t, ix, false, hang), true},
		{"index unreachable", "alpha==1.0", unreachable.URL + "/simple/", true},
		{"file host answers 503", "alpha==1.0", failing(t, ix, true, answer503), true},
		{"file host answers 504", "alpha==1.0", failing(t, ix, true, func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, "upstream timed out", http.StatusGatewayTimeout)
		}), true},
		{"file host answers 429", "alpha==1.0", failing(t, ix, true, answer429), true},
		{"file host drops the connection", "alpha==1.0", failing(t, ix, true, dropConnection), true},
		{"file host cuts a download short", "alpha==1.0", failing(t, ix, true, cutShort), true},
		{"file host hangs", "alpha==1.0", failing(t, ix, true, hang), true},
		{"index 404", "nosuch==1.0", ix.URL(), false},
		{"no such version", "alpha==9.9", ix.URL(), false},
		{"no wheel and the sdist fails", "gamma==1.0", ix.URL(), false},
		{"dependency conflict", "delta==1.0", ix.URL(), false},
		{"index answers garbage", "alpha==1.0", garbage.URL + "/simple/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name, ver, _ := strings.Cut(tc.spec, "==")
			_, err := c.Create(context.Background(), Spec{Name: name, Version: ver, IndexURL: tc.index})
			if err == nil {
				t.Fatal("no error")
			}
			t.Log(err)
			if got := errors.Is(err, ErrUnavailable); got != tc.transient {
				t.Errorf("errors.Is(err, ErrUnavailable) = %v, want %v", got, tc.transient)
			}
			if !strings.Contains(err.Error(), tc.spec) {
				t.Errorf("error does not name %s", tc.spec)
			}
		})
	}
}

// TestStoppedInstallerIsErrUnavailable: an installer run ended by ctx is
// transient.
func TestStoppedInstallerIsErrUnavailable(t *testing.T) {
	c := quickPip(t)
	ix := standardIndex(t)
	ctx, cancel := context.WithCancel(context.Background())
	url := failing(t, ix, false, func(w http.ResponseWriter, r *http.Request) { cancel(); <-r.Context().Done() })
	_, err := c.Create(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: url})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("Create stopped by ctx: %v, want ErrUnavailable and context.Canceled", err)
	}
}

// TestInstallFromAnUnavailableFileHostIsErrUnavailable: installing a
// resolved lock when the file host answers 503 is transient too.
func TestInstallFromAnUnavailableFileHostIsErrUnavailable(t *testing.T) {
	c := quickPip(t)
	ix := standardIndex(t)
	ctx := context.Background()
	lock, err := c.Resolve(ctx, Spec{Name: "alpha", Version: "1.0", IndexURL: ix.URL()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Install(ctx, lock, failing(t, ix, true, answer503))
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "alpha==1.0") {
		t.Errorf("Install with the file host answering 503: %v, want ErrUnavailable naming alpha==1.0", err)
	}
	t.Log(err)
	if ds, _ := c.List(); len(ds) != 0 {
		t.Errorf("a failed install left environments %v", ds)
	}
}

// TestKilledInstallerIsTransient: an installer run killed by a signal is
// transient; one that exits with a failure and no network message is
// not.
func TestKilledInstallerIsTransient(t *testing.T) {
	for _, tc := range []struct {
		script string
		want   bool
	}{
		{"kill -KILL $$", true},
		{"echo 'ERROR: No matching distribution found for alpha==1.0' >&2; exit 1", false},
	} {
		_, err := run(context.Background(), nil, "", "/bin/sh", "-c", tc.script)
		if err == nil {
			t.Fatalf("%s: no error", tc.script)
		}
		if got := transient(err); got != tc.want {
			t.Errorf("%s: transient(%v) = %v, want %v", tc.script, err, got, tc.want)
		}
	}
}
