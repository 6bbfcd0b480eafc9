package serve_test

import (
	"fmt"

	"github.com/lacuna-dev/lacuna/runners/serve"
)

func ExampleSpec_Args() {
	spec := serve.Spec{
		Kind:       serve.VLLM,
		Command:    []string{"vllm", "serve"},
		Server:     "vllm/vllm-openai@sha256:…",
		Weights:    []serve.Weights{{Path: "/models/qwen2.5-coder-7b", Digest: "sha256:…"}},
		Adapters:   []serve.Adapter{{Name: "raft", Path: "/adapters/raft", Digest: "sha256:…", Rank: 16}},
		ServedName: "qwen",
		Port:       8000,
		Needs:      serve.Needs{MaxLogprobs: 50, LogprobsMode: "processed_logprobs"},
	}
	args, err := spec.Args()
	if err != nil {
		panic(err)
	}
	fmt.Println(args)
	// Output:
	// [/models/qwen2.5-coder-7b --host 127.0.0.1 --port 8000 --served-model-name qwen --max-logprobs 50 --logprobs-mode processed_logprobs --enable-lora --lora-modules raft=/adapters/raft --max-loras 1 --max-lora-rank 16]
}
