# ToolSense (seed 002) retrieval evaluation on the released Realistic
# Retrieval Benchmark (500 queries; ../../shared/data/toolsense, see its
# README): BM25 over the 4,901-tool union of the RRB candidate pools, Rc@k
# per tier with 95% bootstrap CIs. No model needed. Run it with:
#
#   lacuna run pipelines/toolsense.hcl
#   lacuna cat pipelines/toolsense.hcl node.retrieval_eval.rrb --columns retriever,tier,k,rc_at_k,rc_lo,rc_hi

variable "data_dir" {
  type        = string
  default     = "../../shared/data/toolsense"
  description = "folder holding the released ToolSense JSONL files"
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

node "retrieval_eval" "rrb" {
  retrieved = [node.retrieve.bm25]
  k         = [1, 3, 5, 10, 20, 50]
  bootstrap = var.bootstrap
  seed      = 1
}
