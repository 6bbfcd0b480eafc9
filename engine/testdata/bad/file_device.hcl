# expect: 3:7 Error in function call | /dev/zero is a device; only regular files can be read
locals {
  x = file("/dev/zero")
}
node "import" "a" { path = local.x }
