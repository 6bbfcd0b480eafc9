package pyenv

import (
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// pep691 is the JSON simple API's media type.
const pep691 = "application/vnd.pypi.simple.v1+json"

// cutoffIndex serves an upstream PEP 691 index on loopback with every
// file uploaded after a cutoff removed (files without a PEP 700
// upload-time removed too), file URLs made absolute: pip has no
// --exclude-newer, so pip resolves through one of these. It records what
// went wrong upstream, so a failed resolution can say it.
type cutoffIndex struct {
	upstream *url.URL
	cutoff   time.Time // zero: keep everything
	client   *http.Client
	srv      *http.Server
	ln       net.Listener

	mu        sync.Mutex
	errors    []string
	transient bool // an upstream request failed in a way a retry may not
}

func startCutoffIndex(upstream string, cutoff time.Time, client *http.Client) (*cutoffIndex, error) {
	if !strings.HasSuffix(upstream, "/") {
		upstream += "/"
	}
	u, err := url.Parse(upstream)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("pyenv: index URL %q: not an http(s) URL", upstream)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("pyenv: index: %w", err)
	}
	ix := &cutoffIndex{upstream: u, cutoff: cutoff, client: client, ln: ln}
	ix.srv = &http.Server{Handler: ix, ReadHeaderTimeout: time.Minute}
	go ix.srv.Serve(ln)
	return ix, nil
}

// URL is the index to hand pip.
func (ix *cutoffIndex) URL() string { return "http://" + ix.ln.Addr().String() + "/" }

func (ix *cutoffIndex) Close() { ix.srv.Close() }

// Transient says whether an upstream request failed transiently: no
// answer (unreachable, timed out, connection dropped) or 5xx or 429.
func (ix *cutoffIndex) Transient() bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.transient
}

// Errors are the upstream failures seen, in order.
func (ix *cutoffIndex) Errors() []string {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return append([]string(nil), ix.errors...)
}

// fail answers code with the message and records it; transient marks
// an upstream failure that a retry may not meet.
func (ix *cutoffIndex) fail(w http.ResponseWriter, code int, transient bool, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	ix.mu.Lock()
	ix.errors = append(ix.errors, msg)
	ix.transient = ix.transient || transient
	ix.mu.Unlock()
	http.Error(w, msg, code)
}

func (ix *cutoffIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.Trim(r.URL.Path, "/")
	if !validName(name) {
		http.NotFound(w, r)
		return
	}
	page, err := ix.upstream.Parse(Normalize(name) + "/")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), "GET", page.String(), nil)
	if err != nil {
		ix.fail(w, http.StatusBadGateway, false, "%s: %v", page, err)
		return
	}
	req.Header.Set("Accept", pep691)
	resp, err := ix.client.Do(req)
	if err != nil {
		ix.fail(w, http.StatusBadGateway, true, "index %s: %v", page, err)
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		ix.fail(w, http.StatusBadGateway, true, "index %s: %v", page, err)
		return
	}
	if resp.StatusCode != http.StatusOK {
		ix.fail(w, resp.StatusCode, resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests, "index %s answered %s", page, resp.Status)
		return
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != pep691 {
		ix.fail(w, http.StatusBadGateway, false, "index %s answered %q, not the PEP 691 JSON simple API", page, mt)
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(body, &doc); err != nil {
		ix.fail(w, http.StatusBadGateway, false, "index %s: bad JSON: %v", page, err)
		return
	}
	files, _ := doc["files"].([]any)
	kept := []any{}
	for _, f := range files {
		fm, ok := f.(map[string]any)
		if !ok {
			continue
		}
		if !ix.cutoff.IsZero() {
			ts, _ := fm["upload-time"].(string)
			t, err := time.Parse(time.RFC3339Nano, ts)
			if err != nil || t.After(ix.cutoff) {
				continue
			}
		}
		// PEP 714's old name for core-metadata: pip before 23.1 (Debian's
		// system pip 23.0.1) fails with a TypeError on its hashes form.
		delete(fm, "dist-info-metadata")
		if s, ok := fm["url"].(string); ok {
			if abs, err := page.Parse(s); err == nil {
				fm["url"] = abs.String()
			}
		}
		kept = append(kept, fm)
	}
	doc["files"] = kept
	out, err := json.Marshal(doc)
	if err != nil {
		ix.fail(w, http.StatusInternalServerError, false, "%v", err)
		return
	}
	w.Header().Set("Content-Type", pep691)
	w.Write(out)
}
