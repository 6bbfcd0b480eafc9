# expect: 2:1 Unsupported block type | "nod"
nod "import" "a" {
  path = "x.jsonl"
}
