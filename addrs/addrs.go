// Package addrs holds the addresses of a pipeline's nodes and their
// instances as typed values, parsed once: node.TYPE.NAME for a node block,
// node.TYPE.NAME["KEY"] for one element of its for_each. Everything that
// needs a part of an address (a file name, a label, a lookup) asks the
// value; nothing slices the string form.
package addrs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Node is a node block's address.
type Node struct {
	Type string // the node type, e.g. sample
	Name string // the block's name, an HCL identifier
}

// String is the address as written in HCL: node.TYPE.NAME.
func (n Node) String() string { return "node." + n.Type + "." + n.Name }

// Instance is the address of the instance of n at key.
func (n Node) Instance(key InstanceKey) Instance { return Instance{Node: n, Key: key} }

// InstanceKey is an instance's each.key. The zero value, NoKey, is the key
// of a block without for_each.
type InstanceKey struct {
	key string
	set bool
}

// NoKey is the key of the single instance of a block without for_each.
var NoKey InstanceKey

// StringKey is the instance key k.
func StringKey(k string) InstanceKey { return InstanceKey{key: k, set: true} }

// Value is the key as each.key sees it; ok is false for NoKey.
func (k InstanceKey) Value() (key string, ok bool) { return k.key, k.set }

// String is the key as written after an address: ["k"], or "" for NoKey.
func (k InstanceKey) String() string {
	if !k.set {
		return ""
	}
	return "[" + strconv.Quote(k.key) + "]"
}

// Instance is one node instance's address.
type Instance struct {
	Node Node
	Key  InstanceKey
}

// String is the address: node.TYPE.NAME or node.TYPE.NAME["KEY"]. It
// is made once per instance of a sweep (the engine keeps it), in one
// allocation when the key needs no escaping.
func (i Instance) String() string {
	if !i.Key.set {
		return i.Node.String()
	}
	if !plainKey(i.Key.key) {
		return i.Node.String() + i.Key.String()
	}
	var b strings.Builder
	b.Grow(len("node..[\"\"]") + len(i.Node.Type) + len(i.Node.Name) + len(i.Key.key))
	for _, s := range [...]string{"node.", i.Node.Type, ".", i.Node.Name, `["`, i.Key.key, `"]`} {
		b.WriteString(s)
	}
	return b.String()
}

// plainKey reports whether strconv.Quote(k) is k between quotes: printable
// ASCII without a quote or a backslash.
func plainKey(k string) bool {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// Label is the address without its node. prefix, for graph drawings.
func (i Instance) Label() string { return i.Node.Type + "." + i.Node.Name + i.Key.String() }

// ParseInstance parses the string form of an instance address.
func ParseInstance(s string) (Instance, error) {
	bad := func(why string) (Instance, error) {
		return Instance{}, fmt.Errorf("invalid node address %q: %s (want node.TYPE.NAME or node.TYPE.NAME[\"KEY\"])", s, why)
	}
	rest, ok := strings.CutPrefix(s, "node.")
	if !ok {
		return bad("it does not start with node.")
	}
	head, keyPart, keyed := strings.Cut(rest, "[")
	typ, name, ok := strings.Cut(head, ".")
	if !ok || typ == "" || name == "" || strings.Contains(name, ".") {
		return bad("it needs a type and a name")
	}
	i := Instance{Node: Node{Type: typ, Name: name}}
	if !keyed {
		return i, nil
	}
	quoted, ok := strings.CutSuffix(keyPart, "]")
	if !ok {
		return bad("the key has no closing ]")
	}
	k, err := strconv.Unquote(quoted)
	if err != nil || !strings.HasPrefix(quoted, `"`) {
		return bad("the key is not a quoted string")
	}
	i.Key = StringKey(k)
	return i, nil
}

// maxStem bounds a file stem well under the 255 bytes file systems allow.
const maxStem = 200

// FileStem is a file name (without extension) for the instance, unique
// among the instances of one node type: NAME for a block without for_each,
// NAME__KEY for an instance, the key with every byte other than an ASCII
// letter, digit, '.' or '-' written as ~XX (hex), so node.s["a b"] is
// s__a~20b and node.s["a_b"] s__a~5Fb. A block name containing "__" gets a
// trailing "~" so that it cannot meet an instance's stem; a stem longer
// than 200 bytes is cut and ends in ~ and 16 hex digits of its SHA-256.
// Distinct instances of one type have distinct stems (the cut ones up to
// a 64-bit hash collision).
func (i Instance) FileStem() string {
	stem := i.Node.Name
	if k, ok := i.Key.Value(); ok {
		stem += "__" + escapeKey(k)
	} else if strings.Contains(stem, "__") {
		stem += "~"
	}
	if len(stem) <= maxStem {
		return stem
	}
	sum := sha256.Sum256([]byte(stem))
	return stem[:maxStem-16] + "~" + hex.EncodeToString(sum[:8])
}

func escapeKey(k string) string {
	var b strings.Builder
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c == '-' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "~%02X", c)
	}
	return b.String()
}
