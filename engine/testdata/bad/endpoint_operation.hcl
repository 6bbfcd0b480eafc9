# expect: 4:14 Invalid endpoint | is the URL of an operation, not the API's base: drop /chat/completions
model "m" {
  id       = "org/m"
  endpoint = "http://127.0.0.1:8000/v1/chat/completions"
}
