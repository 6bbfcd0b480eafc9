# expect: Cycle in pipeline | local.a → local.b → local.a
locals {
  a = local.b
  b = local.a
}
