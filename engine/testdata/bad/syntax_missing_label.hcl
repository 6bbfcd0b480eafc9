# expect: 2:15 Missing name for node
node "import" {
  path = "x.jsonl"
}
