# expect: 4:12 Unknown import format
node "import" "a" {
  path   = "x.data"
  format = "xml"
}
