package addrs

import (
	"strings"
	"testing"
)

func TestParseInstanceRoundTrips(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Instance
	}{
		{"node.sample.s", Node{"sample", "s"}.Instance(NoKey)},
		{`node.sample.s["a b"]`, Node{"sample", "s"}.Instance(StringKey("a b"))},
		{`node.sample.s["x]\"y[z"]`, Node{"sample", "s"}.Instance(StringKey(`x]"y[z`))},
		{`node.sample.s[""]`, Node{"sample", "s"}.Instance(StringKey(""))},
		{`node.import.tier["日本"]`, Node{"import", "tier"}.Instance(StringKey("日本"))},
	} {
		got, err := ParseInstance(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseInstance(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
		if got.String() != c.in {
			t.Errorf("%q prints as %q", c.in, got.String())
		}
	}
}

func TestParseInstanceRejectsMalformedAddresses(t *testing.T) {
	for _, in := range []string{"", "sample.s", "node.sample", "node..s", "node.sample.s.t", `node.sample.s["a"`, "node.sample.s[a]", "node.sample.s[`a`]"} {
		if i, err := ParseInstance(in); err == nil {
			t.Errorf("ParseInstance(%q) = %+v, want an error", in, i)
		}
	}
}

func TestFileStemsNeverCollide(t *testing.T) {
	long := strings.Repeat("k", 300)
	insts := []Instance{
		Node{"s", "a"}.Instance(StringKey("a b")),
		Node{"s", "a"}.Instance(StringKey("a_b")),
		Node{"s", "a"}.Instance(StringKey("a~20b")),
		Node{"s", "a"}.Instance(StringKey("a/b")),
		Node{"s", "a"}.Instance(StringKey("b")),
		Node{"s", "a"}.Instance(StringKey("")),
		Node{"s", "a"}.Instance(StringKey("..")),
		Node{"s", "a"}.Instance(StringKey(long)),
		Node{"s", "a"}.Instance(StringKey(long + "x")),
		Node{"s", "a"}.Instance(NoKey),
		Node{"s", "a__b"}.Instance(NoKey),
		Node{"s", "a__"}.Instance(NoKey),
		Node{"s", "a_"}.Instance(StringKey("b")),
		Node{"s", "a"}.Instance(StringKey("_b")),
	}
	seen := map[string]Instance{}
	for _, i := range insts {
		stem := i.FileStem()
		if prev, dup := seen[stem]; dup {
			t.Errorf("%s and %s both map to %q", prev, i, stem)
		}
		seen[stem] = i
		if len(stem) > 201 || strings.ContainsAny(stem, "/\x00 ") {
			t.Errorf("%s maps to an unusable file name %q", i, stem)
		}
	}
	for in, want := range map[Instance]string{
		Node{"import", "tier"}.Instance(StringKey("easy")): "tier__easy",
		Node{"s", "a"}.Instance(StringKey("a b")):          "a__a~20b",
		Node{"s", "qa_no"}.Instance(NoKey):                 "qa_no",
	} {
		if got := in.FileStem(); got != want {
			t.Errorf("%s: stem %q, want %q", in, got, want)
		}
	}
}

// An instance's address is its node's and its key's, whether or not the
// key needs escaping.
func TestInstanceStringIsNodeThenKey(t *testing.T) {
	n := Node{"sample", "s"}
	for _, k := range []string{"", "0", "12345", "a b", "x]\"y[z", `a\b`, "tab\there", "del\x7f", "日本", "~!#$%&'()*+,-./:;<=>?@[]^_`{|}"} {
		i := n.Instance(StringKey(k))
		if got, want := i.String(), n.String()+i.Key.String(); got != want {
			t.Errorf("key %q: %s, want %s", k, got, want)
		}
	}
}
