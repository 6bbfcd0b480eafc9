# expect: 5:11 Reference to undeclared input variable | Did you mean "size"?
variable "size" { default = 3 }
node "import" "a" { path = "x.jsonl" }
node "sample" "s" {
  n     = var.sise
  input = node.import.a
}
