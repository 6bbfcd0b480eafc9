package serve

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The real-server tests run llama.cpp's llama-server on SmolLM2-135M-Instruct:
//
//	export LACUNA_LLAMA_SERVER=$(runners/serve/testdata/build-llama-server.sh)
//	export LACUNA_GGUF=$(runners/serve/testdata/fetch-weights.sh smollm2)
//
// Without them they skip, except under CI=true, where they fail.
func realServer(t *testing.T) (bin, gguf string) {
	t.Helper()
	bin, gguf = os.Getenv("LACUNA_LLAMA_SERVER"), os.Getenv("LACUNA_GGUF")
	var missing []string
	if st, err := os.Stat(bin); bin == "" || err != nil || st.Mode()&0o111 == 0 {
		missing = append(missing, "LACUNA_LLAMA_SERVER (a llama-server binary: runners/serve/testdata/build-llama-server.sh)")
	}
	if _, err := os.Stat(gguf); gguf == "" || err != nil {
		missing = append(missing, "LACUNA_GGUF (a GGUF model: runners/serve/testdata/fetch-weights.sh)")
	}
	if len(missing) > 0 {
		msg := "real llama-server test needs " + strings.Join(missing, " and ")
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin, gguf
}

var ggufDigest = sync.OnceValues(func() (string, error) {
	f, err := os.Open(os.Getenv("LACUNA_GGUF"))
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
})

func smolSpec(t *testing.T) Spec {
	bin, gguf := realServer(t)
	digest, err := ggufDigest()
	if err != nil {
		t.Fatal(err)
	}
	return Spec{
		Kind:       LlamaCpp,
		Command:    []string{bin, "-t", "2"},
		Server:     "llama-cpp-python==0.3.36 vendor/llama.cpp",
		Weights:    []Weights{{Path: gguf, Digest: digest}},
		ServedName: "smollm2-135m",
		Needs:      Needs{ContextSize: 2048, ParallelSlots: 2},
	}
}

// logBuf collects a server's log and shows it when the test fails.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func serverLog(t *testing.T) *logBuf {
	l := &logBuf{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", l)
		}
	})
	return l
}

// post sends a JSON body and returns the status and decoded answer.
func post(t *testing.T, url string, body any) (int, map[string]any, string) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var v map[string]any
	json.Unmarshal(raw, &v)
	return resp.StatusCode, v, string(raw)
}

// processGone reports whether pid and its group have no live process left
// (a zombie is gone: it waits only for a parent to read its status).
func processGone(pid int) bool {
	_, err := startTime(pid)
	return groupGone(pid) && err != nil
}

