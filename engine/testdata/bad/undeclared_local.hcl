# expect: 3:28 Reference to undeclared local value
locals { n = 3 }
node "import" "a" { path = local.p }
