package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// PlanEntry says what a run would do with one instance, and why.
type PlanEntry struct {
	Node   string           `json:"node"`
	Type   string           `json:"type"`
	Status string           `json:"status"` // cached, run, blocked, error
	Reason string           `json:"reason,omitempty"`
	Key    artifacts.Digest `json:"key,omitempty"`
	Digest artifacts.Digest `json:"digest,omitempty"`
	Rows   int64            `json:"rows,omitempty"`
	// LastKnown names the instances whose last run's result this entry
	// is, or stands on, because their keys cannot be computed now
	// (Executor.LastKnown); empty otherwise.
	LastKnown []string `json:"last_known,omitempty"`
	// Calls are the model calls a run would make (Executor.CountCalls;
	// types that implement nodes.CallPlanner, status run with a known
	// key): how many, how many the call cache holds, the tokens of the
	// rest. CallsUnknown says why they cannot be counted yet.
	Calls        []nodes.CallPlan `json:"calls,omitempty"`
	CallsUnknown string           `json:"calls_unknown,omitempty"`
}

// Plan statuses.
const (
	PlanCached  = "cached"
	PlanRun     = "run"
	PlanBlocked = "blocked" // an input cannot be computed (it has an error)
	PlanError   = "error"   // the key itself cannot be computed (e.g. missing file)
)

// Plan computes what Run would do without running anything. An instance
// whose inputs are all cached has a known key, so it is either cached or
// runs for a reason found by comparing with the key it had last time
// (config, input, identity or logic version changed). An instance
// downstream of one that will run waits for that input.
//
// With CountCalls, an instance that will run, has a known key and whose
// type is a nodes.CallPlanner also gets its model calls counted
// (PlanEntry.Calls); PlanCalls failing makes the entry an error (what the
// run would hit), without failing the plan.
func (x *Executor) Plan(ctx context.Context, g *Graph, targets []string) ([]PlanEntry, error) {
	insts, err := g.Select(targets)
	if err != nil {
		return nil, err
	}
	w := x.newWalk()
	entries := make([]PlanEntry, len(insts))
	// Indexed by Instance.index: where each instance's entry is, and the
	// output of each cached one.
	at := make([]int, len(g.Instances))
	outputs := make([]artifacts.Object, len(g.Instances))
	for n, i := range insts {
		at[i.index] = n
		e := PlanEntry{Node: i.Addr, Type: i.Decl.TypeName}
		var runs, blocked []string
		for _, in := range i.Inputs {
			switch entries[at[in.index]].Status {
			case PlanRun:
				runs = append(runs, in.Addr)
			case PlanBlocked, PlanError:
				blocked = append(blocked, in.Addr)
			}
		}
		switch {
		case len(blocked) > 0:
			e.Status, e.Reason = PlanBlocked, "input "+listAddrs(blocked)+" cannot run"
		case len(runs) > 0:
			e.Status, e.Reason = PlanRun, "input "+listAddrs(runs)+" will run"
			if cp, ok := i.Type().(nodes.CallPlanner); ok && cp.CallsModels(i.Config) {
				// What a model-calling node resolves (its server, key,
				// model id, templates) does not wait for its inputs:
				// a wrong endpoint shows in the plan, not hours into
				// the run. Its key still waits for them.
				if err := x.resolveOnly(ctx, i); err != nil {
					e.Status, e.Reason = PlanError, err.Error()
				} else if x.CountCalls {
					e.CallsUnknown = "model calls unknown until its inputs exist"
				}
			}
		default:
			key, cfg, pinned, err := x.keyOf(ctx, i, inputDigests(i, func(in *Instance) artifacts.Digest { return outputs[in.index].Digest }))
			switch {
			case err != nil:
				if out, key, ok := w.lastKnown(i, cfg); ok {
					// The key cannot be computed now (a model server
					// that is down) but nothing else changed since the
					// last run: read-only commands still reach what it
					// computed, and say so.
					e.Status, e.Key, e.Digest, e.Rows = PlanCached, key, out.Digest, out.Rows
					e.Reason = "the last run's result; its key cannot be checked now: " + err.Error()
					e.LastKnown = []string{i.Addr}
					outputs[i.index] = out
					break
				}
				e.Status, e.Reason = PlanError, err.Error()
			default:
				e.Key = key
				n, ok := w.fromSnapshot(i, key)
				out := n.Output
				var damaged error
				if !ok {
					var a *artifacts.Action
					if a, ok, damaged = x.cached(key); ok {
						out = a.Output
					}
				}
				if ok && !x.Force {
					e.Status, e.Digest, e.Rows = PlanCached, out.Digest, out.Rows
					outputs[i.index] = out
					// Computed from last-known results: it stands on
					// what could not be checked now either.
					for _, in := range i.Inputs {
						e.LastKnown = append(e.LastKnown, entries[at[in.index]].LastKnown...)
					}
					if len(e.LastKnown) > 0 {
						slices.Sort(e.LastKnown)
						e.LastKnown = slices.Compact(e.LastKnown)
						e.Reason = "computed from last-known results (" + listAddrs(e.LastKnown) + ")"
					}
				} else {
					e.Status, e.Reason = PlanRun, w.why(i, key, cfg, pinned.Identity)
					if damaged != nil && !x.Force {
						e.Reason = "its " + damaged.Error()
					}
					if cp, ok := i.Type().(nodes.CallPlanner); ok && x.CountCalls {
						inputs := make(map[string]artifacts.Object, len(i.Inputs))
						for _, in := range i.Inputs {
							inputs[in.Addr] = outputs[in.index]
						}
						env := &runEnv{w: w, inst: i, key: key, inputs: inputs, pinned: pinned.Value, planning: true}
						calls, err := planCalls(ctx, cp, env)
						if err != nil {
							e.Status, e.Reason = PlanError, "counting model calls: "+located(i.Decl, err).Error()
						} else {
							e.Calls = calls
						}
					}
				}
			}
		}
		entries[n] = e
	}
	return entries, nil
}

