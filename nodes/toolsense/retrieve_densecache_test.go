package toolsense_test

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lacuna-dev/lacuna/engine"
	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/lacuna-dev/lacuna/nodes/toolsense"
)

// TestRetrieveDenseRunsWhenTheVectorCacheCannotBeWritten: with every shard
// of the store's embed cache blocked (a regular file where its directory
// goes, which stops root too), the node still ranks, as with a working
// cache, and its note counts the vectors not cached.
func TestRetrieveDenseRunsWhenTheVectorCacheCannotBeWritten(t *testing.T) {
	okDir, src := denseFixture(t, "mean")
	want := nodetest.Read[toolsense.RetrieveRow](t, nodetest.Run(t, okDir, src), "node.retrieve.dense")

	dir, src := denseFixture(t, "mean")
	cache := filepath.Join(dir, ".lacuna", "cache", "embed")
	if err := os.MkdirAll(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 256; i++ {
		if err := os.WriteFile(filepath.Join(cache, fmt.Sprintf("%02x", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := nodetest.Run(t, dir, src)
	if got := nodetest.Read[toolsense.RetrieveRow](t, r, "node.retrieve.dense"); !reflect.DeepEqual(got, want) {
		t.Errorf("rows without a cache:\n%+v\nwant\n%+v", got, want)
	}
	wantContains(t, r.Notes(engine.EventDone)["node.retrieve.dense"], "vectors not cached (see the log)")
}
