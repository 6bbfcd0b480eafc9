# ToolSense (seed 002) MCQ and QA probing: a model answers the released
# probes (496 MCQ, 500 QA; ../../shared/data/toolsense, see its README),
# MCQ options shuffled by a seed and answers constrained to A–D, QA to
# Yes/No, accuracy with 95% bootstrap CIs and the positional bias; and
# new MCQ / QA items generated from the released RRB's 4,901-tool catalog
# (generate → validator → judge at temperature 0, up to 3 retries),
# answered by the same model. Needs an OpenAI-compatible server:
#
#   lacuna run pipelines/toolsense_probes.hcl --var endpoint=http://HOST:PORT/v1 --var model_id=MODEL
#   lacuna cat pipelines/toolsense_probes.hcl node.probe_metrics.released
#
# tool_ref = "token" asks about a ToolGen model's virtual token
# <<tool_name>>, spelled as retrieve_parametric spells it (probe_eval's
# token_format, token_open and token_close; the paper's setting); "name" or "description" suit a model without
# tool tokens (description is open book: an upper bound).

variable "data_dir" {
  type        = string
  default     = "../../shared/data/toolsense"
  description = "folder holding the released ToolSense JSONL files"
}

variable "endpoint" {
  type        = string
  default     = "http://127.0.0.1:8000/v1"
  description = "OpenAI-compatible base URL of the model under test"
}

variable "model_id" {
  type        = string
  default     = "reasonwang/ToolGen-Llama-3-8B"
  description = "the model under test"
}

variable "served_name" {
  type        = string
  default     = ""
  description = "the id the server reports for the model (default: model_id)"
}

variable "api_key_env" {
  type        = string
  default     = ""
  description = "the environment variable holding the API key, for hosted APIs"
}

variable "tool_ref" {
  type        = string
  default     = "token"
  description = "how the probes name the tool: token (<<tool_name>>), name or description"
}

variable "token_format" {
  type        = string
  default     = "flat"
  description = "tool_ref = token: flat (<<API&&ENDPOINT>>) or hierarchical (<<API>><<ENDPOINT>>), as the model was trained"
}

# The generator and judge of new items (the paper used claude-4.5-sonnet
# for both); by default, the model under test.
variable "generator_endpoint" {
  type    = string
  default = ""
}

variable "generator_id" {
  type    = string
  default = ""
}

variable "generate_count" {
  type        = number
  default     = 10
  description = "tools of the catalog to generate MCQ and QA items for (seeded sample)"
}

variable "bootstrap" {
  type        = number
  default     = 1000
  description = "bootstrap resamples for the CIs"
}

model "under_test" {
  id          = var.model_id
  endpoint    = var.endpoint
  served_name = var.served_name == "" ? null : var.served_name
  api_key_env = var.api_key_env == "" ? null : var.api_key_env
  temperature = 0
}

model "generator" {
  id          = var.generator_id == "" ? var.model_id : var.generator_id
  endpoint    = var.generator_endpoint == "" ? var.endpoint : var.generator_endpoint
  served_name = var.generator_id == "" && var.served_name != "" ? var.served_name : null
  api_key_env = var.api_key_env == "" ? null : var.api_key_env
  max_tokens  = 1024
}

# The released probes.
node "import" "probes" {
  for_each = toset(["mcq", "qa"])
  path     = "${var.data_dir}/toolsense-${each.value}.jsonl"
}

node "probe_eval" "released" {
  for_each     = toset(["mcq", "qa"])
  items        = node.import.probes[each.value]
  model        = model.under_test
  tool_ref     = var.tool_ref
  token_format = var.tool_ref == "token" ? var.token_format : null
  seed         = 1
}

# New probes from the 4,901 tools of the RRB candidate pools.
node "import" "rrb" {
  path = "${var.data_dir}/toolsense-realistic-retrieval.jsonl"
}

node "catalog" "rrb" {
  from_rrb = node.import.rrb
}

node "mcq_generate" "rrb" {
  catalog = node.catalog.rrb
  model   = model.generator
  count   = var.generate_count
  seed    = 1
  retries = 3
}

node "qa_generate" "rrb" {
  catalog = node.catalog.rrb
  model   = model.generator
  count   = var.generate_count
  seed    = 1
  retries = 3
}

node "probe_eval" "generated_mcq" {
  items        = node.mcq_generate.rrb
  model        = model.under_test
  tool_ref     = var.tool_ref
  token_format = var.tool_ref == "token" ? var.token_format : null
  seed         = 1
}

node "probe_eval" "generated_qa" {
  items        = node.qa_generate.rrb
  model        = model.under_test
  tool_ref     = var.tool_ref
  token_format = var.tool_ref == "token" ? var.token_format : null
}

node "probe_metrics" "released" {
  evals     = values(node.probe_eval.released)
  bootstrap = var.bootstrap
  seed      = 1
}

node "probe_metrics" "generated" {
  evals     = [node.probe_eval.generated_mcq, node.probe_eval.generated_qa]
  bootstrap = var.bootstrap
  seed      = 1
}
