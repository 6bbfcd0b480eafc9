package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
)

// functions are the Terraform-style functions available in expressions. All
// are pure: a function whose result could change between runs without its
// arguments changing (timestamp, uuid) is deliberately absent, because an
// expression's value is part of action keys.
func functions(dir string) map[string]function.Function {
	return map[string]function.Function{
		"abs": stdlib.AbsoluteFunc, "ceil": stdlib.CeilFunc, "floor": stdlib.FloorFunc,
		"log": stdlib.LogFunc, "pow": stdlib.PowFunc, "signum": stdlib.SignumFunc,
		"max": stdlib.MaxFunc, "min": stdlib.MinFunc, "parseint": stdlib.ParseIntFunc,
		"chomp": stdlib.ChompFunc, "format": stdlib.FormatFunc, "formatlist": stdlib.FormatListFunc,
		"indent": stdlib.IndentFunc, "join": stdlib.JoinFunc, "lower": stdlib.LowerFunc,
		"upper": stdlib.UpperFunc, "replace": stdlib.ReplaceFunc, "regex": stdlib.RegexFunc,
		"regexall": stdlib.RegexAllFunc, "regex_replace": stdlib.RegexReplaceFunc,
		"split": stdlib.SplitFunc, "strlen": stdlib.StrlenFunc, "strrev": stdlib.ReverseFunc,
		"substr": stdlib.SubstrFunc, "title": stdlib.TitleFunc, "trim": stdlib.TrimFunc,
		"trimprefix": stdlib.TrimPrefixFunc, "trimsuffix": stdlib.TrimSuffixFunc,
		"trimspace": stdlib.TrimSpaceFunc,
		"chunklist": stdlib.ChunklistFunc, "coalesce": stdlib.CoalesceFunc,
		"coalescelist": stdlib.CoalesceListFunc, "compact": stdlib.CompactFunc,
		"concat": stdlib.ConcatFunc, "contains": stdlib.ContainsFunc, "distinct": stdlib.DistinctFunc,
		"element": stdlib.ElementFunc, "flatten": stdlib.FlattenFunc, "index": stdlib.IndexFunc,
		"keys": stdlib.KeysFunc, "length": stdlib.LengthFunc, "lookup": stdlib.LookupFunc,
		"merge": stdlib.MergeFunc, "range": rangeFunc, "reverse": stdlib.ReverseListFunc,
		"setintersection": stdlib.SetIntersectionFunc, "setproduct": setProductFunc,
		"setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
		"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "values": stdlib.ValuesFunc,
		"zipmap":     stdlib.ZipmapFunc,
		"jsonencode": stdlib.JSONEncodeFunc, "jsondecode": stdlib.JSONDecodeFunc,
		"csvdecode":  stdlib.CSVDecodeFunc,
		"formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,
		"tobool": stdlib.MakeToFunc(cty.Bool), "tonumber": stdlib.MakeToFunc(cty.Number),
		"tostring": stdlib.MakeToFunc(cty.String), "tolist": toCollectionFunc(cty.List),
		"toset": toCollectionFunc(cty.Set), "tomap": toCollectionFunc(cty.Map),
		"strcontains": stringPredicate(strings.Contains),
		"startswith":  stringPredicate(strings.HasPrefix),
		"endswith":    stringPredicate(strings.HasSuffix),
		"file":        fileFunc(dir),
		"fileexists":  fileExistsFunc(dir),
	}
}

// maxRange bounds range(): large enough for sweeps of a million instances,
// small enough that a typo cannot exhaust memory.
const maxRange = 1_000_000

// MaxInstances bounds the instances of one pipeline (the sum over its
// for_each expansions) and the elements of one setproduct result. It is
// checked before anything of that size is built, so an explosion is a
// diagnostic at the expression, not an out-of-memory crash.
const MaxInstances = 1_000_000

// uniformElem is the element type shared by every element of a tuple
// (for a list or set) or every attribute of an object (for a map), when
// there is one. go-cty converts such values by unifying the element types
// pairwise, O(n²) in the number of elements; when they are all equal the
// result type is known at once and the conversion is linear.
func uniformElem(ty cty.Type, toMap bool) (cty.Type, bool) {
	var elems []cty.Type
	switch {
	case ty.IsTupleType() && !toMap:
		elems = ty.TupleElementTypes()
	case ty.IsObjectType() && toMap:
		for _, t := range ty.AttributeTypes() {
			elems = append(elems, t)
		}
	default:
		return cty.NilType, false
	}
	if len(elems) == 0 || elems[0] == cty.DynamicPseudoType {
		return cty.NilType, false
	}
	for _, t := range elems[1:] {
		if !t.Equals(elems[0]) {
			return cty.NilType, false
		}
	}
	return elems[0], true
}

