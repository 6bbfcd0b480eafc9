# NovelAPIBench with a model (seed 000, §3.2-3.3, Appendix E): the
# model-free stages of quickstart.hcl (novel APIs, bundles, tasks, C1), then
# the model-dependent ones against any OpenAI-compatible endpoint (vLLM,
# llama.cpp's server, a hosted API):
#
#   C2  the model, given no knowledge, fails at least 2 of 3 samples at T = 0.8
#   C3  a strong model solves the task given the Full bundle
#   the sweep: every kept task × knowledge cell × retriever × n samples:
#            the oracle prepend (the task's own bundle) and, in the same
#            sweep, real retrievers in its place (Appendix E.4, Figure 3)
#   greedy: the sweep again, one sample per task at T = 0 (the paper's
#            pass@1 is deterministic decoding)
#   the judge: the failure taxonomy (fast path, then the judge model) of
#            the greedy samples
#   metrics: pass@1 (greedy), pass@k (Chen et al., from the sweep), API_acc,
#            Param_corr, Sem and the composition of the pass@1 failures per
#            model × cell × difficulty × library, with score CIs and n
#
#   lacuna plan pipelines/novelapibench.hcl --var endpoint=http://127.0.0.1:8000/v1 \
#     --var strong_id=... --var strong_endpoint=... --var judge_id=... --var judge_endpoint=...
#   lacuna run  pipelines/novelapibench.hcl --var endpoint=http://127.0.0.1:8000/v1 --var strong_id=... ...
#   lacuna cat  pipelines/novelapibench.hcl node.metrics.table \
#     --where difficulty=all --where library=all \
#     --columns model,cell,tasks,pass_at_1,pass_at_5,api_acc,param_corr,sem
#
# Every call is cached in the store as it completes (calls/): adding a model
# or a cell makes only the new calls, and a run killed halfway resumes
# without repeating one. Moving the server (a new endpoint) changes no key.
#
# Oracle versus real retriever (Figure 3): every cell with knowledge runs
# once per retriever of var.retrievers. "oracle" prepends the task's own
# bundle; "bm25" the top-5 chunks (512 tokens, 64 of overlap) of one
# index over the whole bundle pool (every library's bundles, the task's own
# example left out), the task its query; the metrics rows of a retrieved
# arm name the cell CELL@bm25 (S+E and S+E@bm25 side by side). The dense
# retriever of the paper (BAAI/bge-small-en-v1.5, CLS pooling) joins the
# sweep when rag_embedder names its model directory (config.json,
# vocab.txt, model.safetensors; an absolute path, or one relative to this
# file's directory); both arms then count their windows in its WordPiece
# tokens (without it bm25 counts an estimate of them):
#
#   lacuna run pipelines/novelapibench.hcl --var endpoint=... \
#     --var rag_embedder=/models/bge-small-en-v1.5
#
# all-MiniLM-L6-v2 (mean pooling) encodes 256 tokens, not 512:
#   --var rag_embedder=/models/all-MiniLM-L6-v2 --var rag_pooling=mean \
#   --var rag_chunk_tokens=256
#
# retrievers = ["oracle"] runs the oracle sweep alone (half the calls).
#
# Python libraries from PyPI: every library names its ecosystem, which each
# node takes (Go and Python libraries may share a run). As root the
# sandbox runs library code as uid 65534: use /usr/bin/python3 and a store
# under /var/tmp (see python_quickstart.hcl):
#
#   LACUNA_PYTHON=/usr/bin/python3 lacuna run --store /var/tmp/lacuna-nab \
#     pipelines/novelapibench.hcl --var endpoint=... \
#     --var 'libraries={ more_itertools = { ecosystem = "python", name = "more-itertools", domain = "data" } }'

variable "endpoint" {
  type        = string
  default     = "http://127.0.0.1:8000/v1"
  description = "OpenAI-compatible base URL of the model under test"
}

variable "model_id" {
  type    = string
  default = "Qwen/Qwen2.5-Coder-7B-Instruct"
}

variable "served_name" {
  type        = string
  default     = ""
  description = "the id the server reports for the model (default: model_id)"
}

