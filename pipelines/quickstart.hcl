# NovelAPIBench on four real Go modules, model-free stages: which APIs
# appeared after the model's training cutoff (stage 1), what a model would
# need to know about each (stage 2: the knowledge bundle S, E, M_prose,
# M_code), graded coding tasks with spy-wrapped harnesses, C1 with a harness
# audit, and the failure taxonomy's deterministic judge on the calibration
# solutions (stages 3-4).
#
#   lacuna run pipelines/quickstart.hcl
#   lacuna cat pipelines/quickstart.hcl 'node.bundle.lib["lo"]' --limit 3
#
# Modules come through the Go module proxy (GOPROXY, default
# proxy.golang.org) and are verified against the checksum database.
# Changing the model to one whose cutoff picks the same versions recomputes
# nothing below version_resolve.

# With a model server (--var endpoint=http://127.0.0.1:8000/v1, any
# OpenAI-compatible one), the quickstart also puts the model to the test on
# a small slice: a few C1-kept tasks per library in 3 knowledge cells, one
# sample each, judged and summed up in node.metrics.slice. Without one,
# those nodes have no instances and nothing calls a model.
variable "endpoint" {
  type    = string
  default = ""
}

variable "served_name" {
  type        = string
  default     = ""
  description = "the id the server reports for the model (default: its id)"
}

variable "model_id" {
  type        = string
  default     = "Qwen/Qwen2.5-Coder-7B-Instruct"
  description = "the model under test's id, which its rows carry (another model: --var model_id=... and served_name if its server names it otherwise)"
}

# Or a model lacuna serves itself (--var gguf=PATH.gguf): llama.cpp's
# llama-server (--var llama_server=PATH, default on PATH) started when the
# slice's first call needs it and stopped when the run ends.
variable "gguf" {
  type        = string
  default     = ""
  description = "a GGUF model for a llama-server lacuna starts (instead of endpoint)"
}

variable "llama_server" {
  type    = string
  default = "llama-server"
}

variable "max_tokens" {
  type        = number
  default     = 1024
  description = "the longest answer (a tiny model that rambles to the limit is faster with less)"
}

variable "concurrency" {
  type        = number
  default     = 0
  description = "the most model calls in flight (0: the client's default, at most the server's slots); 1 on a small machine"
}

# The slice's size: the libraries it takes its tasks from and how many
# C1-kept tasks of each (a smaller slice runs only the stages its libraries
# need: with --target 'node.metrics.slice["table"]', one library's).
variable "slice_libraries" {
  type        = list(string)
  default     = ["gonum", "lo", "testify", "zerolog"]
  description = "the libraries the model slice takes its tasks from"
  validation {
    condition     = length(var.slice_libraries) > 0 && length(setsubtract(var.slice_libraries, ["gonum", "lo", "testify", "zerolog"])) == 0
    error_message = "slice_libraries lists some of gonum, lo, testify and zerolog."
  }
}

variable "slice_tasks" {
  type        = number
  default     = 3
  description = "C1-kept tasks per library in the model slice"
  validation {
    condition     = var.slice_tasks >= 1 && floor(var.slice_tasks) == var.slice_tasks
    error_message = "slice_tasks is a whole number, at least 1."
  }
}

locals {
  with_model = var.endpoint != "" || var.gguf != ""
}

model "qwen25_coder_7b" {
  id          = var.model_id
  cutoff      = "2024-06-01"
  endpoint    = var.endpoint == "" ? null : var.endpoint
  serve       = var.gguf == "" ? null : { kind = "llamacpp", weights = var.gguf, command = [var.llama_server], context_size = 16384 }
  served_name = var.served_name == "" ? null : var.served_name
  temperature = 0
  max_tokens  = var.max_tokens
  concurrency = var.concurrency == 0 ? null : var.concurrency
}

library "lo" {
  ecosystem = "go"
  name      = "github.com/samber/lo"
  domain    = "data"
}

library "zerolog" {
  ecosystem = "go"
  name      = "github.com/rs/zerolog"
  domain    = "logging"
}

library "testify" {
  ecosystem = "go"
  name      = "github.com/stretchr/testify"
  domain    = "testing"
}

library "gonum" {
  ecosystem = "go"
  name      = "gonum.org/v1/gonum"
  domain    = "numerics"
}

locals {
  libraries = {
    lo      = library.lo
    zerolog = library.zerolog
    testify = library.testify
    gonum   = library.gonum
  }
}

node "version_resolve" "lib" {
  for_each = local.libraries
  library  = each.value
  cutoff   = model.qwen25_coder_7b.cutoff
}

node "surface_diff" "lib" {
  for_each = local.libraries
  versions = node.version_resolve.lib[each.key]
}

node "bundle" "lib" {
  for_each = local.libraries
  apis     = node.surface_diff.lib[each.key]
}

# Stage 3: easy / medium / hard tasks cut from each bundle's validated
# examples; each reference is observed in the sandbox under the target-API
# spy, which gives its harness the expectations it asserts.
node "tasks" "lib" {
  for_each = local.libraries
  bundles  = node.bundle.lib[each.key]
}

# The reference and the calibration solutions a harness must reject (the
# mask left empty, a sibling API, a wrong import path, a perturbed argument,
# a syntax break), batched into go test runs.
node "solve" "calibration" {
  for_each    = local.libraries
  tasks       = node.tasks.lib[each.key]
  calibration = true
}

# C1: the reference passes its harness; the audit: every calibration
# solution fails it. Dropped tasks stay, with keep = false and the reason.
node "c1" "lib" {
  for_each = local.libraries
  tasks    = node.tasks.lib[each.key]
  samples  = node.solve.calibration[each.key]
}

# The taxonomy's deterministic fast path on the calibration solutions: each
# mutant must land in its class (the confusion table is in the log).
node "judge" "calibration" {
  for_each = local.libraries
  tasks    = node.tasks.lib[each.key]
  samples  = node.solve.calibration[each.key]
}

# The model slice (only with --var endpoint=... or --var gguf=...): 3 tasks
# (slice_tasks) per library (slice_libraries) × 3 cells × 1 sample, oracle
# bundle prepend.
locals {
  slice_cells = local.with_model ? ["baseline", "S", "Full"] : []
  slice       = { for p in setproduct(var.slice_libraries, local.slice_cells) : "${p[0]}/${p[1]}" => { lib = p[0], cell = p[1] } }
}

node "generate" "slice" {
  for_each = local.slice
  tasks    = node.c1.lib[each.value.lib]
  bundles  = node.bundle.lib[each.value.lib]
  model    = model.qwen25_coder_7b
  cell     = each.value.cell
  samples  = 1
  limit    = var.slice_tasks
}

node "solve" "slice" {
  for_each  = local.slice
  tasks     = node.tasks.lib[each.value.lib]
  solutions = node.generate.slice[each.key]
}

node "judge" "slice" {
  for_each = local.slice
  tasks    = node.tasks.lib[each.value.lib]
  samples  = node.solve.slice[each.key]
}

# One sample at temperature 0 (the model block's): the paper's greedy pass@1.
node "metrics" "slice" {
  for_each = local.with_model ? { table = true } : {}
  greedy   = values(node.judge.slice)
}