// toCollectionFunc is tolist, toset or tomap (mk is cty.List, cty.Set or
// cty.Map): go-cty's conversion, made linear for the common case of a
// tuple or object whose elements all have one type (a for expression over
// strings, the spelling of a sweep).
func toCollectionFunc(mk func(cty.Type) cty.Type) function.Function {
	general := stdlib.MakeToFunc(mk(cty.DynamicPseudoType))
	toMap := mk(cty.String).IsMapType()
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "v", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true}},
		Type: func(args []cty.Value) (cty.Type, error) {
			if et, ok := uniformElem(args[0].Type(), toMap); ok && args[0].IsWhollyKnown() {
				return mk(et), nil
			}
			return general.ReturnTypeForValues(args)
		},
		Impl: func(args []cty.Value, ret cty.Type) (cty.Value, error) {
			v := args[0]
			if _, ok := uniformElem(v.Type(), toMap); !ok || v.IsNull() || !v.IsWhollyKnown() {
				return general.Call(args)
			}
			switch {
			case ret.IsMapType():
				return cty.MapVal(v.AsValueMap()), nil
			case ret.IsSetType():
				return cty.SetVal(v.AsValueSlice()), nil
			default:
				return cty.ListVal(v.AsValueSlice()), nil
			}
		},
	})
}

// setProductFunc is go-cty's setproduct with its result bounded by
// MaxInstances before it is built, and with tuples of one element type
// converted to lists first (linear; go-cty unifies their types in O(n²)).
var setProductFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "sets", Type: cty.DynamicPseudoType, AllowUnknown: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		return stdlib.SetProductFunc.ReturnTypeForValues(listsOfTuples(args))
	},
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		total := 1
		for _, a := range args {
			if !a.IsKnown() || a.IsNull() || !a.CanIterateElements() {
				break
			}
			n := a.LengthInt()
			if n == 0 {
				total = 0
				break
			}
			if total > MaxInstances/n {
				return cty.NilVal, fmt.Errorf("setproduct would produce more than %d elements (the limit on a sweep's size)", MaxInstances)
			}
			total *= n
		}
		return stdlib.SetProductFunc.Call(listsOfTuples(args))
	},
})

func listsOfTuples(args []cty.Value) []cty.Value {
	out := make([]cty.Value, len(args))
	for i, a := range args {
		out[i] = a
		if _, ok := uniformElem(a.Type(), false); ok && a.IsWhollyKnown() && !a.IsNull() {
			out[i] = cty.ListVal(a.AsValueSlice())
		}
	}
	return out
}

// rangeBounds reads range's arguments as Terraform does: (end),
// (start, end) or (start, end, step), start 0 and step 1 by default. A zero
// step, or one that would make more than maxRange values, is an error.
func rangeBounds(nums []float64) (start, end, step float64, err error) {
	step = 1
	switch len(nums) {
	case 1:
		end = nums[0]
	case 2:
		start, end = nums[0], nums[1]
	case 3:
		start, end, step = nums[0], nums[1], nums[2]
	default:
		return 0, 0, 0, fmt.Errorf("range takes one to three numbers, got %d", len(nums))
	}
	if step == 0 {
		return 0, 0, 0, fmt.Errorf("range step must not be zero")
	}
	if (end-start)/step > maxRange {
		return 0, 0, 0, fmt.Errorf("range would produce more than %d values", maxRange)
	}
	return start, end, step, nil
}

// rangeFunc is Terraform's range(end), range(start, end), range(start, end,
// step), without cty's limit of 1,024 values.
var rangeFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "params", Type: cty.Number},
	Type:     function.StaticReturnType(cty.List(cty.Number)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		nums := make([]float64, len(args))
		for i, a := range args {
			nums[i], _ = a.AsBigFloat().Float64()
		}
		start, end, step, err := rangeBounds(nums)
		if err != nil {
			return cty.NilVal, err
		}
		var out []cty.Value
		for v := start; (step > 0 && v < end) || (step < 0 && v > end); v += step {
			out = append(out, cty.NumberFloatVal(v))
		}
		if len(out) == 0 {
			return cty.ListValEmpty(cty.Number), nil
		}
		return cty.ListVal(out), nil
	},
})

// stringPredicate wraps a Go string test as a function of two strings.
func stringPredicate(f func(s, sub string) bool) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "str", Type: cty.String}, {Name: "substr", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			return cty.BoolVal(f(args[0].AsString(), args[1].AsString())), nil
		},
	})
}

// fileFunc reads a file relative to the pipeline directory. Its content, not
// its path, is what reaches a key. Only regular files of at most
// MaxFileSize bytes are read; anything else is an error naming the file.
func fileFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.String),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := readRegularFile(p, MaxFileSize)
			if err != nil {
				return cty.NilVal, fmt.Errorf("cannot read %s: %v", args[0].AsString(), err)
			}
			if !utf8.Valid(b) {
				return cty.NilVal, fmt.Errorf("%s is not valid UTF-8 text; file() reads text only", args[0].AsString())
			}
			return cty.StringVal(string(b)), nil
		},
	})
}

func fileExistsFunc(dir string) function.Function {
	return function.New(&function.Spec{
		Params: []function.Parameter{{Name: "path", Type: cty.String}},
		Type:   function.StaticReturnType(cty.Bool),
		Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
			p := args[0].AsString()
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			st, err := os.Stat(p)
			return cty.BoolVal(err == nil && st.Mode().IsRegular()), nil
		},
	})
}
