# expect: 2:28 Call to unknown function | 
node "import" "a" { path = uppercase("x.jsonl") }
