package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lacuna-dev/lacuna/internal/tailbuf"
)

// Defaults for Start's options.
const (
	// DefaultStartTimeout bounds the wait for health: vLLM loading a large
	// model (and compiling its graphs) takes minutes; a small GGUF seconds.
	DefaultStartTimeout = 15 * time.Minute
	// DefaultStopGrace is how long Stop waits after SIGTERM before SIGKILL.
	DefaultStopGrace = 10 * time.Second
)

type options struct {
	log          io.Writer
	stateDir     string
	startTimeout time.Duration
	grace        time.Duration
	env          []string
	poll         time.Duration
}

// Option configures Start (and a Pool's starts).
type Option func(*options)

// WithLog streams the server's standard output and error to w (written by
// one goroutine at a time). Default: discarded, though Start's errors
// quote the log's last lines.
func WithLog(w io.Writer) Option { return func(o *options) { o.log = w } }

// WithStateDir names the directory where Start leaves the server's lease
// (Lease) for Reap. Default: none, and then a server orphaned where the
// parent-death signal does not reach it (outside Linux, or a container
// engine's process) is not found by Reap.
func WithStateDir(dir string) Option { return func(o *options) { o.stateDir = dir } }

// WithStartTimeout bounds the wait for the server to be healthy and list
// its model (default, and for d <= 0, DefaultStartTimeout).
func WithStartTimeout(d time.Duration) Option { return func(o *options) { o.startTimeout = d } }

// WithStopGrace is how long Stop waits after SIGTERM before SIGKILL
// (default DefaultStopGrace; 0: SIGKILL at once).
func WithStopGrace(d time.Duration) Option { return func(o *options) { o.grace = d } }

// WithEnv gives the server exactly this environment ("KEY=value" pairs).
// Default: the server inherits this process's environment.
func WithEnv(env []string) Option {
	return func(o *options) { o.env = slices.Clone(env) }
}

func newOptions(opts []Option) options {
	o := options{log: io.Discard, startTimeout: DefaultStartTimeout, grace: DefaultStopGrace, poll: 100 * time.Millisecond}
	for _, f := range opts {
		f(&o)
	}
	if o.log == nil {
		o.log = io.Discard
	}
	if o.startTimeout <= 0 {
		o.startTimeout = DefaultStartTimeout
	}
	if o.grace < 0 {
		o.grace = 0
	}
	return o
}

// Server is a model server Start started. Its methods are safe for
// concurrent use; Stop may be called any number of times (the first does
// the work, the others wait for it and return its result).
type Server struct {
	spec     Spec // with the port Start picked
	identity string
	endpoint string
	pid      int
	start    uint64
	name     string   // the wrapped instance's name, "" without a Wrapper
	remove   []string // the Wrapper's remove command
	lease    string   // lease file, "" without a state directory
	grace    time.Duration
	startup  time.Duration
	tail     tail

	done    chan struct{} // closed when the process has been waited for
	waitErr error         // valid after done

	stopOnce sync.Once
	stopErr  error
}

// Endpoint is the server's OpenAI-compatible base URL, e.g.
// "http://127.0.0.1:41234/v1" (the runners/llm Endpoint.BaseURL).
func (s *Server) Endpoint() string { return s.endpoint }

// Spec is the spec the server was started from, with the port it listens on.
func (s *Server) Spec() Spec { return s.spec }

// Identity is Spec.Identity of the server's spec.
func (s *Server) Identity() string { return s.identity }

// PID is the server process's id, the leader of its own process group
// (with a Wrapper, the wrapper's client: a container engine's).
func (s *Server) PID() int { return s.pid }

// Container is the name Start gave a wrapped server's instance (e.g. its
// container's), "" for a server run as this process's child.
func (s *Server) Container() string { return s.name }

// Startup is how long the server took from exec to ready (healthy and
// listing its model).
func (s *Server) Startup() time.Duration { return s.startup }

// Exited is closed once the server process has exited (Stop, or a crash).
func (s *Server) Exited() <-chan struct{} { return s.done }

