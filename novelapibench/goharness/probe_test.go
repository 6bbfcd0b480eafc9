package goharness

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The comparative layer skips a probed value's printed form only when the
// value holds an address (a non-nil pointer, func or channel, also inside
// structs, slices, maps and interfaces), decided from the value, not from
// how it prints: an unsigned integer prints as 0x… and is still compared.
func TestProbeMarksOnlyAddressesAsIncomparable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	prog := `package main

` + runtimeImports + `
const lacunaSelf = "main."
const lacunaModule = "example.com/m"

var _, _, _, _, _ = lacunaio.EOF, lacunatime.Second, lacunadebug.Stack, lacunaruntime.Callers, lacunaatomic.Int64{}

func lacunaUnused() { lacunaMain(0, "", nil, 0, nil, nil, nil) }
` + harnessRuntime + supervisorDecls + `
type pair struct {
	N int
	P *int
}

func main() {
	x := 7
	values := map[string]any{
		"uint8":          uint8(5),
		"uints":          []uint{1, 2, 255},
		"string 0x":      "0x1f",
		"nil pointer":    (*int)(nil),
		"struct no ptr":  pair{N: 1},
		"pointer":        &x,
		"struct ptr":     pair{N: 1, P: &x},
		"slice of any":   []any{1, &x},
		"map to pointer": map[string]*int{"a": &x},
		"func":           func() {},
		"channel":        make(chan int),
	}
	out := map[string]bool{}
	for k, v := range values {
		out[k] = lacunaDescribe(v).Addr
	}
	b, _ := lacunajson.Marshal(out)
	lacunafmt.Println(string(b))
	// A type declared inside a function prints with a ·N that changes
	// from build to build; a string may hold a · of its own.
	type local struct{ S string }
	d := lacunaDescribe([]local{{"a·b"}})
	lacunafmt.Println(d.Type, d.Value)
	_ = lacunaos.Stdout
	_ = lacunastrings.ToUpper
}
`
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goBin, "run", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	first, names, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if want := `[]main.local []main.local{main.local{S:"a·b"}}`; names != want {
		t.Errorf("a local type is described as %q, want %q", names, want)
	}
	var got map[string]bool
	if err := json.Unmarshal([]byte(first), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := map[string]bool{
		"uint8": false, "uints": false, "string 0x": false, "nil pointer": false, "struct no ptr": false,
		"pointer": true, "struct ptr": true, "slice of any": true, "map to pointer": true, "func": true, "channel": true,
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: addr = %v, want %v", k, got[k], w)
		}
	}
}
