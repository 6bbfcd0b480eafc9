# expect: 3:7 Error in function call | is a directory; only regular files can be read
locals {
  x = file("bad")
}
node "import" "a" { path = local.x }
