# expect: 6:29 Invalid reference in variable validation
variable "m" { default = 1 }
variable "n" {
  default = 1
  validation {
    condition     = var.n > var.m
    error_message = "n must exceed m."
  }
}
