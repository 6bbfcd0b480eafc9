# NovelAPIBench's parametric study (seed 000 §4, Appendices E.5 and E.7):
# the knowledge goes into the weights instead of the prompt, and the model
# is asked again with and without the bundle.
#
#   tasks (C1-kept, as quickstart.hcl) → task_split (80/20, seeded)
#     train split → sft_data (the Full cell's prompt → the reference)  → train "sft"  (LoRA)
#                 → raft_data (oracle among 3 distractors, P = 0.8)    → train "raft" (LoRA)
#                 → edit_requests (one per API: "To {} with …, call" → the API) → edit grace | memit | alphaedit
#                   (memit and alphaedit: edit_stats over stats_corpus, once per model)
#     test split → generate with trained = each arm, in two modes:
#                  "with":     the Full bundle prepended, on the whole test split
#                  "stripped": no bundle (cell baseline), on test_sample (30%, the paper's test_sample30)
#                → solve → judge → metrics (pass@1 per arm and mode; the base model's arm beside them)
#
# With holdout set, the leave-one-library-out study (§4, E.7): one SFT
# adapter per train fraction (12/25/50/100%, nested: each a subset of the
# next), trained on the other libraries and asked on the holdout
# libraries' test split and on train_sample (150 tasks of the training
# pool, the same at every fraction).
#
# The model under test is served by lacuna (serve { }): kind
# "transformers" (lacuna's own server, CPU or one GPU: what the tests use
# on a tiny model) or "vllm" (LoRA adapters through --lora-modules; GRACE
# needs transformers). Training and editing run runners/parametric's
# scripts on runner.train: this machine (python = an interpreter with
# runners/parametric/requirements.txt), a container (train_image, pinned by
# digest) or SLURM (train_runner = "slurm"). docs/parametric.md, "The parametric half".
#
#   lacuna run pipelines/parametric.hcl --var base=/models/Qwen2.5-Coder-7B-Instruct \
#     --var model_id=Qwen/Qwen2.5-Coder-7B-Instruct --var serve_kind=vllm --var server=vllm \
#     --var python=/opt/venv/bin/python --var stats_corpus=/data/wikitext-103.jsonl \
#     --var judge_endpoint=http://127.0.0.1:8001/v1 --var judge_id=...
#   lacuna cat pipelines/parametric.hcl node.metrics.table --where difficulty=all --where library=all \
#     --columns model,cell,tasks,pass_at_1,pass_at_1_lo,pass_at_1_hi

variable "libraries" {
  type        = map(object({ ecosystem = string, name = string, domain = string }))
  default     = { lo = { ecosystem = "go", name = "github.com/samber/lo", domain = "data" } }
  description = "the libraries whose C1-kept tasks make the study (one ecosystem: solve runs one toolchain)"
}

variable "cutoff" {
  type    = string
  default = "2024-06-01"
}

variable "model_id" {
  type        = string
  default     = "base"
  description = "the model's id in keys and rows"
}

variable "base" {
  type        = string
  description = "the base model: a Hugging Face directory (config.json, weights, tokenizer), relative to this file or absolute"
}

variable "serve_kind" {
  type        = string
  default     = "transformers"
  description = "the server lacuna starts for the model: transformers (lacuna's own; CPU or one GPU) or vllm"
}

variable "server" {
  type        = string
  default     = ""
  description = "the server's program: for transformers its Python (default: var.python), for vllm the vllm executable"
}

variable "python" {
  type        = string
  default     = "python3"
  description = "the interpreter with runners/parametric/requirements.txt, for training, editing and the transformers server on this machine"
}

variable "train_runner" {
  type        = string
  default     = "local"
  description = "where training and editing run: local, container (train_image) or slurm"
}

variable "train_image" {
  type        = string
  default     = ""
  description = "the training image (python3 with runners/parametric/requirements.txt), by tag or digest, for train_runner = container"
}

variable "gpus" {
  type    = number
  default = 0
}

variable "partition" {
  type    = string
  default = ""
}