// planCalls runs a type's PlanCalls, turning a panic into an error: one
// broken type must not take the whole plan down.
func planCalls(ctx context.Context, cp nodes.CallPlanner, env *runEnv) (calls []nodes.CallPlan, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("PlanCalls panicked: %v", p)
		}
	}()
	return cp.PlanCalls(ctx, env)
}

func listAddrs(a []string) string {
	if len(a) > 2 {
		return fmt.Sprintf("%s and %d more", strings.Join(a[:2], ", "), len(a)-2)
	}
	return strings.Join(a, ", ")
}

// why explains a cache miss of key against the instance's previous key.
func (w *walk) why(i *Instance, key artifacts.Digest, cfg []byte, identity map[string]string) string {
	x := w.x
	if x.Force {
		return "forced"
	}
	n, ok := w.snap.Nodes[i.Addr]
	if !ok {
		return "new"
	}
	last := n.Key
	prev, err := x.Store.GetAction(last)
	if err != nil {
		if _, ferr := x.Store.GetFailure(last); ferr == nil || n.Failed {
			return "failed last time"
		}
		if last == key {
			return "its action entry is gone from the store (fsck, gc or by hand)"
		}
		return "new"
	}
	var reasons []string
	if prev.Version != i.Type().Version() {
		reasons = append(reasons, fmt.Sprintf("logic version changed (%s → %s)", prev.Version, i.Type().Version()))
	}
	var now, before map[string]json.RawMessage
	if err := json.Unmarshal(cfg, &now); err != nil {
		return fmt.Sprintf("changed (its configuration cannot be compared: %v)", err)
	}
	if err := json.Unmarshal(prev.Config, &before); err != nil {
		return fmt.Sprintf("changed (the previous action's configuration cannot be decoded: %v)", err)
	}
	var changedCfg, changedIn []string
	for _, k := range unionKeys(now, before) {
		if bytes.Equal(compact(now[k]), compact(before[k])) {
			continue
		}
		if bytes.Contains(now[k], []byte(`"artifact"`)) || bytes.Contains(before[k], []byte(`"artifact"`)) {
			changedIn = append(changedIn, inputChange(i, k, before[k], now[k]))
		} else {
			changedCfg = append(changedCfg, k)
		}
	}
	if len(changedIn) > 0 {
		reasons = append(reasons, strings.Join(changedIn, ", "))
	}
	if len(changedCfg) > 0 {
		reasons = append(reasons, "config changed: "+strings.Join(changedCfg, ", "))
	}
	var ids []string
	for _, k := range unionKeys(identity, prev.Identity) {
		if identity[k] != prev.Identity[k] {
			ids = append(ids, identityChange(k, prev.Identity[k], identity[k]))
		}
	}
	if len(ids) > 0 {
		reasons = append(reasons, "identity changed: "+strings.Join(ids, ", "))
	}
	if len(reasons) == 0 {
		if _, err := x.Store.GetAction(last); err == nil {
			return "output missing from store"
		}
		return "changed"
	}
	return strings.Join(reasons, "; ")
}