variable "cutoff" {
  type        = string
  default     = "2024-06-01"
  description = "the model's training-data cutoff: what counts as novel"
}

variable "api_key_env" {
  type        = string
  default     = ""
  description = "the environment variable holding the API key, for hosted APIs"
}

# The strong model of C3 ("a strong external LLM") and the judge model of
# the taxonomy (the paper's is GPT-5-mini). Both must be named: left
# empty they are the model under test, and c3 and the greedy judge refuse
# that at plan time (file:line:col) unless allow_self = true.
variable "strong_endpoint" {
  type    = string
  default = ""
}

variable "strong_id" {
  type    = string
  default = ""
}

variable "judge_endpoint" {
  type    = string
  default = ""
}

variable "judge_id" {
  type    = string
  default = ""
}

variable "allow_self" {
  type        = bool
  default     = false
  description = "let the model under test play C3's strong model or the judge (a plan error otherwise: C3 would keep what it solves itself, and it would grade its own answers)"
}

variable "libraries" {
  type        = map(object({ ecosystem = string, name = string, domain = string }))
  description = "the libraries, by key: ecosystem \"go\" (a module path) or \"python\" (a PyPI project)"
  default = {
    lo      = { ecosystem = "go", name = "github.com/samber/lo", domain = "data" }
    zerolog = { ecosystem = "go", name = "github.com/rs/zerolog", domain = "logging" }
    testify = { ecosystem = "go", name = "github.com/stretchr/testify", domain = "testing" }
    gonum   = { ecosystem = "go", name = "gonum.org/v1/gonum", domain = "numerics" }
  }
}

variable "cells" {
  type = list(string)
  default = ["baseline", "S_name", "S", "E", "M_prose", "M_code", "S+M_prose", "S+E", "S+M_code",
  "S+M_prose+M_code", "S+E+M_code", "Full"]
}

variable "retrievers" {
  type        = list(string)
  default     = ["oracle", "bm25"]
  description = "what the sweep's cells prepend: oracle (the task's bundle), bm25 (chunks of the bundle pool); dense joins when rag_embedder is set"
}

variable "rag_embedder" {
  type        = string
  default     = ""
  description = "directory of the dense retriever's BERT sentence encoder (BAAI/bge-small-en-v1.5 in the paper); empty: no dense arm"
}

variable "rag_pooling" {
  type        = string
  default     = "cls"
  description = "the dense encoder's pooling: cls (bge-small-en-v1.5) or mean (all-MiniLM-L6-v2)"
}

variable "rag_chunk_tokens" {
  type        = number
  default     = 512
  description = "tokens of a retrieved chunk (the paper's 512; at most the encoder's max_seq_length when dense: 256 for all-MiniLM-L6-v2)"
}

variable "samples" {
  type        = number
  default     = 20
  description = "samples per task and cell (pass@k needs n >= k)"
}

variable "k" {
  type        = list(number)
  default     = [5]
  description = "the pass@k of the sampled runs (k = 1: c/n, column pass_at_1_sampled); pass@1 is the greedy sample's"
}

variable "temperature" {
  type    = number
  default = 0.8
}

variable "limit" {
  type        = number
  default     = 0
  description = "tasks per library and cell (0: all), for a quick slice; it bounds the judge's calibration too"
}

variable "on_judge_error" {
  type        = string
  default     = ""
  description = "what a judge model call still unreachable after its retries does: fail (the default: the node fails once the other calls are cached) or fallback (the deterministic fallback decides its sample)"
}

model "under_test" {
  id          = var.model_id
  cutoff      = var.cutoff
  endpoint    = var.endpoint
  served_name = var.served_name == "" ? null : var.served_name
  api_key_env = var.api_key_env == "" ? null : var.api_key_env
  max_tokens  = 1024
  concurrency = 32
}

model "strong" {
  id          = var.strong_id == "" ? var.model_id : var.strong_id
  endpoint    = var.strong_endpoint == "" ? var.endpoint : var.strong_endpoint
  served_name = var.strong_id == "" && var.served_name != "" ? var.served_name : null
  api_key_env = var.api_key_env == "" ? null : var.api_key_env
  max_tokens  = 1024
  temperature = 0
}

