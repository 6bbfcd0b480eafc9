# ToolSense (seed 002) parametric retrieval on the released Realistic
# Retrieval Benchmark (500 queries; ../../shared/data/toolsense): a
# ToolGen-style model (one virtual token per tool) served by vLLM, asked
# every query with the K.2 retrieval prompt under constrained decoding
# (only the catalog's tool tokens, beam B) and under free decoding (the
# whole vocabulary, beam B, or one greedy answer with free_search =
# "greedy"), over the 4,901-tool union of the RRB candidate pools; retrieval_eval pairs the two for Rc@k, Rf@k and IS@k = Rf@k / Rc@k
# per tier with 95% bootstrap CIs (IS by the delta method of Appendix G).
#
#   lacuna plan pipelines/toolsense_parametric.hcl --var endpoint=http://127.0.0.1:8000/v1 \
#     --var model_id=ORG/TOOLGEN --var tokens=/models/toolgen/added_tokens.json
#   lacuna run  pipelines/toolsense_parametric.hcl --var ...
#   lacuna cat  pipelines/toolsense_parametric.hcl node.retrieval_eval.parametric \
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
# `tokens` is the model's token → id map: its added_tokens.json, or its
# tokenizer.json; constrained decoding matches the server's answers to it
# by id (return_tokens_as_token_ids). k is min(50, beam): a beam search
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
# beam) continues the first step's token. Through the chat API (api =
# "chat", the default) it is sent as a final assistant message with
# continue_final_message: a chat template that rewrites assistant turns
# (Llama-3's trims their whitespace, Qwen3's adds an empty think block)
# may make that prefix differ from the generated tokens, so check the
# model's template. api = "completions" appends the token to the prompt
# exactly, but sends the prompt without the chat template the model was
# trained with: that is why it is not the default. Flat constrained
# decoding has one step and is exact either way.
#
# Every call is cached in the store as it completes: a re-run, or a new k,
# makes no call.

variable "data_dir" {
  type        = string
  default     = "../../shared/data/toolsense"
  description = "folder holding the released ToolSense JSONL files"
}

variable "endpoint" {
  type        = string
  default     = "http://127.0.0.1:8000/v1"
  description = "OpenAI-compatible base URL of the ToolGen-style model (vLLM)"
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

variable "tokens" {
  type        = string
  default     = "toolgen_tokens.json"
  description = "the model's token → id map (added_tokens.json or tokenizer.json), relative to this file"
}

variable "token_format" {
  type        = string
  default     = "flat"
  description = "flat (<<API&&ENDPOINT>>) or hierarchical (<<API>><<ENDPOINT>>)"
}

variable "beam" {
  type        = number
  default     = 50
  description = "beam width B of constrained decoding (the paper reports B = 50)"
}

variable "api" {
  type        = string
  default     = "chat"
  description = "chat (the model's chat template) or completions (the raw prompt; second steps continue the first token exactly): see the header"
}

variable "free_search" {
  type        = string
  default     = "beam"
  description = "free decoding: beam (the paper's free-form beam search of width beam) or greedy (one generation, read back)"
}

variable "limit" {
  type        = number
  default     = 0
  description = "the first N queries only (0: all 500)"
}

variable "bootstrap" {
  type        = number
  default     = 1000
  description = "bootstrap resamples for the CIs"
}

model "toolgen" {
  id          = var.model_id
  endpoint    = var.endpoint
  served_name = var.served_name == "" ? null : var.served_name
  api         = var.api
}

node "import" "rrb" {
  path = "${var.data_dir}/toolsense-realistic-retrieval.jsonl"
}

# The 4,901 tools of the RRB candidate pools, in first-occurrence order.
node "catalog" "rrb" {
  from_rrb = node.import.rrb
}

node "retrieve_parametric" "constrained" {
  catalog      = node.catalog.rrb
  queries      = node.import.rrb
  model        = model.toolgen
  decoding     = "constrained"
  token_format = var.token_format
  tokens       = var.tokens
  beam         = var.beam
  k            = min(50, var.beam)
  limit        = var.limit == 0 ? null : var.limit
}

node "retrieve_parametric" "free" {
  catalog      = node.catalog.rrb
  queries      = node.import.rrb
  model        = model.toolgen
  decoding     = "free"
  token_format = var.token_format
  beam         = var.free_search == "beam" ? var.beam : null
  k            = min(50, var.beam)
  limit        = var.limit == 0 ? null : var.limit
}

node "retrieval_eval" "parametric" {
  constrained = [node.retrieve_parametric.constrained]
  free        = [node.retrieve_parametric.free]
  k           = [1, 3, 5, 10, 20, 50]
  bootstrap   = var.bootstrap
  seed        = 1
}
