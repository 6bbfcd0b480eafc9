# expect: 2:28 Unknown variable | Did you mean "var"?
node "import" "a" { path = vr.x }
