# expect: 4:11 Reference to undeclared node | Did you mean "node.import.tools"?
node "import" "tools" { path = "x.jsonl" }
node "sample" "s" {
  input = node.import.tool
  n     = 1
}
