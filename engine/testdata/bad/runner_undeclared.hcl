# expect: 4:12 Reference to undeclared runner | Did you mean "gpu"?
runner "gpu" { concurrency = 1 }
node "import" "a" {
  runner = runner.gpus
  path   = "x.jsonl"
}
