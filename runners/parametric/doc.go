// Package parametric holds the scripts of lacuna's parametric half, the
// Python package lacuna_parametric (embedded here): trainer (SFT, RAFT and
// ToolGen's two stages with LoRA or full fine-tuning, on TRL, PEFT and
// transformers), the knowledge editors (GRACE, MEMIT, AlphaEdit,
// implemented from their papers), a small OpenAI-compatible server of
// transformers models (base weights, LoRA adapters, GRACE codebooks) and a
// tiny Llama for tests. The Go side writes the scripts where an interpreter
// can import them and names them by digest, so that a node's key changes
// when a script does. It knows nothing of the graph.
//
// The scripts' versions are pinned in requirements.txt; Interpreter checks
// that an interpreter has them.
package parametric
