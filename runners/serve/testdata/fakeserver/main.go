// Command fakeserver is a stand-in for llama-server in tests: it takes
// llama-server's flags (-m GGUF --host --port --alias, -c, -np, --lora,
// --kv-unified, --no-ui, -t), reads the weights file it is given, and
// serves runners/llm/llmtest's scripted OpenAI-compatible API as the
// alias, plus GET /health. Every answer names the weights it read and
// their sha256 ("weights /path sha256:…"), so a test sees which file the
// server was given and that it could read it. SIGTERM or SIGINT stops it
// (exit 0) after printing "fakeserver: stopping on SIGNAL".
// FAKESERVER_DELAY (a duration) makes every answer take that long. It is built
// static (CGO_ENABLED=0) into the images of the container tests.
package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/runners/llm/llmtest"
)

// withValue are the flags that take a value; any other flag stands alone.
var withValue = map[string]bool{"-m": true, "--host": true, "--port": true, "--alias": true, "-c": true, "-np": true, "--lora": true, "-t": true}

func main() {
	flags := map[string]string{"--host": "127.0.0.1", "--port": "8080"}
	var loras []string
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !withValue[a] {
			continue
		}
		if i+1 == len(args) {
			fail("flag %s needs a value", a)
		}
		i++
		if a == "--lora" {
			loras = append(loras, args[i])
		}
		flags[a] = args[i]
	}
	weights := flags["-m"]
	if weights == "" {
		fail("no model (-m)")
	}
	alias := flags["--alias"]
	if alias == "" {
		alias = weights
	}
	desc := []string{describe("weights", weights)}
	for _, l := range loras {
		desc = append(desc, describe("lora", l))
	}
	answer := strings.Join(desc, "; ")
	var err error
	var delay time.Duration
	if d := os.Getenv("FAKESERVER_DELAY"); d != "" {
		if delay, err = time.ParseDuration(d); err != nil {
			fail("FAKESERVER_DELAY: %v", err)
		}
	}
	model := llmtest.New(llmtest.Config{Models: []string{alias}, Default: answer, Delay: delay})
	defer model.Close()
	backend, err := url.Parse(strings.TrimSuffix(model.URL(), "/v1"))
	if err != nil {
		fail("%v", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"status":"ok"}`)
	})
	mux.Handle("/", httputil.NewSingleHostReverseProxy(backend))
	addr := net.JoinHostPort(flags["--host"], flags["--port"])
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fail("listen: %v", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	fmt.Printf("fakeserver: serving %s on %s: %s\n", alias, ln.Addr(), answer)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	s := <-sig
	fmt.Printf("fakeserver: stopping on %v\n", s)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}

// describe is "what PATH sha256:HEX" for a file the server reads.
func describe(what, path string) string {
	f, err := os.Open(path)
	if err != nil {
		fail("%s: %v", what, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		fail("%s: %v", what, err)
	}
	return fmt.Sprintf("%s %s sha256:%s", what, path, hex.EncodeToString(h.Sum(nil)))
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fakeserver: "+format+"\n", args...)
	os.Exit(1)
}
