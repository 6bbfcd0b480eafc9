# NovelAPIBench stages 1-4 on light pure-Python libraries from PyPI, the
# Python counterpart of pipelines/quickstart.hcl through c1 (`make
# quickstart-python` runs it): the releases on either side of
# Qwen2.5-Coder-7B's cutoff, every API of the new release with whether it
# is novel and why it would be filtered out, the knowledge bundle of every
# kept API with an example that passes in the sandbox (a doctest, or a
# fenced ```python block with its "#> " output, as pydantic writes them),
# the graded tasks cut from those examples and C1. Last run (docs/python.md's
# Python quickstart table): tasks / kept by C1 — attrs 0/0 (no example),
# more-itertools 31/29 (21 doctests), pydantic 2/2 (4 of 7 fenced blocks
# pass: 3 print a ValidationError whose "For further information" line the
# stated output leaves out; one calls its API at top level), fastapi 0/0 (its
# 2 fenced blocks fail in the sandbox: they need a built frontend
# directory).
#
#   LACUNA_PYTHON=/usr/bin/python3 lacuna run --store /var/tmp/lacuna-pyq pipelines/examples/python_quickstart.hcl
#   lacuna cat --store /var/tmp/lacuna-pyq pipelines/examples/python_quickstart.hcl 'node.surface_diff.lib["pydantic"]' --where keep
#
# Run as root, the sandbox runs library code as uid 65534: the interpreter
# and the store must be readable by it (/usr/bin/python3, a store under
# /var/tmp). bench/python_discovery.sh times it per library, cold and warm;
# bench/python_griffe_agreement.sh checks the novel sets against griffe.
#
# networkx is left out: its newest release requires Python >= 3.12 and
# the machine's interpreter is 3.11 (with new = "first_after" networkx
# 3.3 -> 3.4 works; see README.md).

model "qwen25_coder_7b" {
  id     = "Qwen/Qwen2.5-Coder-7B-Instruct"
  cutoff = "2024-06-01"
}

library "attrs" {
  ecosystem = "python"
  name      = "attrs"
  domain    = "data"
}

library "more_itertools" {
  ecosystem = "python"
  name      = "more-itertools"
  domain    = "data"
}

library "pydantic" {
  ecosystem = "python"
  name      = "pydantic"
  domain    = "data"
}

library "fastapi" {
  ecosystem = "python"
  name      = "fastapi"
  domain    = "web"
}

locals {
  libraries = {
    attrs          = library.attrs
    more_itertools = library.more_itertools
    pydantic       = library.pydantic
    fastapi        = library.fastapi
  }
}

node "version_resolve" "lib" {
  for_each = local.libraries
  library  = each.value
  cutoff   = model.qwen25_coder_7b.cutoff
}

node "surface_diff" "lib" {
  for_each  = local.libraries
  versions  = node.version_resolve.lib[each.key]
  ecosystem = "python"
}

node "bundle" "lib" {
  for_each  = local.libraries
  apis      = node.surface_diff.lib[each.key]
  ecosystem = "python"
}

# Stage 3-4: graded tasks cut from each bundle's validated doctests, every
# reference observed in the sandbox (novelapibench/pyharness), then C1 with
# the calibration mutants' audit (keep = false rows say why).
node "tasks" "lib" {
  for_each  = local.libraries
  bundles   = node.bundle.lib[each.key]
  ecosystem = "python"
}

node "c1" "lib" {
  for_each  = local.libraries
  tasks     = node.tasks.lib[each.key]
  ecosystem = "python"
}
