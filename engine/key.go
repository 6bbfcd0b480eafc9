package engine

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/zclconf/go-cty/cty"
)

// keyVersion names the key encoding (artifacts/STORE.md, "Action key") and
// changes whenever it does: v2 is the single canonical encoder below.
const keyVersion = "lacuna-action-v2"

// canonicalConfig renders an instance's decoded config in the canonical
// JSON of STORE.md: fields sorted by name, input references replaced by
// their content digests, Expr fields by their token text and captured
// values, cty values with their type. Defaults are applied already, so
// writing a default explicitly does not change the key. Node addresses are
// deliberately absent: renaming a node does not recompute anything.
//
// This is the only encoder of key material: the same value always gives
// the same bytes, whichever field type holds it.
func canonicalConfig(inst *Instance, digest func(addr string) artifacts.Digest) (json.RawMessage, error) {
	return appendCanonicalConfig(make([]byte, 0, 256), inst, digest)
}

// appendCanonicalConfig appends inst's canonical config to buf.
func appendCanonicalConfig(buf []byte, inst *Instance, digest func(addr string) artifacts.Digest) (json.RawMessage, error) {
	fields, err := configFields(inst.Type())
	if err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(inst.Config).Elem()
	e := keyEncoder{buf: buf, digest: digest}
	e.buf = append(e.buf, '{')
	n := 0
	sorted := sortedFields(inst.Type().Name(), fields)
	for k, f := range sorted.fields {
		if f.OmitNull && rv.Field(f.Index).IsNil() {
			continue
		}
		if n > 0 {
			e.buf = append(e.buf, ',')
		}
		n++
		e.buf = append(e.buf, sorted.names[k]...)
		if err := e.value(rv.Field(f.Index)); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", inst.Addr, f.Name, err)
		}
	}
	return append(e.buf, '}'), nil
}

// keyFields are a config's fields sorted by name, each with its name as
// the canonical config writes it ("name":).
type keyFields struct {
	fields []configField
	names  [][]byte
}

var sortedFieldsCache sync.Map // type name → *keyFields

func sortedFields(typeName string, fields []configField) *keyFields {
	if v, ok := sortedFieldsCache.Load(typeName); ok {
		return v.(*keyFields)
	}
	out := &keyFields{fields: append([]configField(nil), fields...)}
	sort.Slice(out.fields, func(i, j int) bool { return out.fields[i].Name < out.fields[j].Name })
	for _, f := range out.fields {
		e := keyEncoder{}
		e.string(f.Name)
		out.names = append(out.names, append(e.buf, ':'))
	}
	sortedFieldsCache.Store(typeName, out)
	return out
}

// keyEncoder appends the canonical JSON of config values to buf.
type keyEncoder struct {
	buf    []byte
	digest func(addr string) artifacts.Digest
}

