# expect: 5:14 Conflicting sample size
node "import" "a" { path = "x.jsonl" }
node "sample" "s" {
  n        = 3
  fraction = 0.5
  input    = node.import.a
}
