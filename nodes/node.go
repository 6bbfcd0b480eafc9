// Package nodes defines what a node type is. Each node family lives in a
// sub-package (generic, discovery, bundle, ...) and registers its types in
// init; the engine finds them here by name. Nodes never talk to each other
// except through the artifacts the engine hands them.
package nodes

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/parquet-go/parquet-go"
	"github.com/zclconf/go-cty/cty"
)

// Type is a node type: what `node "TYPE" "NAME" { ... }` instantiates.
//
// NewConfig returns a pointer to a zero config struct. Its fields carry
// `hcl:"name"` or `hcl:"name,optional"` tags and may be: strings, bools,
// numbers, pointers to those (nil when omitted), slices and maps of them,
// cty.Value, Ref or []Ref (input artifacts: these are the graph's edges)
// and Expr (an expression evaluated at run time, such as a row predicate).
// The decoded struct, with input refs replaced by their content digests,
// is part of the action key. Three more tags: `row:"ATTR"` on an Expr field
// whose `row` is a row of the artifact in attribute ATTR (the engine then
// checks the expression against that artifact's declared columns before
// the run), `removed:"DETAIL"` on a field kept only so that setting it
// is an error with DETAIL (`lacuna types` hides it), and `path:"file"` or
// `path:"dir"` on a string field naming a file or directory relative to
// the pipeline (`lacuna validate` reports one that does not exist at the
// attribute).
//
// Most types embed Static[C, R] or Dynamic[C] (typed.go), which provide
// NewConfig and declare the output schema (Typed).
//
// Version names the type's logic. Bump it whenever Run would compute
// different rows from the same config and inputs: it is in every key, so
// the bump recomputes exactly the nodes of this type and what depends on
// them.
//
// Run reads its inputs and writes exactly one output artifact through r.
// It must be deterministic given its config and inputs; anything else it
// depends on must be pinned through Resolver.
type Type interface {
	Name() string
	Version() string
	NewConfig() any
	Run(ctx context.Context, r Run) error
}

// Resolver is implemented by node types whose output depends on something
// outside the pipeline: a file's content, a module proxy's version list,
// the go command and its build settings, the sandbox, an image digest, a
// model revision.
//
// Resolve runs once per instance per run (and per plan), before the action
// key is computed, and what it returns is pinned, as BuildKit's ops resolve
// their sources once for both the cache key and the execution:
// Pinned.Identity enters the key and the provenance record, and
// Pinned.Value is handed to Run (Run.Pinned), which must compute from it
// and never consult the outside world again for what it pinned. So a key
// always describes what its rows were computed from: a file edited between
// Resolve and Run is detected (Run reads the pinned content or fails), not
// cached under the old key.
//
// Identity values are short and readable ("go1.26.8", a digest): `lacuna
// plan` shows them when they change ("identity changed: toolchain go1.26.8
// → go1.27.0"). Resolve may be called from many goroutines at once, for
// different instances.
type Resolver interface {
	Resolve(ctx context.Context, r Resolve) (*Pinned, error)
}

// Resolve is what a Resolver sees: the instance's config and place, the
// environment the CLI handed to the run (the only way node code reads the
// environment) and the store's cache directories. Its methods are safe for
// concurrent use.
type Resolve interface {
	// Config is the decoded config struct (what NewConfig returned).
	Config() any
	// Node is the instance's address.
	Node() string
	// Dir is the directory of the pipeline file, for relative paths.
	Dir() string
	// Getenv returns a variable of the environment the run was started
	// with ("" when unset). What a node reads here and depends on must be
	// in its Identity.
	Getenv(key string) string
	// Environ is that whole environment, as KEY=value strings.
	Environ() []string
	// CacheDir is Run.CacheDir.
	CacheDir(name string) (string, error)
}

// Pinned is what Resolve fixed for one execution.
type Pinned struct {
	// Identity enters the action key, sorted by name.
	Identity map[string]string
	// Value is handed to Run as Run.Pinned(); nil when Run needs nothing.
	Value any
}

// Validator checks a decoded config beyond types. Return ConfigErrors so
// that the user sees the attribute at fault.
type Validator interface {
	Validate(cfg any) error
}

// Documented types describe themselves for `lacuna types`.
type Documented interface {
	Doc() string
}

// ConfigError is a config problem at one attribute.
type ConfigError struct {
	Attr    string // the attribute at fault ("" for the whole block)
	Summary string
	Detail  string
}

func (e *ConfigError) Error() string {
	if e.Detail == "" {
		return e.Summary
	}
	return e.Summary + ": " + e.Detail
}

// Errorf builds a ConfigError for attribute attr.
func Errorf(attr, summary, format string, args ...any) *ConfigError {
	return &ConfigError{Attr: attr, Summary: summary, Detail: fmt.Sprintf(format, args...)}
}

// Ref is a reference to another node's output artifact, as written in HCL
// (`input = node.import.tools`). Node is the producing instance's address.
type Ref struct {
	Node string
}

func (r Ref) String() string { return r.Node }

// Expr is an expression kept unevaluated until Run, with the values of
// everything it referenced at load time (variables, locals, each). Tag the
// field `roots:"row"` to name the extra variables Run will supply.
type Expr struct {
	Expr hcl.Expression
	Ctx  *hcl.EvalContext
	// Text is the expression's tokens without spaces or comments; with the
	// captured values it is what the action key sees.
	Text string
}

// Eval evaluates the expression with extra top-level variables (row, ...).
func (e Expr) Eval(extra map[string]cty.Value) (cty.Value, hcl.Diagnostics) {
	ctx := e.Ctx.NewChild()
	ctx.Variables = extra
	return e.Expr.Value(ctx)
}

