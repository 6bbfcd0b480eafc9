# expect: 4:14 Invalid reference to a node | for_each cannot refer to node outputs
node "import" "a" { path = "x.jsonl" }
node "import" "b" {
  for_each = node.import.a
  path     = "y.jsonl"
}
