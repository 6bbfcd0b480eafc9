package main

import (
	"cmp"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRealModelSliceResumesAfterKill9 runs pipelines/quickstart.hcl as
// shipped, its model slice bounded by its variables to one real library
// (zerolog, through the Go module proxy) and 2 C1-kept tasks × 3 cells,
// on SmolLM2-135M-Instruct served by a llama-server lacuna starts:
// generate → solve → judge → metrics. lacuna is killed with SIGKILL in
// the middle of the generate calls; the resumed run asks the server only
// the calls not answered before (counted from the server's log), and a
// third run is all cached without asking it anything. The metrics rows
// are checked against the judge rows they sum up (their values are the
// tiny model's, near zero: not asserted).
//
// One call at a time (concurrency = 1, so the server has one slot) and
// one server thread (realModel): calls in flight together on two cores
// all finish at about the same time, so a kill would lose all but one of
// them, and the slice took 4m04s with the default concurrency against
// 2m36s with one at the same load.
func TestRealModelSliceResumesAfterKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real model on real modules")
	}
	server, gguf := realModel(t)
	reachModuleProxy(t, "github.com/rs/zerolog")
	if out, err := exec.Command("go", "env", "GOCACHE").Output(); err == nil {
		t.Setenv("LACUNA_GOCACHE", strings.TrimSpace(string(out))) // the sandbox's builds reuse the standard library's
	}
	pipeline, err := filepath.Abs("../../pipelines/quickstart.hcl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// The weights under a path of this test's, to tell its server from
	// any other test's on the machine.
	weights := filepath.Join(dir, "smollm2.gguf")
	if err := os.Symlink(gguf, weights); err != nil {
		t.Fatal(err)
	}
	const (
		modelID = "HuggingFaceTB/SmolLM2-135M-Instruct"
		tasks   = 2
		calls   = tasks * 3 // cells baseline, S and Full; one sample each
		target  = `node.metrics.slice["table"]`
	)
	store := filepath.Join(dir, ".lacuna")
	vars := []string{"--store", store, "--var", "gguf=" + weights, "--var", "llama_server=" + server, "--var", "model_id=" + modelID,
		"--var", "max_tokens=128", "--var", "concurrency=1", "--var", `slice_libraries=["zerolog"]`, "--var", fmt.Sprintf("slice_tasks=%d", tasks)}
	run := append(append([]string{"run"}, vars...), pipeline, "--target", target, "--json")
	cached := func() int { return cachedCalls(store) }
	processed := func() int { return serverRequests(store) }

	start := time.Now()
	deadline := start.Add(12 * time.Minute)
	var liveAtKill []string
	if !killMidRun(t, dir, nil, func(string) bool {
		stop := cached() >= calls/2 || time.Now().After(deadline)
		if stop {
			liveAtKill = liveServers(t, store)
		}
		return stop
	}, run...) {
		t.Fatalf("the run ended before the kill, with %d of %d calls cached", cached(), calls)
	}
	if len(liveAtKill) != 1 {
		t.Errorf("servers running at the kill, by their leases: %v; want lacuna's one", liveAtKill)
	}
	killed := time.Since(start)
	before, asked := cached(), processed()
	if before == 0 || before >= calls {
		t.Fatalf("killed after %v with %d of %d calls cached: want mid-generate", killed.Round(time.Second), before, calls)
	}
	time.Sleep(500 * time.Millisecond)
	if live := liveServers(t, store); len(live) > 0 {
		t.Errorf("the model server survived lacuna's kill -9: %v", live)
	}

	r := lacuna(t, dir, run...)
	if r.code != 0 {
		t.Fatalf("resumed run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	total := processed()
	t.Logf("killed after %v with %d of %d calls answered (%d requests processed); the resume processed %d requests; %v in all",
		killed.Round(time.Second), before, calls, asked, total-asked, time.Since(start).Round(time.Second))
	if total-asked != calls-before {
		t.Errorf("the resumed run made %d requests, want the %d calls not answered before the kill", total-asked, calls-before)
	}
	if asked > before+1 {
		t.Errorf("%d requests before the kill for %d answers: more than the one call in flight", asked, before)
	}
	if n := cached(); n != calls {
		t.Errorf("%d calls cached after the resumed run, want %d", n, calls)
	}

	r = lacuna(t, dir, run...)
	s := summary(t, r.stdout)
	// The 6 model-free stages of zerolog, 3 cells × generate, solve and
	// judge, and the metrics.
	if r.code != 0 || s["executed"] != 0.0 || s["cached"] != 16.0 {
		t.Errorf("a third run: exit %d, %v: want all 16 nodes cached\n%s", r.code, s, r.stderr)
	}
	if n := processed(); n != total {
		t.Errorf("the third run asked the model %d more times", n-total)
	}

	// What the slice wrote: each cell's sample of the first 2 tasks C1
	// keeps, judged, and the metrics of the judge rows.
	var kept []string
	for _, row := range catJSONL(t, dir, vars, pipeline, `node.c1.lib["zerolog"]`) {
		if row["keep"] == true {
			kept = append(kept, row["task_id"].(string))
		}
	}
	slices.Sort(kept)
	if len(kept) < tasks {
		t.Fatalf("C1 keeps %d of zerolog's tasks, want at least %d", len(kept), tasks)
	}
	kept = kept[:tasks]
	var judged []map[string]any
	for _, cell := range []string{"baseline", "S", "Full"} {
		gen := catJSONL(t, dir, vars, pipeline, `node.generate.slice["zerolog/`+cell+`"]`)
		rows := catJSONL(t, dir, vars, pipeline, `node.judge.slice["zerolog/`+cell+`"]`)
		var ids []string
		for _, row := range rows {
			ids = append(ids, row["task_id"].(string))
			if row["cell"] != cell || row["model"] != modelID || row["kind"] != "model" {
				t.Errorf("judge %s: a row of cell %v, model %v, kind %v", cell, row["cell"], row["model"], row["kind"])
			}
			if row["class"] == "OK" != (row["passed"] == true) {
				t.Errorf("judge %s: task %v passed %v but class %v", cell, row["task_id"], row["passed"], row["class"])
			}
		}
		slices.Sort(ids)
		if len(gen) != tasks || !slices.Equal(ids, kept) {
			t.Errorf("cell %s: %d answers, judged tasks %v: want one sample of each of %v", cell, len(gen), ids, kept)
		}
		judged = append(judged, rows...)
	}
	metrics := catJSONL(t, dir, vars, pipeline, target)
	checkSliceMetrics(t, judged, metrics)
	for _, m := range metrics {
		if m["difficulty"] == "all" && m["library"] == "all" {
			t.Logf("%s: %v tasks, pass@1 %v%%, API_acc %v%%, Param_corr %v%%", m["cell"], m["tasks"], m["pass_at_1"], m["api_acc"], m["param_corr"])
		}
	}
}

// checkSliceMetrics checks the metrics node's rows against the judge
// rows they sum up (one greedy sample a task): one row per model × cell
// × difficulty (or all) × library (or all) with a sample, its counts, and
// pass@1, API_acc, Param_corr and each failure class's share of the
// failures as percentages (rounded to 0.01).
func checkSliceMetrics(t *testing.T, judged, metrics []map[string]any) {
	t.Helper()
	type group struct{ model, cell, difficulty, library string }
	groups := map[group][]map[string]any{}
	for _, j := range judged {
		for _, d := range []string{j["difficulty"].(string), "all"} {
			for _, l := range []string{j["library"].(string), "all"} {
				g := group{j["model"].(string), j["cell"].(string), d, l}
				groups[g] = append(groups[g], j)
			}
		}
	}
	if len(metrics) != len(groups) {
		t.Errorf("%d metrics rows for the %d groups of the judge rows", len(metrics), len(groups))
	}
	classes := map[string]string{"wrong_syntax": "WrongSyntax", "wrong_api_selection": "WrongAPISelection", "wrong_import": "WrongImport",
		"wrong_param": "WrongParam", "wrong_shape_dtype": "WrongShapeDtype", "wrong_logic": "WrongLogic", "unclassified": ""} // "": any other class
	known := map[any]bool{}
	for _, c := range classes {
		known[c] = c != ""
	}
	for _, m := range metrics {
		g := group{m["model"].(string), m["cell"].(string), m["difficulty"].(string), m["library"].(string)}
		rows, ok := groups[g]
		if !ok {
			t.Errorf("a metrics row of %v, which no judge row has", g)
			continue
		}
		delete(groups, g)
		var passed, api, failures, corrN int
		var corr float64
		for _, j := range rows {
			if j["passed"] == true {
				passed++
			} else {
				failures++
			}
			if j["api_called"] == true {
				api++
			}
			if v, ok := j["param_corr"].(float64); ok {
				corr += v
				corrN++
			}
		}
		n := float64(len(rows))
		want := map[string]any{"tasks": n, "greedy": n, "samples": 0.0, "failures": float64(failures), "not_run": 0.0,
			"pass_at_1": pct(float64(passed) / n), "api_acc": pct(float64(api) / n), "param_corr": nil}
		if corrN > 0 {
			want["param_corr"] = pct(corr / float64(corrN))
		}
		for col, class := range classes {
			want[col] = nil
			if failures > 0 {
				k := 0
				for _, j := range rows {
					if j["passed"] != true && (j["class"] == class || class == "" && !known[j["class"]]) {
						k++
					}
				}
				want[col] = pct(float64(k) / float64(failures))
			}
		}
		for col, w := range want {
			got := m[col]
			wf, wok := w.(float64)
			gf, gok := got.(float64)
			if wok != gok || (wok && math.Abs(wf-gf) > 0.006) || (!wok && got != nil) {
				t.Errorf("metrics %v: %s = %v, want %v from its %d judge rows", g, col, got, w, len(rows))
			}
		}
	}
	for g := range groups {
		t.Errorf("no metrics row for %v", g)
	}
}

// pct is a fraction as the metrics node writes it: a percentage rounded
// to 0.01.
func pct(x float64) float64 { return math.Round(x*10000) / 100 }

// reachModuleProxy skips the test (CI=true: fails it) when the module
// proxy lacuna would use (GOPROXY's first entry, by default
// proxy.golang.org) does not list mod's versions.
func reachModuleProxy(t *testing.T, mod string) {
	t.Helper()
	entries := strings.FieldsFunc(cmp.Or(os.Getenv("GOPROXY"), "https://proxy.golang.org"), func(r rune) bool { return r == ',' || r == '|' })
	if len(entries) == 0 {
		return
	}
	proxy := strings.TrimSuffix(strings.TrimSpace(entries[0]), "/")
	if !strings.HasPrefix(proxy, "https://") && !strings.HasPrefix(proxy, "http://") {
		return // a file:// proxy, off or direct: the run says what it finds
	}
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get(proxy + "/" + mod + "/@v/list")
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			err = fmt.Errorf("HTTP %s", resp.Status)
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the Go module proxy %s: %v", proxy, err)
		}
		t.Skipf("the Go module proxy %s: %v", proxy, err)
	}
}
