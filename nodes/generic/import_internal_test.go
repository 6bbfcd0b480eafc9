package generic

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
)

// Records past maxRecord bytes and JSON nested past maxJSONDepth are
// errors naming the place, not unbounded memory or stack.
func TestImportBoundsOneRecord(t *testing.T) {
	old := maxRecord
	maxRecord = 100
	defer func() { maxRecord = old }()
	long := strings.Repeat("x", 200)
	cases := []struct{ name, format, src, want string }{
		{"long json line", "jsonl", `{"a": 1}` + "\n" + `{"a": "` + long + `"}`, "f:2:101: record larger than 100 bytes"},
		{"long csv row", "csv", "a\n1\n" + long + "\n", "f:3: record larger than 100 bytes"},
		{"short records", "jsonl", strings.Repeat(`{"a": "`+strings.Repeat("x", 80)+`"}`+"\n", 50), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := readAll(c.format, c.src)
			if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
	maxRecord = old
	deep := `{"a": ` + strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1) + "}"
	if err := readAll("jsonl", deep); err == nil || !strings.Contains(err.Error(), "JSON nested deeper than 10000 levels") {
		t.Errorf("deep JSON: %v", err)
	}
}

func readAll(format, src string) error {
	br := bufio.NewReader(strings.NewReader(src))
	next := newJSONRecords(br, "f", false).next
	if format == "csv" {
		cs, err := newCSVRecords(br, "f")
		if err != nil {
			return err
		}
		next = cs.next
	}
	for {
		if _, _, err := next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

// A number reaches a double column only if the double reads back as the
// same decimal; huge exponents are decided without big arithmetic.
func TestExactFloat(t *testing.T) {
	cases := map[string]bool{
		"0.1": true, "1.50": true, "-0": true, "0.0": true, "1e300": true, "100000000000000000000": true,
		"9007199254740992": true, "5e-324": true,
		"9007199254740993": false, "0.30000000000000000001": false, "1e400": false, "1e-400": false,
		"123456789012345678901234567890": false, "1e-1000000000000": false, "1e99999999999999999999": false,
	}
	for n, ok := range cases {
		if _, err := exactFloat(json.Number(n)); (err == nil) != ok {
			t.Errorf("%s: exact %v, want %v", n, err == nil, ok)
		}
	}
}