func TestLlamaServerStartsAnswersAndStops(t *testing.T) {
	spec := smolSpec(t)
	state := t.TempDir()
	log := serverLog(t)
	ctx := context.Background()
	srv, err := Start(ctx, spec, WithLog(log), WithStateDir(state), WithStartTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	t.Logf("llama-server started (exec to ready) in %s at %s", srv.Startup(), srv.Endpoint())
	if srv.Spec().Port == 0 || !strings.HasPrefix(srv.Endpoint(), "http://127.0.0.1:") {
		t.Fatalf("endpoint %s, port %d", srv.Endpoint(), srv.Spec().Port)
	}
	if srv.Identity() != spec.Identity() {
		t.Fatal("the picked port changed the identity")
	}
	leases, _ := os.ReadDir(state)
	if len(leases) != 1 {
		t.Fatalf("%d files in the state directory, want the lease", len(leases))
	}
	if n, err := srv.Slots(ctx); err != nil || n != 2 {
		t.Fatalf("Slots = %d, %v; want the 2 asked for", n, err)
	}

	chat := map[string]any{
		"model":       spec.ServedName,
		"messages":    []map[string]string{{"role": "user", "content": "What is the capital of France? Answer in one word."}},
		"temperature": 0,
		"max_tokens":  12,
	}
	t0 := time.Now()
	code, ans, raw := post(t, srv.Endpoint()+"/chat/completions", chat)
	if code != 200 {
		t.Fatalf("chat: %d %s", code, raw)
	}
	content := ans["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	t.Logf("chat (temperature 0) in %s: %q; model field %v", time.Since(t0), content, ans["model"])
	if strings.TrimSpace(content) == "" {
		t.Fatal("empty chat answer")
	}
	if _, again, _ := post(t, srv.Endpoint()+"/chat/completions", chat); again["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"] != content {
		t.Error("temperature 0 answered twice differently")
	}

	code, ans, raw = post(t, srv.Endpoint()+"/completions", map[string]any{
		"model": spec.ServedName, "prompt": "The capital of France is", "max_tokens": 3, "temperature": 0, "logprobs": 3,
	})
	if code != 200 {
		t.Fatalf("completions: %d %s", code, raw)
	}
	choice := ans["choices"].([]any)[0].(map[string]any)
	lp, _ := choice["logprobs"].(map[string]any)
	if lp == nil {
		t.Fatalf("completions with logprobs: no logprobs in %s", raw)
	}
	tokens, _ := lp["content"].([]any)
	if len(tokens) == 0 {
		t.Fatalf("completions logprobs not in llama.cpp's {content: [...]} form: %s", raw)
	}
	first := tokens[0].(map[string]any)
	top, _ := first["top_logprobs"].([]any)
	if len(top) != 3 {
		t.Fatalf("first token: %d top logprobs, want 3: %v", len(top), first)
	}
	t.Logf("completion %q; first token %v logprob %v, top %v", choice["text"], first["token"], first["logprob"], top)

	stopStart := time.Now()
	if err := srv.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("llama-server stopped in %s", time.Since(stopStart))
	if !processGone(srv.PID()) {
		t.Fatalf("server process %d (or its group) survived Stop", srv.PID())
	}
	if leases, _ := os.ReadDir(state); len(leases) != 0 {
		t.Fatalf("lease left after Stop: %v", leases)
	}
	if err := srv.Stop(ctx); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestLlamaServerQuirks pins what llama-server does differently from
// OpenAI's API, which lacuna's client and scripted server must handle.
func TestLlamaServerQuirks(t *testing.T) {
	spec := smolSpec(t)
	ctx := context.Background()
	srv, err := Start(ctx, spec, WithLog(serverLog(t)), WithStartTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(ctx)
	chat := func(extra map[string]any) (int, map[string]any, string) {
		body := map[string]any{
			"model":       spec.ServedName,
			"messages":    []map[string]string{{"role": "user", "content": "Name a colour."}},
			"temperature": 0, "max_tokens": 8,
		}
		for k, v := range extra {
			body[k] = v
		}
		return post(t, srv.Endpoint()+"/chat/completions", body)
	}

	// Any model name is answered, as the served model.
	code, ans, raw := chat(map[string]any{"model": "no-such-model"})
	t.Logf("model=no-such-model: %d, answer's model %v", code, ans["model"])
	if code != 200 {
		t.Errorf("unknown model name: %d %s (llama-server used to answer any name)", code, raw)
	}

	// n > 1: answered up to the slot count, refused beyond it.
	code, ans, raw = chat(map[string]any{"n": 2, "temperature": 0.8})
	choices, _ := ans["choices"].([]any)
	t.Logf("n=2 with 2 slots: %d, %d choices", code, len(choices))
	if code != 200 || len(choices) != 2 {
		t.Errorf("n=2 with 2 slots: %d %.300s", code, raw)
	}
	code, _, raw = chat(map[string]any{"n": 3})
	t.Logf("n=3 with 2 slots: %d %.200s", code, raw)
	if code == 200 {
		t.Errorf("n=3 with 2 slots answered 200")
	}

	// response_format json_schema is honoured (compiled to a grammar).
	schema := map[string]any{
		"type": "object", "properties": map[string]any{"colour": map[string]any{"type": "string", "enum": []string{"red", "blue"}}},
		"required": []string{"colour"}, "additionalProperties": false,
	}
	code, ans, raw = chat(map[string]any{"max_tokens": 32, "response_format": map[string]any{
		"type": "json_schema", "json_schema": map[string]any{"name": "c", "schema": schema, "strict": true},
	}})
	if code != 200 {
		t.Fatalf("json_schema: %d %s", code, raw)
	}
	content := ans["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	var got struct{ Colour string }
	if err := json.Unmarshal([]byte(content), &got); err != nil || (got.Colour != "red" && got.Colour != "blue") {
		t.Errorf("json_schema answer %q does not hold the schema (%v)", content, err)
	}
	t.Logf("json_schema answer: %s", content)

	// response_format json_object: any JSON object.
	code, ans, raw = chat(map[string]any{"max_tokens": 24, "response_format": map[string]any{"type": "json_object"}})
	if code != 200 {
		t.Fatalf("json_object: %d %s", code, raw)
	}
	t.Logf("json_object answer: %q", ans["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"])

	// vLLM's own structured_outputs field is ignored without a word.
	code, ans, raw = chat(map[string]any{"structured_outputs": map[string]any{"choice": []string{"red", "blue"}}})
	if code != 200 {
		t.Errorf("structured_outputs: %d %s (it used to be ignored)", code, raw)
	}
	t.Logf("structured_outputs {choice}: %d %q", code, ans["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"])

	// Chat logprobs: OpenAI's {content: [{token, logprob, bytes, top_logprobs}]}.
	code, ans, raw = chat(map[string]any{"logprobs": true, "top_logprobs": 2})
	lp, _ := ans["choices"].([]any)[0].(map[string]any)["logprobs"].(map[string]any)
	if code != 200 || lp == nil || len(lp["content"].([]any)) == 0 {
		t.Errorf("chat logprobs: %d %.300s", code, raw)
	}

	// GET /v1/models answers while the server generates (older builds
	// blocked it, and lacuna's plan called a busy server unreachable).
	genDone := make(chan time.Time, 1)
	go func() {
		post(t, srv.Endpoint()+"/completions", map[string]any{
			"prompt": "Once upon a time", "temperature": 0, "max_tokens": 200, "ignore_eos": true,
		})
		genDone <- time.Now()
	}()
	time.Sleep(300 * time.Millisecond)
	if err := getJSON(ctx, strings.TrimSuffix(srv.Endpoint(), "/v1")+"/v1/models", nil); err != nil {
		t.Fatal(err)
	}
	modelsAt := time.Now()
	if end := <-genDone; end.Before(modelsAt) {
		t.Errorf("GET /v1/models answered only after the generation ended")
	} else {
		t.Logf("GET /v1/models answered %s before a generation ended", end.Sub(modelsAt))
	}

	// GET /props carries the slot count and the model's chat template.
	var props map[string]any
	if err := getJSON(ctx, strings.TrimSuffix(srv.Endpoint(), "/v1")+"/props", &props); err != nil {
		t.Fatal(err)
	}
	t.Logf("/props total_slots=%v, n_ctx=%v", props["total_slots"], props["default_generation_settings"].(map[string]any)["n_ctx"])
}

func TestStartFailsWithTheServersWords(t *testing.T) {
	spec := smolSpec(t)
	spec.Weights[0].Path = t.TempDir() + "/missing.gguf"
	t0 := time.Now()
	srv, err := Start(context.Background(), spec, WithStartTimeout(time.Minute))
	if err == nil {
		srv.Stop(context.Background())
		t.Fatal("a server without weights started")
	}
	t.Logf("failed in %s: %v", time.Since(t0), err)
	if !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), "missing.gguf") {
		t.Fatalf("error does not say the server exited, quoting its log: %v", err)
	}

	if n := childProcesses(t); n != 0 {
		t.Fatalf("%d child processes left after a failed start", n)
	}

	_, err = Start(context.Background(), smolSpec(t), WithStartTimeout(50*time.Millisecond))
	if err == nil || !strings.Contains(err.Error(), "not ready") {
		t.Fatalf("a start timeout of 50ms: %v", err)
	}
	t.Logf("timed out: %.200v", err)
	if n := childProcesses(t); n != 0 {
		t.Fatalf("%d child processes left after a start timed out", n)
	}
}

// childProcesses counts this process's live children (zombies aside).
func childProcesses(t *testing.T) int {
	t.Helper()
	dir, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	me, n := strconv.Itoa(os.Getpid()), 0
	for _, e := range dir {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := bytes.Fields(b[bytes.LastIndexByte(b, ')')+1:])
		if len(f) > 1 && string(f[1]) == me && string(f[0]) != "Z" {
			n++
		}
	}
	return n
}

// TestServeHelper is the process the kill tests kill: it starts a server
// with the state directory $SERVE_HELPER_STATE, prints its pid, and waits.
func TestServeHelper(t *testing.T) {
	state := os.Getenv("SERVE_HELPER_STATE")
	if state == "" {
		t.Skip("run by TestKill9OfTheOwnerLeavesNoServer")
	}
	parentDeathSignal = os.Getenv("SERVE_HELPER_PDEATHSIG") == "1"
	srv, err := Start(context.Background(), smolSpec(t), WithStateDir(state), WithStartTimeout(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("server %d\n", srv.PID())
	time.Sleep(10 * time.Minute)
}

func TestKill9OfTheOwnerLeavesNoServer(t *testing.T) {
	realServer(t)
	for _, tc := range []struct {
		name      string
		pdeathsig bool
	}{
		{"parent-death signal", true},
		{"no parent-death signal: Reap", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			state := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestServeHelper$", "-test.count=1")
			cmd.Env = append(os.Environ(), "SERVE_HELPER_STATE="+state, "SERVE_HELPER_PDEATHSIG="+map[bool]string{true: "1", false: "0"}[tc.pdeathsig])
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := 0
			sc := bufio.NewScanner(out)
			for pid == 0 && sc.Scan() {
				if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "server" {
					pid, _ = strconv.Atoi(f[1])
				}
			}
			if pid == 0 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the helper never reported its server")
			}
			leases, _ := os.ReadDir(state)
			if len(leases) != 1 || !groupAlive(pid) {
				t.Fatalf("before the kill: %d leases, server alive %v", len(leases), groupAlive(pid))
			}
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			t0 := time.Now()
			gone := groupGone(pid)
			if tc.pdeathsig {
				if !gone {
					t.Fatalf("server %d outlived its owner's kill -9 despite the parent-death signal", pid)
				}
				t.Logf("server gone %s after its owner's kill -9", time.Since(t0))
			} else if gone {
				t.Fatalf("server %d died with its owner without the death signal: this case tests nothing", pid)
			}
			t1 := time.Now()
			reaped, err := Reap(state)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("Reap took %s", time.Since(t1))
			if len(reaped) != 1 || reaped[0].PID != pid {
				t.Fatalf("Reap removed %+v, want the lease of server %d", reaped, pid)
			}
			if !processGone(pid) {
				t.Fatalf("server %d alive after Reap", pid)
			}
			if leases, _ := os.ReadDir(state); len(leases) != 0 {
				t.Fatalf("leases left: %v", leases)
			}
		})
	}
}

func TestPoolSharesOneServerUntilTheLastRelease(t *testing.T) {
	spec := smolSpec(t)
	state := t.TempDir()
	pool := NewPool(WithLog(serverLog(t)), WithStateDir(state), WithStartTimeout(2*time.Minute))
	ctx := context.Background()
	defer pool.Close(ctx)

	var wg sync.WaitGroup
	got := make([]*Server, 2)
	errs := make([]error, 2)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = pool.Acquire(ctx, spec)
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	srv := got[0]
	if got[1] != srv || pool.Holders(srv) != 2 {
		t.Fatalf("two acquirers got %p and %p, %d holders", got[0], got[1], pool.Holders(srv))
	}
	if leases, _ := os.ReadDir(state); len(leases) != 1 {
		t.Fatalf("%d leases: more than one server started", len(leases))
	}
	if err := pool.Release(ctx, srv); err != nil {
		t.Fatal(err)
	}
	if err := getJSON(ctx, strings.TrimSuffix(srv.Endpoint(), "/v1")+"/health", nil); err != nil {
		t.Fatalf("the server stopped with a holder left: %v", err)
	}
	if err := pool.Release(ctx, srv); err != nil {
		t.Fatal(err)
	}
	select {
	case <-srv.Exited():
	default:
		t.Fatal("the last release did not stop the server")
	}
	if !processGone(srv.PID()) {
		t.Fatal("server process left after the last release")
	}
	if err := pool.Release(ctx, srv); err == nil {
		t.Fatal("a third release of two acquires succeeded")
	}
	// The next Acquire starts a new server.
	again, err := pool.Acquire(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if again == srv || again.PID() == srv.PID() {
		t.Fatal("Acquire after the last release returned the stopped server")
	}
	if err := pool.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if !processGone(again.PID()) {
		t.Fatal("Close left a server running")
	}
	if _, err := pool.Acquire(ctx, spec); err != ErrPoolClosed {
		t.Fatalf("Acquire after Close: %v", err)
	}
}
