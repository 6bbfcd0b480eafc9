# expect: 3:14 Reference to undeclared model | Did you mean "qwen"?
model "qwen" { id = "Qwen/Qwen2.5-Coder-7B-Instruct" }
locals { c = model.qwn.cutoff }
