# NovelAPIBench stages 1–2 on four real Go modules: which APIs appeared after
# the model's training cutoff, and what a model would need to know about each
# (the knowledge bundle: S, E, M_prose, M_code).
#
#   lacuna run pipelines/quickstart.hcl
#   lacuna cat pipelines/quickstart.hcl 'node.bundle.lib["lo"]' --limit 3
#
# Modules come through the Go module proxy (GOPROXY, default
# proxy.golang.org) and are verified against the checksum database.
# Changing the model to one whose cutoff picks the same versions recomputes
# nothing below version_resolve.

model "qwen25_coder_7b" {
  id     = "Qwen/Qwen2.5-Coder-7B-Instruct"
  cutoff = "2024-06-01"
}

library "lo" {
  ecosystem = "go"
  name      = "github.com/samber/lo"
  domain    = "data"
}

library "zerolog" {
  ecosystem = "go"
  name      = "github.com/rs/zerolog"
  domain    = "logging"
}

library "testify" {
  ecosystem = "go"
  name      = "github.com/stretchr/testify"
  domain    = "testing"
}

library "gonum" {
  ecosystem = "go"
  name      = "gonum.org/v1/gonum"
  domain    = "numerics"
}

locals {
  libraries = {
    lo      = library.lo
    zerolog = library.zerolog
    testify = library.testify
    gonum   = library.gonum
  }
}

node "version_resolve" "lib" {
  for_each = local.libraries
  library  = each.value
  cutoff   = model.qwen25_coder_7b.cutoff
}

node "surface_diff" "lib" {
  for_each = local.libraries
  versions = node.version_resolve.lib[each.key]
}

node "bundle" "lib" {
  for_each = local.libraries
  apis     = node.surface_diff.lib[each.key]
}
