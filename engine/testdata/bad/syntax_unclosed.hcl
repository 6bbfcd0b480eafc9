# expect: 2:19 Unclosed configuration block
node "import" "a" {
  path = "x.jsonl"
