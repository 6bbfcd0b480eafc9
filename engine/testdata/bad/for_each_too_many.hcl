# expect: 3:14 Too many instances | at most 1000000
node "import" "a" {
  for_each = concat(range(1000000), [-1])
  path     = "a-${each.key}.jsonl"
}
