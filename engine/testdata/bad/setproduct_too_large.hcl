# expect: 3:14 Error in function call | setproduct would produce more than 1000000 elements
node "import" "a" {
  for_each = setproduct(range(1000), range(1000), range(1000))
  path     = "a-${each.key}.jsonl"
}