model "judge" {
  id          = var.judge_id == "" ? var.model_id : var.judge_id
  endpoint    = var.judge_endpoint == "" ? var.endpoint : var.judge_endpoint
  served_name = var.judge_id == "" && var.served_name != "" ? var.served_name : null
  api_key_env = var.api_key_env == "" ? null : var.api_key_env
  max_tokens  = 2048 # room for a reasoning judge's <think> block before its verdict
  temperature = 0
}

locals {
  # The models under test: add a model block and an entry here, and only
  # its calls are made.
  models = { under_test = model.under_test }
  limit  = var.limit == 0 ? null : var.limit
  # Unset, the judge's default ("fail"), and its keys stay as they were.
  on_judge_error = var.on_judge_error == "" ? null : var.on_judge_error
  # Every library calibrates through solve (calibration = true), whose
  # runs c1 and the judge's calibration table reuse.
  # The ecosystem attribute of a library's nodes: null (the default) for
  # Go, so a Go library's keys stay those of quickstart.hcl.
  ecosystem  = { for k, v in var.libraries : k => v.ecosystem == "go" ? null : v.ecosystem }
  pairs      = { for p in setproduct(keys(local.models), keys(var.libraries)) : "${p[0]}/${p[1]}" => { model = p[0], lib = p[1] } }
  retrievers = var.rag_embedder == "" ? var.retrievers : distinct(concat(var.retrievers, ["dense"]))
  # An oracle arm is keyed MODEL/LIB/CELL, a retrieved one
  # MODEL/LIB/CELL@RETRIEVER; baseline prepends nothing to retrieve.
  sweep = { for p in setproduct(keys(local.models), keys(var.libraries), var.cells, local.retrievers) :
    "${p[0]}/${p[1]}/${p[2]}${p[3] == "oracle" ? "" : "@${p[3]}"}" => { model = p[0], lib = p[1], cell = p[2], retriever = p[3] }
  if p[3] == "oracle" || p[2] != "baseline" }
}

# Stages 1-3 and C1, as in quickstart.hcl (same keys: a store that ran the
# quickstart has them all).
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

# C2 (empirical novelty): 3 samples at T = 0.8 with no knowledge; a task
# stays when the model fails at least 2 of them. The seed makes these
# calls other than the sweep's baseline samples (the same prompt at the
# same temperature): without it the sweep would replay C2's samples, the
# ones C2 kept the task for failing. Sample i is sent seed + i, so a seed
# set on the model block must stay far from this one.
node "generate" "c2" {
  for_each    = local.pairs
  tasks       = node.c1.lib[each.value.lib]
  bundles     = node.bundle.lib[each.value.lib]
  model       = local.models[each.value.model]
  cell        = "baseline"
  samples     = 3
  temperature = 0.8
  seed        = 1000000
  limit       = local.limit
}

node "solve" "c2" {
  for_each  = local.pairs
  tasks     = node.tasks.lib[each.value.lib]
  solutions = node.generate.c2[each.key]
  ecosystem = local.ecosystem[each.value.lib]
}

node "c2" "lib" {
  for_each   = local.pairs
  tasks      = node.c1.lib[each.value.lib]
  samples    = node.solve.c2[each.key]
  n          = 3
  min_failed = 2
}

# C3 (informativeness): the strong model, given the Full bundle, solves it.
node "generate" "c3" {
  for_each = local.pairs
  tasks    = node.c2.lib[each.key]
  bundles  = node.bundle.lib[each.value.lib]
  model    = model.strong
  cell     = "Full"
  samples  = 1
}

node "solve" "c3" {
  for_each  = local.pairs
  tasks     = node.tasks.lib[each.value.lib]
  solutions = node.generate.c3[each.key]
  ecosystem = local.ecosystem[each.value.lib]
}

