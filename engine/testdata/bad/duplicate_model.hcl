# expect: 3:1 Duplicate model block
model "m" { id = "a" }
model "m" { id = "b" }
