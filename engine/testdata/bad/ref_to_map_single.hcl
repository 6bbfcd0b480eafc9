# expect: 7:11 Incorrect attribute value type | one artifact required, got 2
node "import" "a" {
  for_each = toset(["x", "y"])
  path     = "${each.key}.jsonl"
}
node "sample" "s" {
  input = node.import.a
  n     = 1
}
