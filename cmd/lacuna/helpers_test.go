package main

import (
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// writeArtifact commits rows as an artifact of a node of type typ, the
// way the engine writes one (its node, type and action key in the
// metadata, an action entry naming it), and returns its reader.
func writeArtifact[T any](t *testing.T, st *artifacts.Store, node, typ string, key artifacts.Digest, rows []T) *artifacts.Reader {
	t.Helper()
	w, err := st.NewWriter(artifacts.SchemaOf[T](), map[string]string{artifacts.MetaNode: node, artifacts.MetaType: typ, artifacts.MetaActionKey: string(key)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	obj, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutAction(&artifacts.Action{Key: key, Output: obj, Node: node, Type: typ, Version: "1"}); err != nil {
		t.Fatal(err)
	}
	r, err := st.Open(obj)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func tempStore(t *testing.T) *artifacts.Store {
	t.Helper()
	st, err := artifacts.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}
