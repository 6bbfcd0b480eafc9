# expect: 2:6 Unknown node type | Did you mean "sample"?
node "sampel" "a" {
  input = 1
}
