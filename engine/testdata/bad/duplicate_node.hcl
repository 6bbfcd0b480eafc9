# expect: 3:1 Duplicate node | node.import.a was already declared at
node "import" "a" { path = "x.jsonl" }
node "import" "a" { path = "y.jsonl" }