variable "methods" {
  type        = list(string)
  default     = ["sft", "raft", "grace", "memit", "alphaedit"]
  description = "the arms: sft, raft (LoRA), grace, memit, alphaedit (edits); memit and alphaedit need stats_corpus"
}

variable "lora_rank" {
  type    = number
  default = 64
}

variable "epochs" {
  type    = number
  default = 3
}

variable "max_steps" {
  type        = number
  default     = 0
  description = "stop training after this many steps (0: var.epochs)"
}

variable "max_length" {
  type        = number
  default     = 4096
  description = "training examples' length in tokens (the Full cell's prompts run to thousands)"
}

variable "threads" {
  type        = number
  default     = 0
  description = "torch's CPU threads in training, editing and serving (0: torch's default)"
}

variable "edit_layers" {
  type        = list(number)
  default     = [4, 5, 6, 7, 8]
  description = "the layers MEMIT and AlphaEdit spread their update over (the MEMIT paper's for GPT-J; choose the model's critical layers)"
}

variable "grace_layer" {
  type        = number
  default     = -1
  description = "GRACE's layer (-1: the script's default, two thirds of the depth)"
}

variable "edit_hparams" {
  type        = map(string)
  default     = {}
  description = "overrides of the editors' hyperparameters (the papers' by default)"
}

variable "stats_corpus" {
  type        = string
  default     = ""
  description = "a JSON-lines or Parquet file with a text column (the paper: Wikitext-103) for MEMIT's and AlphaEdit's key covariance"
}

variable "stats_samples" {
  type    = number
  default = 100000
}

variable "test_sample_fraction" {
  type    = number
  default = 0.3
}

variable "holdout" {
  type        = list(string)
  default     = []
  description = "libraries held out for the leave-one-library-out study (empty: not run)"
}

variable "train_fractions" {
  type    = list(string)
  default = ["0.12", "0.25", "0.5", "1"]
}

variable "max_tokens" {
  type    = number
  default = 1024
}

variable "limit" {
  type        = number
  default     = 0
  description = "tasks per evaluation arm (0: all), for a quick slice"
}

variable "judge_id" {
  type    = string
  default = ""
}

variable "judge_endpoint" {
  type        = string
  default     = ""
  description = "the judge model's server (empty: the judge classifies without a model: the fast path and the deterministic fallback)"
}

runner "train" {
  kind      = var.train_runner
  image     = var.train_runner == "container" ? var.train_image : null
  gpus      = var.gpus == 0 ? null : var.gpus
  partition = var.partition == "" ? null : var.partition
}

model "under_test" {
  id          = var.model_id
  cutoff      = var.cutoff
  max_tokens  = var.max_tokens
  temperature = 0
  # lacuna's transformers server takes no JSON-schema constraint.
  structured_output = var.serve_kind == "transformers" ? "none" : null
  serve {
    kind    = var.serve_kind
    weights = var.base
    command = [var.server != "" ? var.server : (var.serve_kind == "transformers" ? var.python : "vllm"), ]
  }
}

model "judge" {
  id          = var.judge_id == "" ? "judge" : var.judge_id
  endpoint    = var.judge_endpoint == "" ? "http://127.0.0.1:1/v1" : var.judge_endpoint
  max_tokens  = 2048
  temperature = 0
}

locals {
  ecosystem     = { for k, v in var.libraries : k => v.ecosystem == "go" ? null : v.ecosystem }
  eco           = values(local.ecosystem)[0]
  limit         = var.limit == 0 ? null : var.limit
  threads       = var.threads == 0 ? null : var.threads
  train_methods = [for m in var.methods : m if contains(["sft", "raft"], m)]
  edit_methods  = [for m in var.methods : m if contains(["grace", "memit", "alphaedit"], m) && (m == "grace" || var.stats_corpus != "")]
  # The trained arms and the base model's, each asked in both modes.
  arms       = toset(concat(local.train_methods, local.edit_methods, ["base"]))
  evals      = { for p in setproduct(local.arms, ["with", "stripped"]) : "${p[0]}/${p[1]}" => { arm = p[0], mode = p[1] } }
  stats      = toset(var.stats_corpus == "" ? [] : ["corpus"])
  lolo       = length(var.holdout) == 0 ? {} : { for f in var.train_fractions : f => tonumber(f) }
  lolo_evals = { for p in setproduct(keys(local.lolo), ["heldout", "in_dist"]) : "${p[0]}/${p[1]}" => { fraction = p[0], on = p[1] } }
}

