# expect: 2:28 Reference to "each" in context without for_each
node "import" "a" { path = each.value }
