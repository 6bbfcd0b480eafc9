# expect: 7:14 Invalid endpoint | "localhost:8000/v1" has no scheme | e.g. http://127.0.0.1:8000/v1
variable "endpoint" {
  default = "localhost:8000/v1"
}
model "m" {
  id       = "org/m"
  endpoint = var.endpoint
}