// Slots is how many requests the server decodes at once: llama-server's
// total_slots from GET /props; for vLLM, Needs.ParallelSlots (0: not
// known, vLLM's default scheduler batches up to 256 or so). A client's
// concurrency should not exceed it: requests beyond it queue inside the
// server, where a client timeout cannot cancel them.
func (s *Server) Slots(ctx context.Context) (int, error) {
	if s.spec.Kind != LlamaCpp {
		return s.spec.Needs.ParallelSlots, nil
	}
	var props struct {
		TotalSlots int `json:"total_slots"`
	}
	if err := getJSON(ctx, strings.TrimSuffix(s.endpoint, "/v1")+"/props", &props); err != nil {
		return 0, err
	}
	if props.TotalSlots <= 0 {
		return 0, errors.New("llama-server /props: no total_slots")
	}
	return props.TotalSlots, nil
}

// Start runs the server spec describes and returns once it is ready: GET
// /health answers 200 and GET /v1/models lists ServedName (and, for vLLM,
// every adapter's name). The process runs in its own process group with
// the parent-death signal set (Linux: it is killed when this process
// dies, kill -9 included), its output goes to WithLog's writer, and its
// lease goes to WithStateDir's directory until Stop. ctx bounds only the
// start: cancelling it later does not stop the server. On any failure
// (invalid spec, exec error, exit before ready, timeout, ctx cancelled)
// the process group is killed (and a wrapped instance removed) and the
// error quotes the log's last lines.
//
// With a Wrapper, what runs is the wrapper's command for a fresh instance
// name, and the lease also holds its remove command. The start timeout
// then covers what the wrapper does first (a container engine pulling the
// image).
//
// With Port 0 Start picks a free port on the listening host; another
// process could take it before the server binds it, and then the start
// fails with the server's bind error.
func Start(ctx context.Context, spec Spec, opts ...Option) (*Server, error) {
	o := newOptions(opts)
	dial := dialHost(spec.host())
	if spec.Port == 0 {
		p, err := freePort(dial)
		if err != nil {
			return nil, fmt.Errorf("start %s: pick a port: %w", spec.ServedName, err)
		}
		spec.Port = p
	}
	name := ""
	if spec.Wrapper != nil {
		name = instanceName()
	}
	argv, remove, err := spec.wrap(name)
	if err != nil {
		return nil, err
	}
	t := tail{tailbuf.New(8 << 10)}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = o.env
	if len(spec.Env) > 0 {
		if cmd.Env == nil {
			cmd.Env = os.Environ()
		}
		cmd.Env = append(slices.Clone(cmd.Env), spec.Env...)
	}
	out := io.MultiWriter(o.log, t)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	cmd.WaitDelay = 2 * time.Second
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", spec.ServedName, err)
	}
	s := &Server{
		spec:     spec,
		identity: spec.Identity(),
		endpoint: "http://" + net.JoinHostPort(dial, strconv.Itoa(spec.Port)) + "/v1",
		pid:      cmd.Process.Pid,
		name:     name,
		remove:   remove,
		grace:    o.grace,
		tail:     t,
		done:     make(chan struct{}),
	}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.done)
	}()
	fail := func(err error) (*Server, error) {
		s.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start %s (%s): %w%s", spec.ServedName, argv[0], err, s.tail.quote())
	}
	s.start, err = startTime(s.pid)
	if err != nil {
		return fail(fmt.Errorf("server exited at once: %w", err))
	}
	if o.stateDir != "" {
		owner := os.Getpid()
		ownerStart, err := startTime(owner)
		if err != nil {
			return fail(err)
		}
		s.lease, err = writeLease(o.stateDir, Lease{
			PID: s.pid, StartTime: s.start, Owner: owner, OwnerStartTime: ownerStart,
			Identity: s.identity, Endpoint: s.endpoint, Argv: argv, Started: t0.UTC(),
			Container: name, Remove: remove,
		})
		if err != nil {
			return fail(fmt.Errorf("write lease: %w", err))
		}
	}
	if err := s.waitReady(ctx, o.startTimeout, o.poll); err != nil {
		return fail(err)
	}
	s.startup = time.Since(t0)
	return s, nil
}

