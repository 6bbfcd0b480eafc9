package arrowipc_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/artifacts/arrowipc"
	"github.com/parquet-go/parquet-go"
)

type row struct {
	Name  string   `parquet:"name"`
	Score float64  `parquet:"score"`
	N     int64    `parquet:"n"`
	Ok    bool     `parquet:"ok"`
	Tags  []string `parquet:"tags,list"`
	Note  *string  `parquet:"note,optional"`
}

func TestArrowFileHoldsTheRows(t *testing.T) {
	st, err := artifacts.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	note := "n"
	w, _ := st.NewWriter(artifacts.SchemaOf[row](), nil)
	w.Write(row{"a", 0.5, 1, true, []string{"x", "y"}, &note})
	w.Write(row{"b", 1.5, 2, false, nil, nil})
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	// A JSON column too, as import infers them.
	js := parquet.NewSchema("row", parquet.Group{"j": parquet.Optional(parquet.JSON())})
	jw, _ := st.NewWriter(js, nil)
	jw.Write(map[string]any{"j": []byte(`{"k":[1,2]}`)})
	jobj, _ := jw.Commit()

	for _, o := range []artifacts.Object{obj, jobj} {
		r, err := st.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "x.arrow")
		f, _ := os.Create(path)
		if err := arrowipc.Write(f, r); err != nil {
			t.Fatal(err)
		}
		f.Close()
		in, _ := os.Open(path)
		rd, err := ipc.NewFileReader(in)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := rd.Record(0)
		if err != nil {
			t.Fatal(err)
		}
		if rec.NumRows() != int64(r.NumRows()) {
			t.Errorf("arrow has %d rows, artifact %d", rec.NumRows(), r.NumRows())
		}
		if o == jobj {
			if got := rec.Column(0).(*array.String).Value(0); got != `{"k":[1,2]}` {
				t.Errorf("json column %q", got)
			}
			continue
		}
		sch := rec.Schema()
		name := rec.Column(sch.FieldIndices("name")[0]).(*array.String)
		tags := rec.Column(sch.FieldIndices("tags")[0]).(*array.List)
		notes := rec.Column(sch.FieldIndices("note")[0])
		if name.Value(1) != "b" || tags.Len() != 2 || notes.IsNull(0) || !notes.IsNull(1) {
			t.Errorf("arrow record: %v", rec)
		}
		vals := tags.ListValues().(*array.String)
		if vals.Len() != 2 || vals.Value(1) != "y" {
			t.Errorf("list values %v", vals)
		}
		in.Close()
	}
}
