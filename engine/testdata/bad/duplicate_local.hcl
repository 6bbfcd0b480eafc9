# expect: 3:10 Duplicate local value
locals { a = 1 }
locals { a = 2 }
