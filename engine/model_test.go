package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lacuna-dev/lacuna/artifacts"
	"github.com/lacuna-dev/lacuna/nodes"
)

type modelUserConfig struct {
	Model nodes.Model `hcl:"model"`
}

type modelUserType struct{}

func (modelUserType) Name() string    { return "modeluser" }
func (modelUserType) Version() string { return "1" }
func (modelUserType) NewConfig() any  { return &modelUserConfig{} }
func (modelUserType) Run(context.Context, nodes.Run) error {
	return errors.New("modeluser only computes keys")
}

func init() { nodes.Register(modelUserType{}) }

// modelKey expands a pipeline with one model block (attrs) used by one
// node and returns the node's canonical config and decoded model.
func modelKey(t *testing.T, attrs string) (string, nodes.Model, error) {
	t.Helper()
	dir := t.TempDir()
	src := "model \"m\" {\n" + attrs + "\n}\nnode \"modeluser\" \"u\" { model = model.m }\n"
	g, diags := ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, Options{})
	if diags.HasErrors() {
		return "", nodes.Model{}, diags
	}
	inst := g.Instances[0]
	got, err := canonicalConfig(inst, func(string) artifacts.Digest { return "" })
	return string(got), inst.Config.(*modelUserConfig).Model, err
}

func TestModelKeyIsIdentityNotEndpoint(t *testing.T) {
	base := `id = "org/m"` + "\n" + `revision = "abc"` + "\n" + `temperature = 0.8`
	key, m, err := modelKey(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if m.ID != "org/m" || *m.Revision != "abc" || *m.Temperature != 0.8 || m.APIName() != "chat" || m.Served() != "org/m" {
		t.Fatalf("decoded %+v", m)
	}
	same := []string{
		`endpoint = "http://127.0.0.1:9/v1"`, `api_key_env = "KEY"`, `served_name = "m"`,
		`concurrency = 64`, `timeout = "10s"`, `max_retries = 2`, `cutoff = "2024-01-01"`,
		// The default mechanism, spelled out, keeps the key.
		`structured_output = "response_format"`,
	}
	for _, extra := range same {
		k, _, err := modelKey(t, base+"\n"+extra)
		if err != nil {
			t.Fatal(err)
		}
		if k != key {
			t.Errorf("%s changed the key:\n%s\n%s", extra, key, k)
		}
	}
	differ := []string{`revision = "def"`, `temperature = 0.2`, `system = "be brief"`, `think = "keep"`, `api = "completions"`, `max_tokens = 10`, `stop = ["x"]`, `seed = 1`, `params = { top_k = 20 }`,
		// A non-default mechanism can answer differently: cached answers
		// are not replayed for it.
		`structured_output = "structured_outputs"`}
	for _, change := range differ {
		attrs := base
		name, _, _ := strings.Cut(change, " ")
		if strings.Contains(attrs, name+" =") {
			lines := strings.Split(attrs, "\n")
			for i, l := range lines {
				if strings.HasPrefix(l, name+" =") {
					lines[i] = change
				}
			}
			attrs = strings.Join(lines, "\n")
		} else {
			attrs += "\n" + change
		}
		k, _, err := modelKey(t, attrs)
		if err != nil {
			t.Fatal(err)
		}
		if k == key {
			t.Errorf("%s did not change the key", change)
		}
	}
}

func TestModelBlockBadValuesNamePosition(t *testing.T) {
	for _, attrs := range []string{`id = "m"` + "\n" + `api = "embeddings"`, `id = "m"` + "\n" + `think = "drop"`, `id = "m"` + "\n" + `structured_output = "guided_json"`} {
		_, _, err := modelKey(t, attrs)
		if err == nil || !strings.Contains(err.Error(), "p.hcl:3") {
			t.Errorf("%q: want an error at p.hcl:3, got %v", attrs, err)
		}
	}
}

type optionalModelConfig struct {
	Judge *nodes.Model `hcl:"judge,optional"`
}

type optionalModelType struct{ modelUserType }

func (optionalModelType) Name() string   { return "optional_model" }
func (optionalModelType) NewConfig() any { return &optionalModelConfig{} }

func init() { nodes.Register(optionalModelType{}) }

func TestOptionalModelFieldIsNullOrTheKeyView(t *testing.T) {
	dir := t.TempDir()
	src := `model "j" {
  id       = "org/judge"
  endpoint = "http://127.0.0.1:9/v1"
}
node "optional_model" "unset" {}
node "optional_model" "set" { judge = model.j }
`
	g, diags := ExpandSource(filepath.Join(dir, "p.hcl"), []byte(src), dir, Options{})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	want := map[string]string{
		"node.optional_model.unset": `{"judge":null}`,
		"node.optional_model.set":   `{"judge":{"api":"chat","id":"org/judge","max_tokens":0,"params":{},"revision":"","seed":null,"stop":[],"system":"","temperature":null,"think":"strip","top_p":null}}`,
	}
	for _, inst := range g.Instances {
		got, err := canonicalConfig(inst, func(string) artifacts.Digest { return "" })
		if err != nil || string(got) != want[inst.Addr] {
			t.Errorf("%s: %s, %v; want %s", inst.Addr, got, err, want[inst.Addr])
		}
	}
	for _, inst := range g.Instances {
		j := inst.Config.(*optionalModelConfig).Judge
		if set := inst.Addr == "node.optional_model.set"; set != (j != nil) || set && (j.ID != "org/judge" || *j.Endpoint != "http://127.0.0.1:9/v1") {
			t.Errorf("%s: decoded judge %+v", inst.Addr, j)
		}
	}
}

// A non-default structured_output enters the key as the params entry
// structured_outputs (a name params may not use), beside the user's own
// params, which it leaves as they were.
func TestStructuredOutputsEntersTheKeyAsAParam(t *testing.T) {
	key, m, err := modelKey(t, `id = "m"`+"\n"+`params = { top_k = 20 }`+"\n"+`structured_output = "structured_outputs"`)
	if err != nil {
		t.Fatal(err)
	}
	if want := `"params":{"structured_outputs":"true","top_k":"20"}`; !strings.Contains(key, want) {
		t.Errorf("key %s: want %s in it", key, want)
	}
	if len(m.Params) != 1 || m.Params["top_k"] != "20" {
		t.Errorf("the model's params became %v", m.Params)
	}
}

// Each structured_output mode's key: the two spellings of the default
// leave it as it was; the others differ from it and from each other.
func TestStructuredOutputModesInTheKey(t *testing.T) {
	base, _, err := modelKey(t, `id = "m"`)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, tc := range []struct {
		mode    string
		same    bool
		inParam string
	}{
		{"response_format", true, ""},
		{"json_schema", true, ""},
		{"structured_outputs", false, `"structured_outputs":"true"`},
		{"json_object", false, `"structured_outputs":"json_object"`},
		{"none", false, `"structured_outputs":"none"`},
	} {
		key, _, err := modelKey(t, `id = "m"`+"\n"+`structured_output = "`+tc.mode+`"`)
		if err != nil {
			t.Fatalf("%s: %v", tc.mode, err)
		}
		if (key == base) != tc.same {
			t.Errorf("%s: same key as the default %v, want %v", tc.mode, key == base, tc.same)
		}
		if tc.inParam != "" && !strings.Contains(key, tc.inParam) {
			t.Errorf("%s: key %s lacks %s", tc.mode, key, tc.inParam)
		}
		if prev, dup := seen[key]; dup && !tc.same {
			t.Errorf("%s and %s share a key", tc.mode, prev)
		}
		seen[key] = tc.mode
	}
}

// A model's serve { } block is an object attribute: set, its values; a
// bad kind, a missing weights or a second block are errors at their line.
func TestModelServeBlock(t *testing.T) {
	_, m, err := modelKey(t, `id = "m"`+"\n"+"serve {\n  kind = \"llamacpp\"\n  weights = \"m.gguf\"\n  parallel = 2\n}")
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.ServeSpec()
	if err != nil || s == nil || s.Kind != "llamacpp" || s.Weights != "m.gguf" || s.Parallel == nil || *s.Parallel != 2 || s.Command != nil {
		t.Fatalf("serve decoded %+v %v", s, err)
	}
	if _, m, err := modelKey(t, `id = "m"`); err != nil {
		t.Fatal(err)
	} else if s, err := m.ServeSpec(); s != nil || err != nil {
		t.Errorf("no serve block gave %+v %v", s, err)
	}
	for _, tc := range []struct{ attrs, at string }{
		{"serve {\n  kind = \"tgi\"\n  weights = \"m.gguf\"\n}", "p.hcl:4"},
		{"serve {\n  kind = \"llamacpp\"\n}", "p.hcl:3"},
		{"serve {\n  kind = \"llamacpp\"\n  weights = \"a\"\n}\nserve {\n  kind = \"vllm\"\n  weights = \"b\"\n}", "p.hcl:7"},
		{"serve {\n  kind = \"llamacpp\"\n  weights = \"a\"\n  port = 80\n}", "p.hcl:6"},
	} {
		_, _, err := modelKey(t, `id = "m"`+"\n"+tc.attrs)
		if err == nil || !strings.Contains(err.Error(), tc.at) {
			t.Errorf("%q: want an error at %s, got %v", tc.attrs, tc.at, err)
		}
	}
}

// serve = { ... } as an object attribute (what a conditional on a
// variable gives) decodes as the block does; an unknown attribute is an
// error.
func TestModelServeAsAnObject(t *testing.T) {
	_, m, err := modelKey(t, `id = "m"`+"\n"+`serve = 1 == 1 ? { kind = "llamacpp", weights = "m.gguf", command = ["/bin/true"] } : null`)
	if err != nil {
		t.Fatal(err)
	}
	s, err := m.ServeSpec()
	if err != nil || s == nil || s.Kind != "llamacpp" || len(s.Command) != 1 || s.Parallel != nil {
		t.Fatalf("decoded %+v %v", s, err)
	}
	for _, tc := range []struct{ obj, want string }{
		{`{ kind = "llamacpp", weights = "m.gguf", port = 80 }`, `no attribute "port"`},
		{`{ kind = "tgi", weights = "m.gguf" }`, `"tgi" is not one of llamacpp, vllm`},
		{`{ kind = "llamacpp" }`, `needs weights`},
		{`"llamacpp"`, `not string`},
	} {
		_, _, err := modelKey(t, `id = "m"`+"\n"+`serve = `+tc.obj)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "p.hcl:3") {
			t.Errorf("serve = %s: want an error at p.hcl:3 saying %s, got %v", tc.obj, tc.want, err)
		}
	}
	_, m, _ = modelKey(t, `id = "m"`+"\n"+`serve = 1 == 2 ? { kind = "llamacpp", weights = "m.gguf" } : null`)
	if s, err := m.ServeSpec(); s != nil || err != nil {
		t.Errorf("serve = null: %+v %v", s, err)
	}
}
