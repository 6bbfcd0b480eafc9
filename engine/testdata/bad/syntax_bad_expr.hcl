# expect: 2:32 Invalid expression
node "import" "a" { path = 1 + }
