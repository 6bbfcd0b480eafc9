// Package arrowipc writes artifacts as Arrow IPC files, for tools that read
// Arrow rather than Parquet. It is the only package that imports Arrow, so
// the dependency stays out of everything else.
package arrowipc

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/ipc"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// batchRows is the record batch size.
const batchRows = 64 << 10

// Write writes r's rows to w as an Arrow IPC file. Parquet types map to
// their Arrow counterparts; JSON columns become UTF-8 strings holding JSON;
// repeated fields become lists and groups structs.
func Write(w io.WriteSeeker, r *artifacts.Reader) error {
	fields := make([]arrow.Field, 0, len(r.Schema().Fields()))
	for _, f := range r.Schema().Fields() {
		af, err := arrowField(f)
		if err != nil {
			return err
		}
		fields = append(fields, af)
	}
	schema := arrow.NewSchema(fields, nil)
	fw, err := ipc.NewFileWriter(w, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rows := r.Rows()
	for start := 0; start < len(rows); start += batchRows {
		end := min(start+batchRows, len(rows))
		for _, row := range rows[start:end] {
			var v any
			if err := r.Schema().Reconstruct(&v, row); err != nil {
				return err
			}
			m, _ := v.(map[string]any)
			for i, f := range fields {
				if err := appendValue(b.Field(i), f.Type, m[f.Name]); err != nil {
					return fmt.Errorf("column %s: %w", f.Name, err)
				}
			}
		}
		rec := b.NewRecord()
		err := fw.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return fw.Close()
}

func arrowField(n parquet.Field) (arrow.Field, error) {
	t, err := arrowType(n)
	if err != nil {
		return arrow.Field{}, fmt.Errorf("column %s: %w", n.Name(), err)
	}
	if n.Repeated() {
		return arrow.Field{Name: n.Name(), Type: arrow.ListOf(t), Nullable: true}, nil
	}
	return arrow.Field{Name: n.Name(), Type: t, Nullable: n.Optional()}, nil
}

// arrowType maps the element type of a node (ignoring its repetition).
func arrowType(n parquet.Node) (arrow.DataType, error) {
	if !n.Leaf() {
		if lt := n.Type().LogicalType(); lt != nil && isLogical[*format.ListType](lt) {
			elem := n.Fields()[0].Fields()[0] // LIST → repeated group list → element
			et, err := arrowType(elem)
			if err != nil {
				return nil, err
			}
			return arrow.ListOf(et), nil
		}
		var fs []arrow.Field
		for _, f := range n.Fields() {
			af, err := arrowField(f)
			if err != nil {
				return nil, err
			}
			fs = append(fs, af)
		}
		return arrow.StructOf(fs...), nil
	}
	t := n.Type()
	lt := t.LogicalType()
	switch t.Kind() {
	case parquet.Boolean:
		return arrow.FixedWidthTypes.Boolean, nil
	case parquet.Int32:
		return arrow.PrimitiveTypes.Int32, nil
	case parquet.Int64:
		return arrow.PrimitiveTypes.Int64, nil
	case parquet.Float:
		return arrow.PrimitiveTypes.Float32, nil
	case parquet.Double:
		return arrow.PrimitiveTypes.Float64, nil
	case parquet.ByteArray:
		if lt != nil && (isLogical[*format.StringType](lt) || isLogical[*format.JsonType](lt) || isLogical[*format.EnumType](lt)) {
			return arrow.BinaryTypes.String, nil
		}
		return arrow.BinaryTypes.Binary, nil
	case parquet.FixedLenByteArray:
		return &arrow.FixedSizeBinaryType{ByteWidth: t.Length()}, nil
	}
	return nil, fmt.Errorf("no Arrow type for %s", t)
}

func appendValue(b array.Builder, t arrow.DataType, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch b := b.(type) {
	case *array.BooleanBuilder:
		b.Append(v.(bool))
	case *array.Int32Builder:
		b.Append(int32(toInt64(v)))
	case *array.Int64Builder:
		b.Append(toInt64(v))
	case *array.Float32Builder:
		b.Append(float32(toFloat(v)))
	case *array.Float64Builder:
		b.Append(toFloat(v))
	case *array.StringBuilder:
		switch s := v.(type) {
		case string:
			b.Append(s)
		case []byte:
			b.Append(string(s))
		default: // a decoded JSON value
			j, err := json.Marshal(s)
			if err != nil {
				return err
			}
			b.Append(string(j))
		}
	case *array.BinaryBuilder:
		switch s := v.(type) {
		case []byte:
			b.Append(s)
		case string:
			b.Append([]byte(s))
		}
	case *array.FixedSizeBinaryBuilder:
		b.Append(v.([]byte))
	case *array.ListBuilder:
		items, ok := v.([]any)
		if !ok {
			return fmt.Errorf("want a list, got %T", v)
		}
		b.Append(true)
		et := t.(*arrow.ListType).Elem()
		for _, it := range items {
			if err := appendValue(b.ValueBuilder(), et, it); err != nil {
				return err
			}
		}
	case *array.StructBuilder:
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want a group, got %T", v)
		}
		b.Append(true)
		st := t.(*arrow.StructType)
		for i, f := range st.Fields() {
			if err := appendValue(b.FieldBuilder(i), f.Type, m[f.Name]); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unsupported Arrow builder %T", b)
	}
	return nil
}

func isLogical[T format.LogicalTypeValue](lt *format.LogicalType) bool {
	_, ok := lt.Value.(T)
	return ok
}

func toInt64(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	case uint32:
		return int64(x)
	case uint64:
		return int64(x)
	case float64:
		return int64(x)
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	}
	return 0
}
