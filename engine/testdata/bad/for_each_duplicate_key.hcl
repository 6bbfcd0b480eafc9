# expect: 3:14 Invalid for_each argument | twice
node "import" "a" {
  for_each = ["a", "a"]
  path     = "${each.value}.jsonl"
}
