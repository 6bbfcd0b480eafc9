# expect: 3:14 Invalid for_each argument | got number
node "import" "a" {
  for_each = 3
  path     = "x.jsonl"
}
