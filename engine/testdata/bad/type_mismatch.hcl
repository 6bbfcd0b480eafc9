# expect: 4:11 Incorrect attribute value type | number required
node "import" "a" { path = "x.jsonl" }
node "sample" "s" {
  n     = "many"
  input = node.import.a
}
