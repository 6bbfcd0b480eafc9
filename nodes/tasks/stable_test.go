package tasks

import (
	"encoding/json"
	"strings"
	"testing"
)

// Two runs of one exit mutant (os.Exit in the solution), as the harness
// recorded them: only goroutine numbers, heap addresses and the temporary
// directories differ.
const (
	exitRunA = `panic: unexpected call to os.Exit(0) during test

goroutine 21 [running]:
runtime/debug.Stack()
	/usr/local/go/src/runtime/debug/stack.go:26 +0x5e
lacuna.batch/m/p0.lacunaRun.func2.1()
	/home/u/.lacuna/cache/go/tmp/harness-3955441181/batch-701951423/p0/u0_test.go:403 +0x5e
panic({0x59a600?, 0x5e6770?})
	/usr/local/go/src/runtime/panic.go:860 +0x13a
lacuna.batch/m/p0.lacunaScenario_u8(0x154ca529a670)
	/home/u/.lacuna/cache/go/tmp/harness-3955441181/batch-701951423/p0/u8_test.go:14 +0x93
created by lacuna.batch/m/p0.lacunaRun in goroutine 19
	/home/u/.lacuna/cache/go/tmp/harness-3955441181/batch-701951423/p0/u0_test.go:399 +0x309
`
	exitRunB = `panic: unexpected call to os.Exit(0) during test

goroutine 9 [running]:
runtime/debug.Stack()
	/usr/local/go/src/runtime/debug/stack.go:26 +0x5e
lacuna.batch/m/p0.lacunaRun.func2.1()
	/home/u/.lacuna/cache/go/tmp/harness-465693625/batch-3126569499/p0/u0_test.go:403 +0x5e
panic({0x59a600?, 0x5e6770?})
	/usr/local/go/src/runtime/panic.go:860 +0x13a
lacuna.batch/m/p0.lacunaScenario_u8(0x813000ba6c0)
	/home/u/.lacuna/cache/go/tmp/harness-465693625/batch-3126569499/p0/u8_test.go:14 +0x93
created by lacuna.batch/m/p0.lacunaRun in goroutine 7
	/home/u/.lacuna/cache/go/tmp/harness-465693625/batch-3126569499/p0/u0_test.go:399 +0x309
`
)

func TestStableTextIsTheSameForTwoRunsOfOneProgram(t *testing.T) {
	a, b := stableText(exitRunA), stableText(exitRunB)
	if a != b {
		t.Fatalf("two runs still differ:\n%s\nversus\n%s", a, b)
	}
	for _, want := range []string{
		"goroutine N [running]:",
		"lacuna.batch/m/p0.lacunaScenario_u8(0xADDR)",
		"$WORK/p0/u8_test.go:14 +0x93",
		"panic({0x59a600?, 0x5e6770?})", // type addresses: the binary's, kept
		"created by lacuna.batch/m/p0.lacunaRun in goroutine N",
	} {
		if !strings.Contains(a, want) {
			t.Errorf("stable text lacks %q:\n%s", want, a)
		}
	}
	// Inside a record's JSON the rewrite keeps the JSON valid.
	j, _ := json.Marshal(map[string]string{"panic": exitRunA})
	var back map[string]string
	if err := json.Unmarshal([]byte(stableText(string(j))), &back); err != nil || back["panic"] != a {
		t.Errorf("rewriting the JSON: %v\n%s", err, back["panic"])
	}
}

func TestStableTextKeepsWhatIsTheSameEveryRun(t *testing.T) {
	cases := []struct{ in, want string }{
		{"goroutine 3 [chan receive, 12 minutes]:", "goroutine N [chan receive]:"},
		{"[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a1b2c]", "[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a1b2c]"},
		{"<pystats.Pair object at 0x7f3a2b1c0d90>", "<pystats.Pair object at 0xADDR>"},
		{`File "/tmp/tmpk2j3_x9q/solution.py", line 3`, `File "$WORK/solution.py", line 3`},
		{"hash 0xdeadbeef, goroutines 4", "hash 0xdeadbeef, goroutines 4"},
		{"wrong result: got 12, want 13", "wrong result: got 12, want 13"},
		{"/tmp/notes/x.go:3", "/tmp/notes/x.go:3"},
	}
	for _, c := range cases {
		if got := stableText(c.in); got != c.want {
			t.Errorf("stableText(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
