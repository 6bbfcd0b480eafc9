# expect: 3:12 Invalid runner
node "import" "a" {
  runner = "gpu"
  path   = "x.jsonl"
}
