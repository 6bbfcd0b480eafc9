# expect: 2:11 Missing required argument | "id"
model "m" {
  cutoff = "2024-06-01"
}
