# expect: 5:21 Invalid value for variable n | n must be positive
variable "n" {
  default = -1
  validation {
    condition     = var.n > 0
    error_message = "n must be positive."
  }
}
