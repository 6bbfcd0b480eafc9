package generic

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/nodes/nodetest"
	"github.com/parquet-go/parquet-go"
)

type pqRow struct {
	ID   int64  `parquet:"id"`
	Text string `parquet:"text"`
}

// A Parquet file whose data is damaged part-way fails the import: the rows
// before the damage are never committed as if they were the file.
func TestImportOfADamagedParquetFileFails(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[pqRow](f, parquet.MaxRowsPerRowGroup(10))
	for i := range 100 {
		if _, err := w.Write([]pqRow{{ID: int64(i), Text: fmt.Sprintf("row %d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src := `node "import" "t" { path = "t.parquet" }`
	if res := nodetest.RunErr(t, t.TempDir(), strings.Replace(src, "t.parquet", path, 1)); res.Nodes["node.import.t"].Output.Rows != 100 {
		t.Fatalf("the intact file: %+v", res.Nodes["node.import.t"])
	}

	pf, err := parquet.OpenFile(must(os.Open(path)), must(os.Stat(path)).Size())
	if err != nil {
		t.Fatal(err)
	}
	at := pf.Metadata().RowGroups[3].Columns[0].MetaData.DataPageOffset
	b := must(os.ReadFile(path))
	copy(b[at:], []byte{0xff, 0xff, 0xff, 0xff})
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	n := nodetest.RunErr(t, dir, src).Nodes["node.import.t"]
	if n.Err == nil {
		t.Fatalf("a file damaged in its fourth row group imported as %d rows", n.Output.Rows)
	}
}

// Inferring a column per distinct key is bounded: a small file whose
// records all have other keys would be rows × columns of nulls.
func TestImportBoundsInferredColumns(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := range maxInferredColumns + 1 {
		fmt.Fprintf(&b, "{\"k%d\": 1}\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.jsonl"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	n := nodetest.RunErr(t, dir, `node "import" "t" { path = "t.jsonl" }`).Nodes["node.import.t"]
	if want := fmt.Sprintf("t.jsonl:%d: more than %d distinct keys", maxInferredColumns+1, maxInferredColumns); n.Err == nil || !strings.Contains(n.Err.Error(), want) {
		t.Fatalf("want %q, got %v", want, n.Err)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
