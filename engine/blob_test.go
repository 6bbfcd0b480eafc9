package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

// adapterType writes its files as a directory blob (a trained adapter,
// say) and a row referring to it; with inputs, it extracts each input's
// adapter and emits a row with the files' contents and the same blob (a
// reference it did not write).
type adapterType struct {
	nodes.Static[adapterConfig, adapterRow]
	runs *atomic.Int64
}

type adapterConfig struct {
	Files  map[string]string `hcl:"files,optional"`
	Inputs []nodes.Ref       `hcl:"inputs,optional"`
	Ref    string            `hcl:"ref,optional"` // a digest written into the row as is
}

// (staticcheck does not see a type used only as a type argument.)
var _ = adapterConfig{}

type adapterRow struct {
	Name    string `parquet:"name"`
	Adapter string `parquet:"adapter_blob"`
}

func (adapterType) Name() string    { return "adapter" }
func (adapterType) Version() string { return "1" }

func (t adapterType) Run(ctx context.Context, r nodes.Run) error {
	t.runs.Add(1)
	c := t.Config(r)
	if c.Ref != "" {
		return t.Write(r, []adapterRow{{Name: "ref", Adapter: c.Ref}})
	}
	if len(c.Inputs) == 0 {
		dir, err := os.MkdirTemp("", "adapter")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		for name, content := range c.Files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				return err
			}
		}
		d, err := nodes.PutBlobDir(r, dir)
		if err != nil {
			return err
		}
		return t.Write(r, []adapterRow{{Name: "trained", Adapter: string(d)}})
	}
	var out []adapterRow
	for _, in := range c.Inputs {
		rd, err := r.Input(in)
		if err != nil {
			return err
		}
		rows, err := artifacts.ReadAll[adapterRow](rd)
		if err != nil {
			return err
		}
		for _, row := range rows {
			tmp, err := os.MkdirTemp("", "extract")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			dir := filepath.Join(tmp, "adapter")
			if err := nodes.ExtractBlob(r, artifacts.Digest(row.Adapter), dir); err != nil {
				return err
			}
			ents, _ := os.ReadDir(dir)
			var parts []string
			for _, e := range ents {
				b, _ := os.ReadFile(filepath.Join(dir, e.Name()))
				parts = append(parts, e.Name()+"="+string(b))
			}
			sort.Strings(parts)
			out = append(out, adapterRow{Name: strings.Join(parts, ","), Adapter: row.Adapter})
		}
	}
	return t.Write(r, out)
}

var adapterRuns atomic.Int64

func init() { nodes.Register(adapterType{runs: &adapterRuns}) }

func TestBlobsAreListedVerifiedAndRecomputedWhenLost(t *testing.T) {
	h := newHarness(t)
	src := func(consumerTag string) string {
		return `
node "adapter" "train" {
  files = { "adapter_config.json" = "{\"r\":8}", "weights.bin" = "0123" }
}
node "adapter" "eval" {
  inputs = [node.adapter.train]
  files  = { "tag" = "` + consumerTag + `" }
}
`
	}
	_, res, err := h.run(src("1"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var blob artifacts.Digest
	for i, r := range res {
		a, err := h.store.GetAction(r.Key)
		if err != nil || len(a.Blobs) != 1 {
			t.Fatalf("%s: blobs %v, %v", i.Addr, a.Blobs, err)
		}
		if blob != "" && a.Blobs[0] != blob {
			t.Fatalf("%s lists %s, the other %s", i.Addr, a.Blobs[0], blob)
		}
		blob = a.Blobs[0]
		if i.Addr == "node.adapter.eval" {
			rd, _ := h.store.Open(r.Output)
			rows, _ := artifacts.ReadAll[adapterRow](rd)
			if len(rows) != 1 || rows[0].Name != `adapter_config.json={"r":8},weights.bin=0123` {
				t.Errorf("eval rows %+v", rows)
			}
		}
	}

	for _, tc := range []struct {
		name   string
		damage func(p string) error
	}{
		{"removed", os.Remove},
		{"corrupt", func(p string) error { return os.WriteFile(p, []byte("not a tar"), 0o644) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.damage(h.store.BlobPath(blob)); err != nil {
				t.Fatal(err)
			}
			// The consumer runs again (its config changed) and finds the
			// blob gone: it fails, saying so.
			states, res, _ := h.run(src(tc.name), nil)
			err := resultErr(res, "node.adapter.eval")
			var be *artifacts.BlobError
			if states["node.adapter.eval"] != "failed" || !errors.As(err, &be) || be.Digest != blob {
				t.Fatalf("states %v, err %v", states, err)
			}
			// The next run recomputes the producer, then the consumer.
			before := adapterRuns.Load()
			states, _, err = h.run(src(tc.name), nil)
			if err != nil || states["node.adapter.train"] != "done" || states["node.adapter.eval"] != "done" {
				t.Fatalf("states %v, err %v", states, err)
			}
			if adapterRuns.Load()-before != 2 || h.store.VerifyBlob(blob) != nil {
				t.Errorf("%d runs; blob %v", adapterRuns.Load()-before, h.store.VerifyBlob(blob))
			}
		})
	}

	t.Run("reference to a blob not in the store", func(t *testing.T) {
		states, res, _ := h.run(`
node "adapter" "dangling" {
  ref = "00000000000000ff"
}
`, nil)
		err := resultErr(res, "node.adapter.dangling")
		if states["node.adapter.dangling"] != "failed" || err == nil || !strings.Contains(err.Error(), "not in the store") {
			t.Errorf("states %v, err %v", states, err)
		}
	})
}

func resultErr(res map[*Instance]*Result, addr string) error {
	for i, r := range res {
		if i.Addr == addr {
			return r.Err
		}
	}
	return nil
}
