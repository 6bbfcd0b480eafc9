# expect: 3:1 Duplicate variable
variable "x" { default = 1 }
variable "x" { default = 2 }