// value encodes a config field of any supported Go type.
func (e *keyEncoder) value(v reflect.Value) error {
	switch v.Type() {
	case refGoType:
		if v.CanAddr() {
			e.ref(*v.Addr().Interface().(*nodes.Ref)) // no copy to the heap
		} else {
			e.ref(v.Interface().(nodes.Ref))
		}
		return nil
	case refsGoType:
		e.buf = append(e.buf, '[')
		for i, r := range v.Interface().([]nodes.Ref) {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.ref(r)
		}
		e.buf = append(e.buf, ']')
		return nil
	case exprGoType:
		return e.expr(v.Interface().(nodes.Expr))
	case ctyGoType:
		return e.ctyTagged(v.Interface().(cty.Value))
	case modelGoType:
		// A model's endpoint, key variable, served name and limits are
		// not what it is: only its key view enters the key.
		return e.value(reflect.ValueOf(v.Interface().(nodes.Model).KeyView()))
	}
	switch v.Kind() {
	case reflect.Struct:
		return e.structFields(v)
	case reflect.String:
		e.string(v.String())
	case reflect.Bool:
		e.buf = strconv.AppendBool(e.buf, v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		e.buf = strconv.AppendInt(e.buf, v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		e.buf = strconv.AppendUint(e.buf, v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return e.float(v.Float())
	case reflect.Pointer:
		if v.IsNil() {
			e.buf = append(e.buf, "null"...)
			return nil
		}
		return e.value(v.Elem())
	case reflect.Slice, reflect.Array:
		e.buf = append(e.buf, '[')
		for i := 0; i < v.Len(); i++ {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.value(v.Index(i)); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("a key cannot hold %s: map keys must be strings", v.Type())
		}
		keys := make([]string, 0, v.Len())
		for it := v.MapRange(); it.Next(); {
			keys = append(keys, it.Key().String())
		}
		sort.Strings(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(k)
			e.buf = append(e.buf, ':')
			if err := e.value(v.MapIndex(reflect.ValueOf(k).Convert(v.Type().Key()))); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	default:
		return fmt.Errorf("a key cannot hold %s", v.Type())
	}
	return nil
}

// structFields encodes a struct as an object of its fields with `json`
// tags, sorted by name.
func (e *keyEncoder) structFields(v reflect.Value) error {
	type field struct {
		name string
		i    int
	}
	var fs []field
	for i := 0; i < v.NumField(); i++ {
		name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("json"), ",")
		if name == "" || name == "-" {
			return fmt.Errorf("a key cannot hold %s: field %s has no json name", v.Type(), v.Type().Field(i).Name)
		}
		fs = append(fs, field{name, i})
	}
	sort.Slice(fs, func(a, b int) bool { return fs[a].name < fs[b].name })
	e.buf = append(e.buf, '{')
	for n, f := range fs {
		if n > 0 {
			e.buf = append(e.buf, ',')
		}
		e.string(f.name)
		e.buf = append(e.buf, ':')
		if err := e.value(v.Field(f.i)); err != nil {
			return err
		}
	}
	e.buf = append(e.buf, '}')
	return nil
}

// ref is {"artifact":DIGEST}, or null for an unset reference.
func (e *keyEncoder) ref(r nodes.Ref) {
	if r.Node == "" {
		e.buf = append(e.buf, "null"...)
		return
	}
	e.buf = append(e.buf, `{"artifact":"`...)
	e.buf = append(e.buf, e.digest(r.Node)...)
	e.buf = append(e.buf, `"}`...)
}

// expr is {"expr":TEXT,"with":{NAME:TAGGED,...}}, or null when unset.
func (e *keyEncoder) expr(x nodes.Expr) error {
	if x.Expr == nil {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	e.buf = append(e.buf, `{"expr":`...)
	e.string(x.Text)
	e.buf = append(e.buf, `,"with":{`...)
	if x.Ctx != nil {
		names := make([]string, 0, len(x.Ctx.Variables))
		for k := range x.Ctx.Variables {
			names = append(names, k)
		}
		sort.Strings(names)
		for i, k := range names {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(k)
			e.buf = append(e.buf, ':')
			if err := e.ctyTagged(x.Ctx.Variables[k]); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	e.buf = append(e.buf, "}}"...)
	return nil
}

const hexDigits = "0123456789abcdef"

// string writes s between quotes, escaping exactly `"` as \", `\` as \\
// and the bytes 0x00-0x1f as \u00xx (lower-case hex). Every other byte,
// including <, >, &, U+2028, U+2029 and non-ASCII, is written as it is.
func (e *keyEncoder) string(s string) {
	e.buf = append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		e.buf = append(e.buf, s[start:i]...)
		if c < 0x20 {
			e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		} else {
			e.buf = append(e.buf, '\\', c)
		}
		start = i + 1
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}

// float writes the shortest plain decimal (no exponent) that reads back as
// f; -0 is written as 0.
func (e *keyEncoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%v is not a number a key can hold", f)
	}
	if f == 0 {
		f = 0 // -0
	}
	e.buf = strconv.AppendFloat(e.buf, f, 'f', -1, 64)
	return nil
}

// ctyTagged writes a cty value with its type: {"type":T,"value":V}, so
// that a list and a tuple (or a number and a string) of the same text
// never share a key.
func (e *keyEncoder) ctyTagged(v cty.Value) error {
	if v == cty.NilVal {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	e.buf = append(e.buf, `{"type":`...)
	if err := e.ctyType(v.Type()); err != nil {
		return err
	}
	e.buf = append(e.buf, `,"value":`...)
	if err := e.ctyValue(v); err != nil {
		return err
	}
	e.buf = append(e.buf, '}')
	return nil
}

// ctyType writes cty's JSON type notation: "string", "number", "bool",
// "dynamic", ["list",T], ["set",T], ["map",T], ["tuple",[T...]],
// ["object",{NAME:T...}].
func (e *keyEncoder) ctyType(t cty.Type) error {
	switch {
	case t == cty.String:
		e.buf = append(e.buf, `"string"`...)
	case t == cty.Number:
		e.buf = append(e.buf, `"number"`...)
	case t == cty.Bool:
		e.buf = append(e.buf, `"bool"`...)
	case t == cty.DynamicPseudoType:
		e.buf = append(e.buf, `"dynamic"`...)
	case t.IsListType(), t.IsSetType(), t.IsMapType():
		kind := "map"
		if t.IsListType() {
			kind = "list"
		} else if t.IsSetType() {
			kind = "set"
		}
		e.buf = append(e.buf, `["`...)
		e.buf = append(e.buf, kind...)
		e.buf = append(e.buf, `",`...)
		if err := e.ctyType(t.ElementType()); err != nil {
			return err
		}
		e.buf = append(e.buf, ']')
	case t.IsTupleType():
		e.buf = append(e.buf, `["tuple",[`...)
		for i, et := range t.TupleElementTypes() {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			if err := e.ctyType(et); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, "]]"...)
	case t.IsObjectType():
		attrs := t.AttributeTypes()
		names := make([]string, 0, len(attrs))
		for k := range attrs {
			names = append(names, k)
		}
		sort.Strings(names)
		e.buf = append(e.buf, `["object",{`...)
		for i, k := range names {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(k)
			e.buf = append(e.buf, ':')
			if err := e.ctyType(attrs[k]); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, "}]"...)
	default:
		return fmt.Errorf("a key cannot hold a value of type %s", t.FriendlyName())
	}
	return nil
}

// ctyValue writes a value without its type: null, strings and bools as
// for Go values, numbers as their shortest plain decimal at their own
// precision, lists, sets and tuples as arrays (sets in cty's order),
// maps and objects as objects with sorted keys.
func (e *keyEncoder) ctyValue(v cty.Value) error {
	if v.IsMarked() {
		return errors.New("a key cannot hold a marked (sensitive) value")
	}
	if !v.IsKnown() {
		return errors.New("a key cannot hold a value not known before the run")
	}
	if v.IsNull() {
		e.buf = append(e.buf, "null"...)
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		e.string(v.AsString())
	case t == cty.Number:
		f := v.AsBigFloat()
		if f.IsInf() {
			return fmt.Errorf("%v is not a number a key can hold", f)
		}
		if f.Sign() == 0 {
			e.buf = append(e.buf, '0')
		} else {
			e.buf = f.Append(e.buf, 'f', -1)
		}
	case t == cty.Bool:
		e.buf = strconv.AppendBool(e.buf, v.True())
	case t.IsListType(), t.IsSetType(), t.IsTupleType():
		e.buf = append(e.buf, '[')
		i := 0
		for it := v.ElementIterator(); it.Next(); i++ {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			_, el := it.Element()
			if err := e.ctyValue(el); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, ']')
	case t.IsMapType(), t.IsObjectType():
		m := v.AsValueMap()
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		e.buf = append(e.buf, '{')
		for i, k := range keys {
			if i > 0 {
				e.buf = append(e.buf, ',')
			}
			e.string(k)
			e.buf = append(e.buf, ':')
			if err := e.ctyValue(m[k]); err != nil {
				return err
			}
		}
		e.buf = append(e.buf, '}')
	default:
		return fmt.Errorf("a key cannot hold a value of type %s", t.FriendlyName())
	}
	return nil
}

// actionKey is xxhash64 over the key version, node type, logic version,
// canonical config (which carries the input digests) and external identity
// (STORE.md, "Action key").
func actionKey(inst *Instance, config json.RawMessage, identity map[string]string) artifacts.Digest {
	var h xxhash.Digest
	h.Reset()
	for _, s := range [...]string{keyVersion, inst.Decl.TypeName, inst.Type().Version()} {
		h.WriteString(s)
		h.WriteString("\x00")
	}
	h.Write(config)
	h.WriteString("\x00")
	ks := make([]string, 0, len(identity))
	for k := range identity {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	for _, k := range ks {
		h.WriteString(k + "=" + identity[k] + "\x00")
	}
	var sum [8]byte
	var text [16]byte
	binary.BigEndian.PutUint64(sum[:], h.Sum64())
	hex.Encode(text[:], sum[:])
	return artifacts.Digest(text[:]) // %016x
}
