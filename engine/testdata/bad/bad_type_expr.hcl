# expect: 3:13 Invalid type specification
variable "n" {
  type    = strng
  default = 1
}
