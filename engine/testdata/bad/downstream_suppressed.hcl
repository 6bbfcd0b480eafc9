# expect: 3:33 Invalid operand | ONLY
# A broken node yields one error; the nodes that use it are not reported.
node "import" "a" { path = 42 + true }
node "sample" "s" {
  input = node.import.a
  n     = 1
}
node "filter" "f" {
  input = node.sample.s
  where = true
}
