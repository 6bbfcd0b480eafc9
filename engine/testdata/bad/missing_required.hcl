# expect: 2:19 Missing required argument | "input"
node "sample" "b" {
  n = 3
}
