package trainingdata

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/lacuna-dev/lacuna/nodes/bundle"
	"github.com/lacuna-dev/lacuna/nodes/tasks"
)

// The sets a task_split writes, in the order its rows list them: the
// values of its split column and of the downstream nodes' which.
const (
	SetTrain       = "train"        // the train split, cut to train_fraction: what is trained on
	SetTest        = "test"         // the test split
	SetTrainSample = "train_sample" // a uniform sample of the whole train split (before train_fraction)
	SetTestSample  = "test_sample"  // a uniform sample of the test split
)

// sets are the split column's values, in row order.
var sets = []string{SetTrain, SetTest, SetTrainSample, SetTestSample}

// rank orders ids by a hash of the seed, the purpose of the draw and the
// id (ties, which need a 64-bit collision, by id). A draw of the first k
// is therefore a seeded uniform sample that depends on no map or input
// order; drawing more (a larger k) keeps every id a smaller k drew; and an
// id added or removed moves the others by one place at most, so it changes
// at most one other id's membership of a first-k draw. Different purposes
// draw independently.
func rank(seed int64, purpose string, ids []string) []string {
	type keyed struct {
		h  uint64
		id string
	}
	ks := make([]keyed, len(ids))
	for i, id := range ids {
		ks[i] = keyed{xxhash.Sum64String(fmt.Sprintf("%d\x00%s\x00%s", seed, purpose, id)), id}
	}
	sort.Slice(ks, func(i, j int) bool {
		if ks[i].h != ks[j].h {
			return ks[i].h < ks[j].h
		}
		return ks[i].id < ks[j].id
	})
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.id
	}
	return out
}

// roundHalfUp is f·n rounded half up: the size of a fraction f of n.
func roundHalfUp(f float64, n int) int {
	return int(math.Floor(f*float64(n) + 0.5))
}

// readSet reads the tasks of set which from a task_split's rows (or a
// filter's of them), in task_id order. A set with no rows is an error
// that names the sets the split has.
func readSet(r nodes.Run, ref nodes.Ref, which string) ([]tasks.Row, error) {
	in, err := r.Input(ref)
	if err != nil {
		return nil, err
	}
	rows, err := tasks.Project[SplitRow](in)
	if err != nil {
		return nil, fmt.Errorf("split (%s): %w; split must come from a task_split node (or a filter of its rows)", ref, err)
	}
	has := map[string]int{}
	var out []tasks.Row
	seen := map[string]bool{}
	for _, row := range rows {
		has[row.Split]++
		if row.Split != which {
			continue
		}
		if seen[row.TaskID] {
			return nil, fmt.Errorf("split (%s): task %s is twice in set %s", ref, row.TaskID, which)
		}
		seen[row.TaskID] = true
		out = append(out, row.Row)
	}
	if len(out) == 0 {
		var names []string
		for _, s := range tasks.SortedKeys(has) {
			names = append(names, fmt.Sprintf("%s (%d)", s, has[s]))
		}
		return nil, nodes.Errorf("which", "Empty set", "the split %s has no task in set %q; its sets are %s.", ref, which, orNone(names))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TaskID < out[j].TaskID })
	return out, nil
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none (it is empty)"
	}
	return strings.Join(ss, ", ")
}

// bundlePool is the bundles of every bundles input, by api_id and in
// api_id order.
type bundlePool struct {
	byID  map[string]bundle.Row
	order []bundle.Row
}

// readBundles reads every bundle input (bundle or prose nodes). original
// undoes a prose node's rows (bundle.ReadOriginalRows): the docstring as
// M_prose. An API in two inputs is an error: which of them a prompt shows
// would be ambiguous.
func readBundles(r nodes.Run, refs []nodes.Ref, original bool) (*bundlePool, error) {
	p := &bundlePool{byID: map[string]bundle.Row{}}
	for _, ref := range refs {
		in, err := r.Input(ref)
		if err != nil {
			return nil, err
		}
		read := bundle.ReadRows
		if original {
			read = bundle.ReadOriginalRows
		}
		rows, err := read(in)
		if err != nil {
			return nil, fmt.Errorf("bundles (%s): %w (bundles must come from bundle or prose nodes)", ref, err)
		}
		for _, b := range rows {
			if prev, dup := p.byID[b.APIID]; dup {
				return nil, nodes.Errorf("bundles", "An API twice", "the bundles hold API %s twice (%s %s and %s %s): list each bundle node once.", b.APIID, prev.Module, prev.Version, b.Module, b.Version)
			}
			p.byID[b.APIID] = b
			p.order = append(p.order, b)
		}
	}
	sort.Slice(p.order, func(i, j int) bool { return p.order[i].APIID < p.order[j].APIID })
	return p, nil
}

// of returns the bundle of task t's API.
func (p *bundlePool) of(t tasks.Row) (bundle.Row, error) {
	b, ok := p.byID[t.APIID]
	if !ok {
		return bundle.Row{}, fmt.Errorf("task %s: the bundles have no API %s (list the bundle node of library %s)", t.TaskID, t.APIID, t.Library)
	}
	return b, nil
}

// orInt is *p, or def when p is nil.
func orInt(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

// orFloat is *p, or def when p is nil.
func orFloat(p *float64, def float64) float64 {
	if p == nil {
		return def
	}
	return *p
}

// validWhich checks a which attribute.
func validWhich(which string) error {
	for _, s := range sets {
		if which == s {
			return nil
		}
	}
	return nodes.Errorf("which", "Unknown set", "which must be one of %s, not %q.", strings.Join(quoted(sets), ", "), which)
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
