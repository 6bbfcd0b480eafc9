# expect: 4:14 Invalid endpoint | "not-a-url" has no scheme | endpoint must be an absolute http(s) URL ending in /v1, e.g. http://127.0.0.1:8000/v1 | ONLY
model "m" {
  id       = "org/m"
  endpoint = "not-a-url"
}
