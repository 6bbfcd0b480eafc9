# expect: 3:11 Incorrect attribute value type | artifact reference
node "sample" "s" {
  input = "node.import.a"
  n     = 1
}
