# expect: 2:1 No value for required variable | --var n=VALUE
variable "n" { type = number }
