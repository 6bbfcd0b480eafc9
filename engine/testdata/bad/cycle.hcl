# expect: 2:1 Cycle in pipeline | node.filter.a → node.filter.b → node.filter.a
node "filter" "a" {
  input = node.filter.b
  where = true
}
node "filter" "b" {
  input = node.filter.a
  where = true
}
