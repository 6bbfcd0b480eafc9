# The pipeline of lacuna view's test (cmd/lacuna/view_test.go): a
# NovelAPIBench slice (the offline fixture library example.com/shapes, its
# tasks, two knowledge cells answered by a scripted model, solved and
# judged) and a ToolSense one (BM25 over a slice of the released RRB).

variable "endpoint" {
  type        = string
  description = "the scripted model server"
}

variable "rrb" {
  type        = string
  description = "an RRB JSONL file (a slice of the released one)"
}

model "under_test" {
  id         = "test/under"
  cutoff     = "2024-06-01"
  endpoint   = var.endpoint
  max_tokens = 512
}

model "judge" {
  id          = "test/judge"
  endpoint    = var.endpoint
  temperature = 0
}

library "shapes" {
  ecosystem = "go"
  name      = "example.com/shapes"
  domain    = "test"
}

node "version_resolve" "lib" {
  library = library.shapes
  cutoff  = model.under_test.cutoff
}

node "surface_diff" "lib" {
  versions = node.version_resolve.lib
}

node "bundle" "lib" {
  apis = node.surface_diff.lib
}

node "tasks" "lib" {
  bundles = node.bundle.lib
}

node "generate" "cell" {
  for_each    = toset(["baseline", "S"])
  tasks       = node.tasks.lib
  bundles     = node.bundle.lib
  model       = model.under_test
  cell        = each.value
  samples     = 1
  temperature = 0
  limit       = 3
}

node "solve" "cell" {
  for_each  = toset(["baseline", "S"])
  tasks     = node.tasks.lib
  solutions = node.generate.cell[each.key]
}

node "judge" "cell" {
  for_each   = toset(["baseline", "S"])
  tasks      = node.tasks.lib
  samples    = node.solve.cell[each.key]
  model      = model.judge
  under_test = model.under_test
}

node "import" "rrb" {
  path = var.rrb
}

node "catalog" "rrb" {
  from_rrb = node.import.rrb
}

node "retrieve" "bm25" {
  catalog   = node.catalog.rrb
  queries   = node.import.rrb
  retriever = "bm25"
  k         = 10
}

node "retrieve" "bm25_top3" {
  catalog   = node.catalog.rrb
  queries   = node.import.rrb
  retriever = "bm25"
  k         = 3
}
