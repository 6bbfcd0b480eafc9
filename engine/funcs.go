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
		"setintersection": stdlib.SetIntersectionFunc, "setproduct": stdlib.SetProductFunc,
		"setsubtract": stdlib.SetSubtractFunc, "setunion": stdlib.SetUnionFunc,
		"slice": stdlib.SliceFunc, "sort": stdlib.SortFunc, "values": stdlib.ValuesFunc,
		"zipmap":     stdlib.ZipmapFunc,
		"jsonencode": stdlib.JSONEncodeFunc, "jsondecode": stdlib.JSONDecodeFunc,
		"csvdecode":  stdlib.CSVDecodeFunc,
		"formatdate": stdlib.FormatDateFunc, "timeadd": stdlib.TimeAddFunc,
		"tobool": stdlib.MakeToFunc(cty.Bool), "tonumber": stdlib.MakeToFunc(cty.Number),
		"tostring": stdlib.MakeToFunc(cty.String), "tolist": stdlib.MakeToFunc(cty.List(cty.DynamicPseudoType)),
		"toset": stdlib.MakeToFunc(cty.Set(cty.DynamicPseudoType)), "tomap": stdlib.MakeToFunc(cty.Map(cty.DynamicPseudoType)),
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

// rangeFunc is Terraform's range(end), range(start, end), range(start, end,
// step), without cty's limit of 1,024 values.
var rangeFunc = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "params", Type: cty.Number},
	Type:     function.StaticReturnType(cty.List(cty.Number)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		var start, end, step float64 = 0, 0, 1
		nums := make([]float64, len(args))
		for i, a := range args {
			nums[i], _ = a.AsBigFloat().Float64()
		}
		switch len(nums) {
		case 1:
			end = nums[0]
		case 2:
			start, end = nums[0], nums[1]
		case 3:
			start, end, step = nums[0], nums[1], nums[2]
		default:
			return cty.NilVal, fmt.Errorf("range takes one to three numbers, got %d", len(nums))
		}
		if step == 0 {
			return cty.NilVal, fmt.Errorf("range step must not be zero")
		}
		if (end-start)/step > maxRange {
			return cty.NilVal, fmt.Errorf("range would produce more than %d values", maxRange)
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
