// Package parametric holds the node types of the parametric half of both
// papers, each running one of runners/parametric's scripts on the node's
// runner (this machine, a container pinned by digest, or a SLURM job):
// train (SFT, RAFT, ToolGen's stages; LoRA or full fine-tuning), edit
// (GRACE, MEMIT, AlphaEdit) and edit_stats (the key covariance MEMIT and
// AlphaEdit need, computed once per model and corpus). Their outputs are
// one row each naming a weights blob (a LoRA adapter, a full checkpoint or
// a GRACE codebook) in the columns llmenv.TrainedColumns, which a
// model-calling node's `trained` attribute serves through the model's
// server (llmenv.WithTrained).
//
// The training data they read comes from nodes/trainingdata (NovelAPIBench)
// and nodes/toolsense's toolgen_data (ToolSense).
package parametric