node "c3" "lib" {
  for_each   = local.pairs
  tasks      = node.c2.lib[each.key]
  samples    = node.solve.c3[each.key]
  strong     = model.strong
  under_test = local.models[each.value.model]
  allow_self = var.allow_self
}

# The sweep: every task that passed C1-C3, in every cell and with every
# retriever, n samples each. A retrieved arm searches one index over every
# library's bundles (pool).
node "generate" "sweep" {
  for_each     = local.sweep
  tasks        = node.c3.lib["${each.value.model}/${each.value.lib}"]
  bundles      = node.bundle.lib[each.value.lib]
  model        = local.models[each.value.model]
  cell         = each.value.cell
  retriever    = each.value.retriever
  pool         = each.value.retriever == "oracle" ? [] : values(node.bundle.lib)
  embedder     = each.value.retriever == "oracle" || var.rag_embedder == "" ? null : var.rag_embedder
  pooling      = each.value.retriever == "dense" ? var.rag_pooling : null
  chunk_tokens = each.value.retriever == "oracle" ? null : var.rag_chunk_tokens
  samples      = var.samples
  temperature  = var.temperature
  limit        = local.limit
}

node "solve" "sweep" {
  for_each  = local.sweep
  tasks     = node.tasks.lib[each.value.lib]
  solutions = node.generate.sweep[each.key]
  ecosystem = local.ecosystem[each.value.lib]
}

# The sampled runs give pass@k: their harness verdicts are what counts, so
# the judge classifies them without a model (the fast path and the
# deterministic fallback), making no calls.
node "judge" "sweep" {
  for_each = local.sweep
  tasks    = node.tasks.lib[each.value.lib]
  samples  = node.solve.sweep[each.key]
}

# pass@1 is the paper's greedy decoding (Appendix E.2): one sample per task
# and cell at T = 0, with the same prompts as the sweep. API_acc,
# Param_corr, Sem and the failure composition (over the pass@1 failures)
# are read from these samples, classified by the judge model.
node "generate" "greedy" {
  for_each     = local.sweep
  tasks        = node.c3.lib["${each.value.model}/${each.value.lib}"]
  bundles      = node.bundle.lib[each.value.lib]
  model        = local.models[each.value.model]
  cell         = each.value.cell
  retriever    = each.value.retriever
  pool         = each.value.retriever == "oracle" ? [] : values(node.bundle.lib)
  embedder     = each.value.retriever == "oracle" || var.rag_embedder == "" ? null : var.rag_embedder
  pooling      = each.value.retriever == "dense" ? var.rag_pooling : null
  chunk_tokens = each.value.retriever == "oracle" ? null : var.rag_chunk_tokens
  samples      = 1
  temperature  = 0
  limit        = local.limit
}

node "solve" "greedy" {
  for_each  = local.sweep
  tasks     = node.tasks.lib[each.value.lib]
  solutions = node.generate.greedy[each.key]
  ecosystem = local.ecosystem[each.value.lib]
}

node "judge" "greedy" {
  for_each       = local.sweep
  tasks          = node.tasks.lib[each.value.lib]
  samples        = node.solve.greedy[each.key]
  model          = model.judge
  under_test     = local.models[each.value.model]
  allow_self     = var.allow_self
  sem            = true
  on_judge_error = local.on_judge_error
}

# The judge model's agreement with the classes the calibration solutions
# stand for by construction (the confusion table: lacuna show
# node.judge.calibration["lo"], report "calibration").
node "judge" "calibration" {
  for_each       = var.libraries
  tasks          = node.tasks.lib[each.key]
  samples        = node.solve.calibration[each.key]
  model          = model.judge
  limit          = local.limit
  on_judge_error = local.on_judge_error
}

# Table 1 and Table 3 of the paper, per model: lacuna cat ... node.metrics.table.
# pass@1 from the greedy samples; pass@k (Chen et al.) from the sweep's
# n = var.samples at T = var.temperature; every metric with its 95% score
# interval and the number of tasks it averages (METRIC_lo, _hi, _n).
node "metrics" "table" {
  greedy = values(node.judge.greedy)
  judged = values(node.judge.sweep)
  k      = var.k
}
