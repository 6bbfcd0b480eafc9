# The released ToolSense benchmarks (../../../shared/data/toolsense, see its
# README) as artifacts: import, a stratified sample per ambiguity tier, and
# filters. Run it with: lacuna run pipelines/examples/toolsense_data.hcl

variable "data_dir" {
  type        = string
  default     = "../../../shared/data/toolsense"
  description = "folder holding the released ToolSense JSONL files"
}

variable "per_tier" {
  type        = number
  default     = 20
  description = "queries sampled from each complexity tier"

  validation {
    condition     = var.per_tier > 0
    error_message = "per_tier must be positive."
  }
}

locals {
  probes = toset(["mcq", "qa"])
}

# The Realistic Retrieval Benchmark: 500 queries over 14-tool candidate pools.
node "import" "retrieval" {
  path = "${var.data_dir}/toolsense-realistic-retrieval.jsonl"
}

# The MCQ and QA probes, one import each.
node "import" "probes" {
  for_each = local.probes
  path     = "${var.data_dir}/toolsense-${each.value}.jsonl"
}

# A development sample with the same number of queries from each tier.
node "sample" "dev" {
  input = node.import.retrieval
  by    = "complexity"
  n     = var.per_tier
  seed  = 7
}

# One filter per tier, over the full benchmark.
node "filter" "tier" {
  for_each = toset(["easy", "medium", "hard"])
  input    = node.import.retrieval
  where    = row.complexity == each.value
}

# Queries whose candidate pool names a QR-code tool (JSON columns are
# nested values in expressions).
node "filter" "qr_pools" {
  input = node.import.retrieval
  where = length([for t in row.analyzed_tools : t if strcontains(lower(t.tool_name), "qr")]) > 0
}

# The three tiers back together, each row labelled with the filter it came from.
node "concat" "tiers" {
  inputs        = values(node.filter.tier)
  source_column = "from"
}

# Yes/No balance check on the QA probe: only the "No" answers.
node "filter" "qa_no" {
  input = node.import.probes["qa"]
  where = row.answer == "No"
}
