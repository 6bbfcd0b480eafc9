# expect: 4:13 Invalid default value for variable | number
variable "n" {
  type    = number
  default = "three"
}
