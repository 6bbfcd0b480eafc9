# expect: 5:11 Unknown variable | Did you mean "row"?
node "import" "a" { path = "x.jsonl" }
node "filter" "f" {
  input = node.import.a
  where = rows.x == 1
}