# Stages 1-3 and C1, as in quickstart.hcl (same keys).
node "version_resolve" "lib" {
  for_each = var.libraries
  library  = each.value
  cutoff   = model.under_test.cutoff
}

node "surface_diff" "lib" {
  for_each  = var.libraries
  versions  = node.version_resolve.lib[each.key]
  ecosystem = local.ecosystem[each.key]
}

node "bundle" "lib" {
  for_each  = var.libraries
  apis      = node.surface_diff.lib[each.key]
  ecosystem = local.ecosystem[each.key]
}

node "tasks" "lib" {
  for_each  = var.libraries
  bundles   = node.bundle.lib[each.key]
  ecosystem = local.ecosystem[each.key]
}

node "solve" "calibration" {
  for_each    = var.libraries
  tasks       = node.tasks.lib[each.key]
  calibration = true
  ecosystem   = local.ecosystem[each.key]
}

node "c1" "lib" {
  for_each  = var.libraries
  tasks     = node.tasks.lib[each.key]
  samples   = node.solve.calibration[each.key]
  ecosystem = local.ecosystem[each.key]
}

# Every library's tasks and bundles as one table (generate and solve take one).
node "concat" "tasks" {
  inputs = values(node.tasks.lib)
}

node "concat" "bundles" {
  inputs = values(node.bundle.lib)
}

# The paper's single task-level 80/20 split (E.5) with test_sample30.
node "task_split" "study" {
  tasks                = values(node.c1.lib)
  test_fraction        = 0.2
  test_sample_fraction = var.test_sample_fraction
  seed                 = 0
}

node "filter" "test" {
  input = node.task_split.study
  where = row.split == "test"
}

node "filter" "test_sample" {
  input = node.task_split.study
  where = row.split == "test_sample"
}

# Training data from the train split: the evaluation's Full prompt → the
# reference answer (SFT); RAFT's oracle among distractors.
node "sft_data" "train" {
  split   = node.task_split.study
  bundles = values(node.bundle.lib)
  cell    = "Full"
}

node "raft_data" "train" {
  split   = node.task_split.study
  bundles = values(node.bundle.lib)
}

# One LoRA adapter per training-data arm (sft, raft).
node "train" "arm" {
  for_each   = toset(local.train_methods)
  runner     = runner.train
  base       = var.base
  python     = var.python
  data       = each.key == "sft" ? node.sft_data.train : node.raft_data.train
  rank       = var.lora_rank
  epochs     = var.epochs
  max_steps  = var.max_steps == 0 ? null : var.max_steps
  max_length = var.max_length
  threads    = local.threads
}

# One edit request per API of the train split; the APIs of no train task
# are the locality facts an edit must leave alone.
node "edit_requests" "train" {
  bundles = values(node.bundle.lib)
  split   = node.task_split.study
}

node "edit_requests" "locality" {
  bundles    = values(node.bundle.lib)
  split      = node.task_split.study
  complement = true
  limit      = 100
}

node "import" "stats_corpus" {
  for_each = local.stats
  path     = var.stats_corpus
}

node "edit_stats" "corpus" {
  for_each = local.stats
  runner   = runner.train
  base     = var.base
  python   = var.python
  corpus   = node.import.stats_corpus[each.key]
  layers   = var.edit_layers
  samples  = var.stats_samples
  threads  = local.threads
}