// inputChange says how input attribute attr changed, with the digests
// its artifacts had in the last run's key (before) and have now: "input
// samples changed (node.solve.calibration 30be481e → 0e22dab5)". The
// digests show that the input's rows are not the ones the node last ran
// on, also when the input was recomputed to a result that looks the same
// (its timings differ: lacuna verify says which columns).
func inputChange(i *Instance, attr string, before, now json.RawMessage) string {
	was, is := artifactDigests(before), artifactDigests(now)
	msg := "input " + attr + " changed"
	if len(was) != len(is) {
		return fmt.Sprintf("%s (%d artifacts, were %d)", msg, len(is), len(was))
	}
	refs := refNodes(i, attr)
	var changes []string
	for k := range is {
		if is[k] == was[k] {
			continue
		}
		c := artifacts.Digest(was[k]).Short() + " → " + artifacts.Digest(is[k]).Short()
		if len(refs) == len(is) {
			c = refs[k] + " " + c
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return msg
	}
	if len(is) > 1 {
		msg += fmt.Sprintf(" (%d of %d artifacts: %s)", len(changes), len(is), listAddrs(changes))
	} else {
		msg += " (" + changes[0] + ")"
	}
	return msg
}

// artifactDigests lists the digests of the {"artifact": DIGEST} objects in
// a canonical config value, in order.
func artifactDigests(v json.RawMessage) []string {
	var x any
	if json.Unmarshal(v, &x) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if d, ok := x["artifact"].(string); ok && len(x) == 1 {
				out = append(out, d)
				return
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k])
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(x)
	return out
}

// refNodes are the addresses attribute attr of i refers to, in the order
// its canonical config lists them; nil for any other attribute.
func refNodes(i *Instance, attr string) []string {
	fields, _ := configFields(i.Type())
	rv := reflectElem(i.Config)
	for _, f := range fields {
		if f.Name != attr {
			continue
		}
		switch v := rv.Field(f.Index).Interface().(type) {
		case nodes.Ref:
			return []string{v.Node}
		case *nodes.Ref:
			if v != nil {
				return []string{v.Node}
			}
		case []nodes.Ref:
			out := make([]string, len(v))
			for k, r := range v {
				out[k] = r.Node
			}
			return out
		}
	}
	return nil
}

// identityChange describes one changed identity entry, with its values
// when they are short enough to read ("toolchain go1.26.8 → go1.27.0").
func identityChange(k, before, now string) string {
	const readable = 48
	if before == "" {
		before = "(none)"
	}
	if now == "" {
		now = "(none)"
	}
	if len(before) > readable || len(now) > readable {
		before, now = shortDigest(before), shortDigest(now)
		if before == now || len(before) > readable || len(now) > readable {
			return k
		}
	}
	return k + " " + before + " → " + now
}

// shortDigest abbreviates an image pin ("repo@sha256:<64 hex>", or
// "sha256:…") to its digest's first 12 hex digits: a tag that moved reads
// "image sha256:0123456789ab… → sha256:…".
func shortDigest(s string) string {
	const alg = "sha256:"
	i := strings.LastIndex(s, alg)
	if i < 0 || len(s)-i != len(alg)+64 {
		return s
	}
	return s[i:i+len(alg)+12] + "…"
}

func compact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

func unionKeys[V any](a, b map[string]V) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
