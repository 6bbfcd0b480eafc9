package serve

import (
	"slices"
	"strings"
	"testing"
)

func llamaSpec() Spec {
	return Spec{
		Kind:       LlamaCpp,
		Command:    []string{"/opt/llama-server"},
		Server:     "llama-cpp-python==0.3.36",
		Weights:    []Weights{{Path: "/w/m.gguf", Digest: "sha256:aa"}},
		ServedName: "smollm2",
		Port:       8080,
	}
}

func vllmSpec() Spec {
	return Spec{
		Kind:       VLLM,
		Command:    []string{"vllm", "serve"},
		Server:     "vllm/vllm-openai@sha256:bb",
		Weights:    []Weights{{Path: "/models/qwen", Digest: "sha256:cc"}},
		ServedName: "qwen",
		Port:       8000,
	}
}

func TestArgsDeriveLlamaServerFlags(t *testing.T) {
	base := []string{"-m", "/w/m.gguf", "--host", "127.0.0.1", "--port", "8080", "--alias", "smollm2"}
	tail := []string{"--kv-unified"}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want []string // between base and tail, then --lora…, --no-webui, Extra
	}{
		{"defaults", func(*Spec) {}, append(slices.Clone(tail), "--no-ui")},
		{"host", func(s *Spec) { s.Host = "0.0.0.0" }, nil},
		{"context and slots", func(s *Spec) { s.Needs.ContextSize = 4096; s.Needs.ParallelSlots = 2 },
			[]string{"-c", "4096", "-np", "2", "--kv-unified", "--no-ui"}},
		{"max logprobs needs no flag", func(s *Spec) { s.Needs.MaxLogprobs = 20 }, append(slices.Clone(tail), "--no-ui")},
		{"adapter", func(s *Spec) {
			s.Adapters = []Adapter{{Name: "ft", Path: "/w/lora.gguf", Digest: "sha256:dd", Rank: 8}}
		},
			[]string{"--kv-unified", "--lora", "/w/lora.gguf", "--no-ui"}},
		{"extra last", func(s *Spec) { s.Extra = []string{"-t", "2"} }, []string{"--kv-unified", "--no-ui", "-t", "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := llamaSpec()
			tc.edit(&s)
			got, err := s.Args()
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "host" {
				if i := slices.Index(got, "--host"); i < 0 || got[i+1] != "0.0.0.0" {
					t.Fatalf("args %q: want --host 0.0.0.0", got)
				}
				return
			}
			want := append(slices.Clone(base), tc.want...)
			if !slices.Equal(got, want) {
				t.Fatalf("args\n got %q\nwant %q", got, want)
			}
		})
	}
}

func TestArgsDeriveVLLMFlags(t *testing.T) {
	base := []string{"/models/qwen", "--host", "127.0.0.1", "--port", "8000", "--served-model-name", "qwen"}
	two := []Adapter{
		{Name: "sft", Path: "/a/sft", Digest: "sha256:01", Rank: 16},
		{Name: "raft", Path: "/a/raft", Digest: "sha256:02", Rank: 40},
	}
	for _, tc := range []struct {
		name string
		edit func(*Spec)
		want []string // after base
	}{
		{"defaults", func(*Spec) {}, nil},
		{"max logprobs", func(s *Spec) { s.Needs.MaxLogprobs = 50 }, []string{"--max-logprobs", "50"}},
		{"logprobs mode", func(s *Spec) { s.Needs.LogprobsMode = "processed_logprobs" }, []string{"--logprobs-mode", "processed_logprobs"}},
		{"structured outputs", func(s *Spec) { s.Needs.StructuredBackend = "xgrammar" },
			[]string{"--structured-outputs-config.backend", "xgrammar"}},
		{"structured outputs, vLLM before 0.10.2", func(s *Spec) { s.Needs.StructuredBackend = "outlines"; s.LegacyVLLM = true },
			[]string{"--guided-decoding-backend", "outlines"}},
		{"context and slots", func(s *Spec) { s.Needs.ContextSize = 8192; s.Needs.ParallelSlots = 64 },
			[]string{"--max-model-len", "8192", "--max-num-seqs", "64"}},
		{"LoRA modules, rank rounded up to one vLLM takes", func(s *Spec) { s.Adapters = two },
			[]string{"--enable-lora", "--lora-modules", "sft=/a/sft", "raft=/a/raft", "--max-loras", "2", "--max-lora-rank", "64"}},
		{"LoRA of unknown rank", func(s *Spec) { s.Adapters = []Adapter{{Name: "x", Path: "/a/x", Digest: "sha256:03"}} },
			[]string{"--enable-lora", "--lora-modules", "x=/a/x", "--max-loras", "1"}},
		{"everything, in a fixed order", func(s *Spec) {
			s.Needs = Needs{MaxLogprobs: 20, LogprobsMode: "raw_logprobs", StructuredBackend: "auto", ContextSize: 2048, ParallelSlots: 8}
			s.Adapters = two[:1]
			s.Extra = []string{"--seed", "0"}
		}, []string{"--max-model-len", "2048", "--max-num-seqs", "8", "--max-logprobs", "20", "--logprobs-mode", "raw_logprobs",
			"--structured-outputs-config.backend", "auto", "--enable-lora", "--lora-modules", "sft=/a/sft", "--max-loras", "1",
			"--max-lora-rank", "16", "--seed", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := vllmSpec()
			tc.edit(&s)
			got, err := s.Args()
			if err != nil {
				t.Fatal(err)
			}
			want := append(slices.Clone(base), tc.want...)
			if !slices.Equal(got, want) {
				t.Fatalf("args\n got %q\nwant %q", got, want)
			}
			argv, err := s.Argv()
			if err != nil || !slices.Equal(argv, append([]string{"vllm", "serve"}, want...)) {
				t.Fatalf("argv %q, %v", argv, err)
			}
		})
	}
}

