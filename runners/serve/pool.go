package serve

import (
	"context"
	"errors"
	"strings"
	"sync"
)

// Pool shares model servers among the nodes of a run: Acquire starts a
// server on its first use and hands the same *Server to every later
// Acquire of an equal spec (equal Identity and command line, wrapped
// if it has a Wrapper; a spec with Port 0 matches another with Port 0), counting holders; Release stops it when
// the last holder releases it. Close stops them all (a run interrupted or
// failed). A Pool is safe for concurrent use; its zero value starts
// servers with Start's defaults. It must not be copied after first use.
//
// Concurrent Acquires of one spec start one server: the first starts it
// under its own ctx, the others wait for it (each may give up when its
// ctx is done) and share its error if the start fails. A server that has
// exited on its own (a crash) is replaced by a new one on the next
// Acquire; its earlier holders keep the dead one and should Release it.
type Pool struct {
	opts []Option

	mu      sync.Mutex
	entries map[string]*poolEntry  // by shareKey: the server new Acquires get
	held    map[*Server]*poolEntry // every server with holders, replaced ones too
	closed  bool
}

type poolEntry struct {
	key   string
	ready chan struct{} // closed once the start has finished
	srv   *Server       // valid after ready, nil when err
	err   error
	refs  int
}

// NewPool returns a pool whose servers start with opts (WithLog,
// WithStateDir, …).
func NewPool(opts ...Option) *Pool { return &Pool{opts: opts} }

// ErrPoolClosed is returned by Acquire after Close.
var ErrPoolClosed = errors.New("serve: pool closed")

func shareKey(spec Spec) (string, error) {
	// One name for every start: the key is what runs, not which instance.
	argv, _, err := spec.wrap(namePrefix)
	if err != nil {
		return "", err
	}
	return spec.Identity() + "\x00" + strings.Join(argv, "\x00"), nil
}

// Acquire returns a running server for spec, starting it if no equal one
// runs, and counts the caller as a holder until Release.
func (p *Pool) Acquire(ctx context.Context, spec Spec) (*Server, error) {
	key, err := shareKey(spec)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if p.entries == nil {
		p.entries = map[string]*poolEntry{}
		p.held = map[*Server]*poolEntry{}
	}
	e := p.entries[key]
	if e != nil && e.srv != nil {
		select {
		case <-e.srv.Exited():
			delete(p.entries, key) // crashed: replace it
			e = nil
		default:
		}
	}
	if e == nil {
		e = &poolEntry{key: key, ready: make(chan struct{}), refs: 1}
		p.entries[key] = e
		p.mu.Unlock()
		srv, err := Start(ctx, spec, p.opts...)
		p.mu.Lock()
		if err == nil && p.closed {
			err = ErrPoolClosed
			defer srv.Stop(context.WithoutCancel(ctx))
		}
		if err != nil {
			e.err = err
			if p.entries[key] == e {
				delete(p.entries, key)
			}
		} else {
			e.srv = srv
			p.held[srv] = e
		}
		close(e.ready)
		p.mu.Unlock()
		return e.srv, e.err
	}
	e.refs++
	p.mu.Unlock()
	select {
	case <-e.ready:
		if e.err != nil {
			return nil, e.err
		}
		return e.srv, nil
	case <-ctx.Done():
		// The starter holds a reference until its start ends, so only a
		// start that has ended (and been released) can lose its last here.
		p.mu.Lock()
		e.refs--
		orphan := e.refs == 0 && e.srv != nil && p.held[e.srv] == e
		if orphan {
			delete(p.held, e.srv)
			if p.entries[e.key] == e {
				delete(p.entries, e.key)
			}
		}
		p.mu.Unlock()
		if orphan {
			e.srv.Stop(context.WithoutCancel(ctx))
		}
		return nil, ctx.Err()
	}
}

// Release ends the caller's hold on srv (from Acquire); the last release
// stops the server (Server.Stop with ctx) and returns Stop's error. A
// server not held from this pool is an error.
func (p *Pool) Release(ctx context.Context, srv *Server) error {
	p.mu.Lock()
	e := p.held[srv]
	if e == nil {
		p.mu.Unlock()
		return errors.New("serve: release of a server this pool does not hold")
	}
	e.refs--
	last := e.refs == 0
	if last {
		delete(p.held, srv)
		if p.entries[e.key] == e {
			delete(p.entries, e.key)
		}
	}
	p.mu.Unlock()
	if last {
		return srv.Stop(ctx)
	}
	return nil
}

// Holders is how many holders the server has (0: not held by this pool).
func (p *Pool) Holders(srv *Server) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := p.held[srv]; e != nil {
		return e.refs
	}
	return 0
}

// Close stops every server of the pool whatever its holders (a run
// interrupted by SIGINT, or failed) and makes later Acquires fail with
// ErrPoolClosed; servers still starting are stopped when their start
// ends. It returns the servers' Stop errors.
func (p *Pool) Close(ctx context.Context) error {
	p.mu.Lock()
	p.closed = true
	var srvs []*Server
	for srv := range p.held {
		srvs = append(srvs, srv)
	}
	clear(p.held)
	clear(p.entries)
	p.mu.Unlock()
	var errs []error
	for _, s := range srvs {
		errs = append(errs, s.Stop(ctx))
	}
	return errors.Join(errs...)
}
