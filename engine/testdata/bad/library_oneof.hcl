# expect: 4:15 Invalid value for ecosystem | go, python, npm
library "lo" {
  name      = "github.com/samber/lo"
  ecosystem = "rust"
}
