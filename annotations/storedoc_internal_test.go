package annotations

import (
	"os"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
)

// TestStoreDocHasTheSchema checks that artifacts/STORE.md gives the label
// sets' schema fingerprint as the code writes it.
func TestStoreDocHasTheSchema(t *testing.T) {
	doc, err := os.ReadFile("../artifacts/STORE.md")
	if err != nil {
		t.Fatal(err)
	}
	fp := artifacts.SchemaFingerprint(artifacts.SchemaOf[row]())
	if !strings.Contains(string(doc), "\n"+fp+"\n") {
		t.Errorf("STORE.md does not give the annotations schema %s", fp)
	}
	if !strings.Contains(string(doc), refHeader) {
		t.Errorf("STORE.md does not name the ref header %s", refHeader)
	}
}
