# ToolSense (seed 002) Realistic Retrieval Benchmark generation from a tool
# catalog (§3.1, Appendices J.1 and K.3), evaluated with BM25 retrieval:
#
#   catalog (the 4,901 tools of the released RRB's candidate pools)
#   → neighbors (seeds stratified by service; seed + 13 nearest = 14-tool pools)
#   → rrb_generate (easy / medium / hard; validator, judge at T = 0, ≤ 3 retries)
#   → retrieve bm25 → retrieval_eval (Rc@k per tier, 95% bootstrap CIs)
#
# It needs an OpenAI-compatible model server (vLLM, OpenAI, llama.cpp, ...):
#
#   lacuna plan pipelines/toolsense_generate.hcl --var model_endpoint=http://127.0.0.1:8000/v1 --var model_id=Qwen/Qwen2.5-7B-Instruct
#   lacuna run  pipelines/toolsense_generate.hcl --var model_endpoint=... --var model_id=...
#   lacuna cat  pipelines/toolsense_generate.hcl node.retrieval_eval.generated --columns tier,k,rc_at_k,rc_lo,rc_hi
#
# Without model_dir the pools are BM25 neighbours (no download needed); the
# paper embeds tool descriptions (text-embedding-3-large): set model_dir to a
# local BERT sentence encoder (all-MiniLM-L6-v2, bge-small-en-v1.5 with
# pooling = "cls") for dense pools.

variable "data_dir" {
  type        = string
  default     = "../../shared/data/toolsense"
  description = "folder holding the released ToolSense JSONL files"
}

variable "model_endpoint" {
  type        = string
  default     = "http://127.0.0.1:8000/v1"
  description = "OpenAI-compatible endpoint of the generator and judge"
}

variable "model_id" {
  type        = string
  default     = "Qwen/Qwen2.5-7B-Instruct"
  description = "the model the server serves (the paper used claude-4.5-sonnet)"
}

variable "api_key_env" {
  type        = string
  default     = ""
  description = "environment variable holding the server's API key (empty: none)"
}

variable "model_dir" {
  type        = string
  default     = ""
  description = "local BERT sentence-encoder directory for dense pools; empty: BM25 pools"
}

variable "pooling" {
  type        = string
  default     = "mean"
  description = "the encoder's pooling: mean (all-MiniLM-L6-v2) or cls (bge-small-en-v1.5)"
}

variable "seeds" {
  type        = number
  default     = 10
  description = "anchor tools, stratified by service (the paper generated 500 rows)"
}

variable "bootstrap" {
  type        = number
  default     = 1000
  description = "bootstrap resamples for the CIs"
}

model "generator" {
  id          = var.model_id
  endpoint    = var.model_endpoint
  api_key_env = var.api_key_env
}

node "import" "rrb" {
  path = "${var.data_dir}/toolsense-realistic-retrieval.jsonl"
}

# The 4,901 tools of the released RRB candidate pools.
node "catalog" "rrb" {
  from_rrb = node.import.rrb
}

node "neighbors" "pools" {
  catalog   = node.catalog.rrb
  embedder  = var.model_dir == "" ? "bm25" : "dense"
  model_dir = var.model_dir
  pooling   = var.pooling
  field     = "description"
  k         = 13
  seeds     = var.seeds
  seed      = 1
}

node "rrb_generate" "rrb" {
  catalog = node.catalog.rrb
  pools   = node.neighbors.pools
  model   = model.generator
  samples = { easy = 3, medium = 3, hard = 2 }
  retries = 3
}

node "retrieve" "generated_bm25" {
  catalog   = node.catalog.rrb
  queries   = node.rrb_generate.rrb
  retriever = "bm25"
  k         = 50
}

node "retrieval_eval" "generated" {
  retrieved = [node.retrieve.generated_bm25]
  k         = [1, 3, 5, 10, 20, 50]
  bootstrap = var.bootstrap
  seed      = 1
}
