# expect: 5:3 Unsupported argument
node "import" "a" { path = "x.jsonl" }
node "sample" "b" {
  input = node.import.a
  nn    = 3
}