func TestValidateRefusesWhatTheKindCannotHonour(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec func() Spec
		edit func(*Spec)
		want string
	}{
		{"zero value", func() Spec { return Spec{} }, func(*Spec) {}, "no kind"},
		{"unknown kind", llamaSpec, func(s *Spec) { s.Kind = "tgi" }, `unknown kind "tgi"`},
		{"no command", llamaSpec, func(s *Spec) { s.Command = nil }, "no command"},
		{"no weights digest", llamaSpec, func(s *Spec) { s.Weights[0].Digest = "" }, "no digest"},
		{"two weights", llamaSpec, func(s *Spec) { s.Weights = append(s.Weights, s.Weights[0]) }, "exactly one"},
		{"no served name", vllmSpec, func(s *Spec) { s.ServedName = "" }, "no served name"},
		{"port", vllmSpec, func(s *Spec) { s.Port = 70000 }, "out of range"},
		{"adapter without digest", vllmSpec, func(s *Spec) { s.Adapters = []Adapter{{Name: "a", Path: "/a"}} }, `adapter "a": no digest`},
		{"adapter named as the model", vllmSpec, func(s *Spec) { s.Adapters = []Adapter{{Name: "qwen", Path: "/a", Digest: "d"}} }, "used twice"},
		{"llamacpp logprobs mode", llamaSpec, func(s *Spec) { s.Needs.LogprobsMode = "raw_logprobs" }, "no logprobs mode"},
		{"llamacpp structured backend", llamaSpec, func(s *Spec) { s.Needs.StructuredBackend = "xgrammar" }, "no structured-output backend"},
		{"llamacpp two adapters", llamaSpec, func(s *Spec) {
			s.Adapters = []Adapter{{Name: "a", Path: "/a", Digest: "1"}, {Name: "b", Path: "/b", Digest: "2"}}
		}, "at most one adapter"},
		{"vllm logprobs mode", vllmSpec, func(s *Spec) { s.Needs.LogprobsMode = "logits" }, `logprobs mode "logits"`},
		{"vllm backend", vllmSpec, func(s *Spec) { s.Needs.StructuredBackend = "regex" }, `structured backend "regex"`},
		{"vllm rank", vllmSpec, func(s *Spec) { s.Adapters = []Adapter{{Name: "a", Path: "/a", Digest: "1", Rank: 1024}} }, "above vLLM's largest"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.spec()
			tc.edit(&s)
			err := s.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want an error containing %q", err, tc.want)
			}
			if _, aerr := s.Args(); aerr == nil {
				t.Fatal("Args accepted an invalid spec")
			}
		})
	}
	for _, s := range []Spec{llamaSpec(), vllmSpec()} {
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Kind, err)
		}
	}
}

func TestIdentityIsTheModelNotWhereItIsServed(t *testing.T) {
	for _, mk := range []func() Spec{llamaSpec, vllmSpec} {
		base := mk()
		id := base.Identity()
		if !strings.HasPrefix(id, "sha256:") || len(id) != len("sha256:")+64 {
			t.Fatalf("identity %q", id)
		}
		same := map[string]func(*Spec){
			"port":         func(s *Spec) { s.Port = 0 },
			"host":         func(s *Spec) { s.Host = "0.0.0.0" },
			"weights path": func(s *Spec) { s.Weights[0].Path = "/elsewhere/m" },
			"command":      func(s *Spec) { s.Command = []string{"podman", "run", "img", "srv"} },
			"served name":  func(s *Spec) { s.ServedName = "other" },
			"slots":        func(s *Spec) { s.Needs.ParallelSlots = 7 },
			"max logprobs": func(s *Spec) { s.Needs.MaxLogprobs = 5 },
		}
		differs := map[string]func(*Spec){
			"kind":           func(s *Spec) { s.Kind = "other" },
			"server version": func(s *Spec) { s.Server = "other" },
			"weights digest": func(s *Spec) { s.Weights[0].Digest = "sha256:ff" },
			"adapter":        func(s *Spec) { s.Adapters = []Adapter{{Name: "a", Path: "/a", Digest: "sha256:01"}} },
			"context size":   func(s *Spec) { s.Needs.ContextSize = 1024 },
			"extra flags":    func(s *Spec) { s.Extra = []string{"--seed", "1"} },
		}
		if base.Kind == VLLM {
			differs["logprobs mode"] = func(s *Spec) { s.Needs.LogprobsMode = "processed_logits" }
			differs["structured backend"] = func(s *Spec) { s.Needs.StructuredBackend = "guidance" }
		}
		for name, edit := range same {
			s := mk()
			edit(&s)
			if s.Identity() != id {
				t.Errorf("%s: changing the %s changed the identity", base.Kind, name)
			}
		}
		seen := map[string]string{id: "base"}
		for name, edit := range differs {
			s := mk()
			edit(&s)
			got := s.Identity()
			if prev, dup := seen[got]; dup {
				t.Errorf("%s: changing the %s gives the identity of %s", base.Kind, name, prev)
			}
			seen[got] = name
		}
		// The adapter's digest, and the name that selects it, both count.
		a, b := mk(), mk()
		a.Adapters = []Adapter{{Name: "a", Path: "/a", Digest: "sha256:01"}}
		b.Adapters = []Adapter{{Name: "a", Path: "/a", Digest: "sha256:02"}}
		if a.Identity() == b.Identity() {
			t.Errorf("%s: two adapter digests, one identity", base.Kind)
		}
	}
	if llamaSpec().Identity() == vllmSpec().Identity() {
		t.Error("llamacpp and vllm specs share an identity")
	}
}
