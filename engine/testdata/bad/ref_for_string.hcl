# expect: 3:28 Incorrect attribute value type
node "import" "a" { path = "x.jsonl" }
node "import" "b" { path = node.import.a }
