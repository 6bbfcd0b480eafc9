package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"

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
	m := make(map[string]any, len(fields))
	for _, f := range fields {
		v, err := jsonValue(rv.Field(f.Index), digest)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", inst.Addr, f.Name, err)
		}
		m[f.Name] = v
	}
	return json.Marshal(m)
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
