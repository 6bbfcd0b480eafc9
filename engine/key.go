package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"sync"

	"github.com/cespare/xxhash/v2"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// keyVersion changes only when the key encoding itself changes.
const keyVersion = "lacuna-action-v1"

// canonicalConfig renders an instance's decoded config as JSON with sorted
// keys, input references replaced by their content digests and Expr fields
// by their token text and captured values. Defaults are applied already, so
// writing a default explicitly does not change the key. Node addresses are
// deliberately absent: renaming a node does not recompute anything.
func canonicalConfig(inst *Instance, digest func(addr string) artifacts.Digest) (json.RawMessage, error) {
	fields, err := configFields(inst.Type())
	if err != nil {
		return nil, err
	}
	rv := reflect.ValueOf(inst.Config).Elem()
	buf := make([]byte, 0, 256)
	buf = append(buf, '{')
	for n, f := range sortedFields(inst.Type().Name(), fields) {
		if n > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, f.Name)
		buf = append(buf, ':')
		var err error
		if buf, err = appendJSON(buf, rv.Field(f.Index), digest); err != nil {
			return nil, fmt.Errorf("%s.%s: %w", inst.Addr, f.Name, err)
		}
	}
	return append(buf, '}'), nil
}

var sortedFieldsCache sync.Map // type name → []configField sorted by name

func sortedFields(typeName string, fields []configField) []configField {
	if v, ok := sortedFieldsCache.Load(typeName); ok {
		return v.([]configField)
	}
	out := append([]configField(nil), fields...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	sortedFieldsCache.Store(typeName, out)
	return out
}

// appendJSON encodes the common field types directly (keys are computed
// for every instance on every run) and the rest through jsonValue.
func appendJSON(buf []byte, v reflect.Value, digest func(string) artifacts.Digest) ([]byte, error) {
	switch v.Type() {
	case refGoType:
		r := v.Interface().(nodes.Ref)
		if r.Node == "" {
			return append(buf, "null"...), nil
		}
		return append(append(append(buf, `{"artifact":"`...), digest(r.Node)...), `"}`...), nil
	case refsGoType:
		buf = append(buf, '[')
		for i, r := range v.Interface().([]nodes.Ref) {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = append(append(append(buf, `{"artifact":"`...), digest(r.Node)...), `"}`...)
		}
		return append(buf, ']'), nil
	}
	switch v.Kind() {
	case reflect.String:
		return appendJSONString(buf, v.String()), nil
	case reflect.Bool:
		return strconv.AppendBool(buf, v.Bool()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(buf, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.AppendUint(buf, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("%v is not a number JSON can hold", f)
		}
		return strconv.AppendFloat(buf, f, 'g', -1, 64), nil
	case reflect.Pointer:
		if v.IsNil() {
			return append(buf, "null"...), nil
		}
		return appendJSON(buf, v.Elem(), digest)
	}
	x, err := jsonValue(v, digest)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(x)
	if err != nil {
		return nil, err
	}
	return append(buf, b...), nil
}

// appendJSONString writes s as a JSON string, escaping only what JSON
// requires.
func appendJSONString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c < 0x20:
			buf = append(buf, fmt.Sprintf("\\u%04x", c)...)
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}

func jsonValue(v reflect.Value, digest func(string) artifacts.Digest) (any, error) {
	switch v.Type() {
	case refGoType:
		r := v.Interface().(nodes.Ref)
		if r.Node == "" {
			return nil, nil
		}
		return map[string]string{"artifact": string(digest(r.Node))}, nil
	case refsGoType:
		refs := v.Interface().([]nodes.Ref)
		out := make([]any, len(refs))
		for i, r := range refs {
			out[i] = map[string]string{"artifact": string(digest(r.Node))}
		}
		return out, nil
	case exprGoType:
		e := v.Interface().(nodes.Expr)
		if e.Expr == nil {
			return nil, nil
		}
		with := map[string]json.RawMessage{}
		if e.Ctx != nil {
			for k, val := range e.Ctx.Variables {
				b, err := ctyjson.Marshal(val, cty.DynamicPseudoType)
				if err != nil {
					return nil, err
				}
				with[k] = b
			}
		}
		return map[string]any{"expr": e.Text, "with": with}, nil
	case ctyGoType:
		val := v.Interface().(cty.Value)
		if val == cty.NilVal {
			return nil, nil
		}
		b, err := ctyjson.Marshal(val, cty.DynamicPseudoType)
		if err != nil {
			return nil, err
		}
		return json.RawMessage(b), nil
	}
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil, nil
		}
		return jsonValue(v.Elem(), digest)
	}
	return v.Interface(), nil
}

// actionKey is xxhash64 over the key version, node type, logic version,
// canonical config (which carries the input digests) and external identity.
func actionKey(inst *Instance, config json.RawMessage, identity map[string]string) artifacts.Digest {
	h := xxhash.New()
	h.WriteString(keyVersion + "\x00" + inst.Decl.TypeName + "\x00" + inst.Type().Version() + "\x00")
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
	return artifacts.Digest(fmt.Sprintf("%016x", h.Sum64()))
}
