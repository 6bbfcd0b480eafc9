package embed

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// tensor is one float32 tensor read from a safetensors file, row-major.
type tensor struct {
	shape []int
	data  []float32
}

// readSafetensors reads every tensor of a safetensors file: an 8-byte
// little-endian header length, a JSON header mapping names to dtype, shape
// and data_offsets (relative to the end of the header), then the raw
// little-endian tensor bytes. F32 tensors are read as they are; integer
// tensors (such as BERT's position_ids buffer) are skipped; any other dtype
// is an error naming the tensor.
func readSafetensors(path string, b []byte) (map[string]tensor, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%s: %d bytes, too short for a safetensors header", path, len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%s: header length %d exceeds the file size", path, n)
	}
	var header map[string]json.RawMessage
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		return nil, fmt.Errorf("%s: safetensors header: %w", path, err)
	}
	body := b[8+n:]
	names := make([]string, 0, len(header))
	for name := range header {
		if name != "__metadata__" {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	out := make(map[string]tensor, len(names))
	for _, name := range names {
		var h struct {
			DType   string   `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(header[name], &h); err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		switch h.DType {
		case "F32":
		case "I64", "I32", "I16", "I8", "U8", "BOOL":
			continue
		default:
			return nil, fmt.Errorf("%s: tensor %q has dtype %s; only F32 weights are supported", path, name, h.DType)
		}
		size := 1
		for _, d := range h.Shape {
			size *= d
		}
		if len(h.Offsets) != 2 || h.Offsets[0] > h.Offsets[1] || h.Offsets[1] > uint64(len(body)) ||
			h.Offsets[1]-h.Offsets[0] != uint64(4*size) {
			return nil, fmt.Errorf("%s: tensor %q: data_offsets %v do not hold shape %v of F32 in %d bytes", path, name, h.Offsets, h.Shape, len(body))
		}
		raw := body[h.Offsets[0]:h.Offsets[1]]
		data := make([]float32, size)
		for i := range data {
			data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		out[name] = tensor{shape: h.Shape, data: data}
	}
	return out, nil
}