// waitReady polls /health, then /v1/models, until both answer as a ready
// server does, the process exits, the timeout passes or ctx is done.
func (s *Server) waitReady(ctx context.Context, timeout, poll time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	root := strings.TrimSuffix(s.endpoint, "/v1")
	want := []string{s.spec.ServedName}
	if s.spec.Kind == VLLM || s.spec.Kind == Transformers {
		for _, a := range s.spec.Adapters {
			want = append(want, a.Name)
		}
	}
	var last error
	for {
		last = s.ready(ctx, root, want)
		if last == nil {
			return nil
		}
		select {
		case <-s.done:
			return fmt.Errorf("server exited before it was ready: %v", s.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("not ready (%w; start timeout %s): %v", ctx.Err(), timeout, last)
		case <-time.After(poll):
		}
	}
}

func (s *Server) ready(ctx context.Context, root string, want []string) error {
	if err := getJSON(ctx, root+"/health", nil); err != nil {
		return err
	}
	var models struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := getJSON(ctx, root+"/v1/models", &models); err != nil {
		return err
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	for _, w := range want {
		if !slices.Contains(ids, w) {
			return fmt.Errorf("/v1/models lists %q, not %q", ids, w)
		}
	}
	return nil
}

var probe = &http.Client{Timeout: 10 * time.Second}

// getJSON GETs url and decodes a 200 answer into v (nil: the body is
// ignored). Any other status is an error.
func getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := probe.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.200s", url, resp.Status, body)
	}
	if v == nil {
		return nil
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

// Stop ends the server: SIGTERM to its process group, SIGKILL to the
// group after the grace period (WithStopGrace) or once ctx is done, then a
// last SIGKILL to the group for anything that outlived the server, and,
// for a wrapped server, the Wrapper's remove command. It returns once the
// server process has been waited for, and removes the lease (kept when
// the server could not be ended, for Reap). An exit caused by Stop's signals is not an error; a server that
// had already exited with a failure reports it.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *Server) stop(ctx context.Context) error {
	var exitErr error
	select {
	case <-s.done:
		// Exited by itself: a crash is worth reporting.
		if s.waitErr != nil {
			exitErr = fmt.Errorf("server %s had exited: %w", s.spec.ServedName, s.waitErr)
		}
	default:
		signalGroup(s.pid, syscall.SIGTERM)
		timer := time.NewTimer(s.grace)
		select {
		case <-s.done:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	signalGroup(s.pid, syscall.SIGKILL)
	<-s.done
	// The leader is gone; whatever it spawned in its group goes too.
	err := killRest(s.pid)
	if s.remove != nil {
		// A wrapped server may outlive its client (a container engine
		// keeps the container of a killed client): remove it, also when
		// ctx is done, which is when it matters most.
		if rerr := runRemove(context.WithoutCancel(ctx), s.remove); rerr != nil {
			err = errors.Join(err, fmt.Errorf("remove server %s: %w", s.name, rerr))
		}
	}
	if s.lease != "" && err == nil {
		if rerr := os.Remove(s.lease); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			err = errors.Join(err, rerr)
		}
	}
	return errors.Join(exitErr, err)
}

func signalGroup(pid int, sig syscall.Signal) {
	// ESRCH: the group is gone already, which is what we want.
	_ = syscall.Kill(-pid, sig)
}

// dialHost is the address to reach a server listening on host.
func dialHost(host string) string {
	switch host {
	case "0.0.0.0", "":
		return "127.0.0.1"
	case "::", "[::]":
		return "::1"
	}
	return strings.Trim(host, "[]")
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail keeps the end of the server's log, for error messages.
type tail struct{ *tailbuf.Buffer }

// quote is the last lines of the log, indented, for an error message.
func (t tail) quote() string {
	lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return "\nserver log (last lines):\n\t" + strings.Join(lines, "\n\t")
}