# One edit per editor (grace, memit, alphaedit) of every train API; MEMIT
# and AlphaEdit share the key statistics.
node "edit" "arm" {
  for_each = toset(local.edit_methods)
  runner   = runner.train
  method   = each.key
  base     = var.base
  python   = var.python
  requests = node.edit_requests.train
  locality = node.edit_requests.locality
  stats    = each.key == "grace" ? null : node.edit_stats.corpus["corpus"]
  layers   = each.key == "grace" ? (var.grace_layer < 0 ? null : [var.grace_layer]) : var.edit_layers
  hparams  = var.edit_hparams
  threads  = local.threads
}

# E.5: every arm with the bundle (Full, the whole test split) and stripped
# of it (baseline, test_sample); the base model's arm beside them.
node "generate" "eval" {
  for_each = local.evals
  tasks    = each.value.mode == "with" ? node.filter.test : node.filter.test_sample
  bundles  = node.concat.bundles
  model    = model.under_test
  trained = (each.value.arm == "base" ? null :
  contains(local.train_methods, each.value.arm) ? node.train.arm[each.value.arm] : node.edit.arm[each.value.arm])
  cell        = each.value.mode == "with" ? "Full" : "baseline"
  samples     = 1
  temperature = 0
  limit       = local.limit
}

node "solve" "eval" {
  for_each  = local.evals
  tasks     = node.concat.tasks
  solutions = node.generate.eval[each.key]
  ecosystem = local.eco
}

node "judge" "eval" {
  for_each       = local.evals
  tasks          = node.concat.tasks
  samples        = node.solve.eval[each.key]
  model          = var.judge_endpoint == "" ? null : model.judge
  under_test     = var.judge_endpoint == "" ? null : model.under_test
  on_judge_error = var.judge_endpoint == "" ? null : "fallback"
}

# pass@1 per arm (model BASE+train.arm["sft"], …) and cell (Full: with the bundle,
# baseline: stripped).
node "metrics" "table" {
  greedy = values(node.judge.eval)
}

# Leave-one-library-out with train fractions (E.7): one SFT adapter per
# fraction of the non-holdout libraries' tasks.
node "task_split" "lolo" {
  for_each       = local.lolo
  tasks          = values(node.c1.lib)
  split          = "leave_one_library_out"
  holdout        = var.holdout
  train_fraction = each.value
  train_sample   = 150
}

node "filter" "lolo_heldout" {
  for_each = local.lolo
  input    = node.task_split.lolo[each.key]
  where    = row.split == "test"
}

node "filter" "lolo_in_dist" {
  for_each = local.lolo
  input    = node.task_split.lolo[each.key]
  where    = row.split == "train_sample"
}

node "sft_data" "lolo" {
  for_each = local.lolo
  split    = node.task_split.lolo[each.key]
  bundles  = values(node.bundle.lib)
  cell     = "Full"
}

node "train" "lolo" {
  for_each   = local.lolo
  runner     = runner.train
  base       = var.base
  python     = var.python
  data       = node.sft_data.lolo[each.key]
  rank       = var.lora_rank
  epochs     = var.epochs
  max_steps  = var.max_steps == 0 ? null : var.max_steps
  max_length = var.max_length
  threads    = local.threads
}

node "generate" "lolo" {
  for_each    = local.lolo_evals
  tasks       = each.value.on == "heldout" ? node.filter.lolo_heldout[each.value.fraction] : node.filter.lolo_in_dist[each.value.fraction]
  bundles     = node.concat.bundles
  model       = model.under_test
  trained     = node.train.lolo[each.value.fraction]
  cell        = "Full"
  samples     = 1
  temperature = 0
  limit       = local.limit
}

node "solve" "lolo" {
  for_each  = local.lolo_evals
  tasks     = node.concat.tasks
  solutions = node.generate.lolo[each.key]
  ecosystem = local.eco
}

node "judge" "lolo" {
  for_each = local.lolo_evals
  tasks    = node.concat.tasks
  samples  = node.solve.lolo[each.key]
}

# The train-fraction curve: one metrics table per split (rows' model names
# the fraction's train node).
node "metrics" "lolo" {
  for_each = toset(length(local.lolo) == 0 ? [] : ["heldout", "in_dist"])
  greedy   = [for k, v in local.lolo_evals : node.judge.lolo[k] if v.on == each.value]
}
