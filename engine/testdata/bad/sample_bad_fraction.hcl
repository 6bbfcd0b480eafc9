# expect: 4:14 Invalid sample fraction
node "import" "a" { path = "x.jsonl" }
node "sample" "s" {
  fraction = 1.5
  input    = node.import.a
}
