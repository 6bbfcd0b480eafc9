package artifacts_test

import (
	"fmt"
	"os"

	"github.com/lacuna-dev/lacuna/artifacts"
)

type task struct {
	ID         string `parquet:"task_id"`
	Difficulty string `parquet:"difficulty"`
}

// Rows go in through a Writer and come out of the store named by their
// content: the same rows always get the same digest.
func ExampleStore_NewWriter() {
	dir, _ := os.MkdirTemp("", "store")
	defer os.RemoveAll(dir)
	st, _ := artifacts.Open(dir)

	w, _ := st.NewWriter(artifacts.SchemaOf[task](), map[string]string{artifacts.MetaNode: "node.tasks.lo"})
	w.Write(task{"lo/Map/easy", "easy"})
	w.Write(task{"lo/Map/hard", "hard"})
	obj, _ := w.Commit()

	r, _ := st.Open(obj) // verified: rows rehash to obj.Digest
	rows, _ := artifacts.ReadAll[task](r)
	fmt.Println(obj.Rows, rows[1].Difficulty, obj.Digest.Valid())
	// Output: 2 hard true
}