// Run is a node's view of its execution: its config, its inputs and its
// single output. Implementations are provided by the engine.
//
// Concurrency: a Run value belongs to one execution of one instance and is
// valid only until the node's Run method returns. The engine runs
// different instances at once, each with its own Run. Within one
// execution, Logf, Progress, Status, Note, Report, Calls, PutBlob, Input,
// InputDigest, Config, Node, Dir and CacheDir may be called from any
// goroutine the node starts (the engine serialises what they record);
// Output must be called once, and the Writer it returns is not safe for
// concurrent writes. Nothing may be called after Run has returned.
type Run interface {
	// Config is the decoded config struct (what NewConfig returned).
	Config() any
	// Node is the instance's address, e.g. node.sample.tiers["easy"].
	Node() string
	// Dir is the directory of the pipeline file, for relative paths.
	Dir() string
	// Input opens an input artifact, verified.
	Input(ref Ref) (*artifacts.Reader, error)
	// Pinned is the Value the type's Resolve returned for this execution
	// (nil for types that are not Resolvers).
	Pinned() any
	// InputDigest is an input's content digest, known without reading it.
	InputDigest(ref Ref) artifacts.Digest
	// Output creates the node's output artifact with the given schema.
	// Call it once; the engine commits it when Run returns nil. A Typed
	// type's schema must be the one it declares (CheckOutput), or Output
	// fails.
	Output(schema *parquet.Schema) (*artifacts.Writer, error)
	// Previous opens this node's output from its last successful run, if
	// the store still has it: a node may reuse parts of it, as long as
	// what it reuses is verified against the current inputs' digests.
	Previous() (*artifacts.Reader, bool)
	// PutBlob stores a large non-tabular output (streamed: any size) and
	// records it in the action, so gc keeps it while the action is kept.
	// Rows refer to it by its digest in a blob column (a string column
	// whose name ends in _blob or _blobs: artifacts.IsBlobColumn). A
	// directory goes through PutBlobDir.
	PutBlob(r io.Reader) (artifacts.Digest, error)
	// Logf appends to the node's log, kept with its provenance.
	Logf(format string, args ...any)
	// Progress reports work done; total may be 0 when unknown.
	Progress(done, total int64)
	// Note sets the node's one-line result summary ("669 APIs, 428 novel,
	// 212 kept"): lacuna run prints it, also when the result is cached.
	Note(format string, args ...any)
	// Calls is the store's cache of completed model calls, shared by
	// every run and process (runners/llm reads and writes it).
	Calls() CallCache
	// Report attaches a named JSON-encodable record to the node's
	// provenance (a model's usage: calls, tokens, latency percentiles,
	// retries); lacuna show prints it. The last value for a name wins.
	Report(name string, v any)
	// Status is a one-line live description of the work in progress
	// ("120/600 calls, 14.2 calls/s, 3.1k tok/s"), shown beside Progress.
	Status(format string, args ...any)
	// CacheDir is a directory under the store shared by every run, for
	// caches whose content is checked on use (verified module downloads,
	// the Go build cache). It is not an artifact: deleting it costs only
	// time.
	CacheDir(name string) (string, error)
}

// BlobRun is implemented by a Run that can read blobs (the engine's).
// Node code calls OpenBlob and ExtractBlob below rather than asserting
// it. Both methods may be called from any goroutine of the node.
type BlobRun interface {
	// OpenBlob opens a blob, verifying it as it is read
	// (artifacts.Store.OpenBlob).
	OpenBlob(d artifacts.Digest) (*artifacts.BlobReader, error)
	// ExtractBlob unpacks a directory blob into dir, published only once
	// verified (artifacts.Store.ExtractBlob).
	ExtractBlob(d artifacts.Digest, dir string) error
}

// PutBlobDir stores directory dir as one blob through r.PutBlob (its
// canonical tar, artifacts.PackDir, streamed), so the action records it,
// and returns its digest for the output's rows.
func PutBlobDir(r Run, dir string) (artifacts.Digest, error) {
	return artifacts.PutPackedDir(dir, r.PutBlob)
}

// OpenBlob opens blob d (an input row's blob column, or one this run
// wrote) for reading. Reads verify it: the Read reaching its end fails
// with an *artifacts.BlobError if the bytes are not the blob's, and a
// missing or corrupt blob makes the action that wrote it recompute on the
// next run.
func OpenBlob(r Run, d artifacts.Digest) (*artifacts.BlobReader, error) {
	b, ok := r.(BlobRun)
	if !ok {
		return nil, fmt.Errorf("open blob %s: this run (%T) cannot read blobs", d, r)
	}
	return b.OpenBlob(d)
}

// ExtractBlob unpacks directory blob d into dir (which must not exist or
// be empty), verified before dir appears.
func ExtractBlob(r Run, d artifacts.Digest, dir string) error {
	b, ok := r.(BlobRun)
	if !ok {
		return fmt.Errorf("extract blob %s: this run (%T) cannot read blobs", d, r)
	}
	return b.ExtractBlob(d, dir)
}

var (
	mu       sync.RWMutex
	registry = map[string]Type{}
)

// Register makes a node type available to pipelines. It panics on a
// duplicate name: that is a programming error, found at init.
func Register(t Type) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := registry[t.Name()]; dup {
		panic("nodes: duplicate node type " + t.Name())
	}
	registry[t.Name()] = t
}

// Lookup returns the registered type with that name.
func Lookup(name string) (Type, bool) {
	mu.RLock()
	defer mu.RUnlock()
	t, ok := registry[name]
	return t, ok
}

// Names lists the registered type names, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(registry))
	for n := range registry {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
