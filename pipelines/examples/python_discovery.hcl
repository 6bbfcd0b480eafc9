# NovelAPIBench stages 1-2 for a Python library from PyPI: the releases on
# either side of the model's cutoff, every API of the new one with whether
# it is novel and why it would be filtered out, and the knowledge bundle
# (S, E, M_prose, M_code, licence) of every kept API with a doctest that
# passes in the sandbox.
#
#   lacuna run pipelines/examples/python_discovery.hcl
#   lacuna cat pipelines/examples/python_discovery.hcl node.surface_diff.attrs --where keep
#   lacuna cat pipelines/examples/python_discovery.hcl node.bundle.more_itertools
#
# The index is PIP_INDEX_URL, else UV_INDEX_URL, else UV_DEFAULT_INDEX,
# else pypi.org; the interpreter LACUNA_PYTHON, else python3.

model "qwen25_coder_7b" {
  id     = "Qwen/Qwen2.5-Coder-7B-Instruct"
  cutoff = "2024-06-01"
}

library "attrs" {
  ecosystem = "python"
  name      = "attrs"
}

node "version_resolve" "attrs" {
  library = library.attrs
  cutoff  = model.qwen25_coder_7b.cutoff
}

node "surface_diff" "attrs" {
  versions  = node.version_resolve.attrs
  ecosystem = "python"
}

node "bundle" "attrs" {
  apis      = node.surface_diff.attrs
  ecosystem = "python"
}

# more-itertools documents its functions with doctests: its kept APIs get
# validated examples.
library "more_itertools" {
  ecosystem = "python"
  name      = "more-itertools"
}

node "version_resolve" "more_itertools" {
  library = library.more_itertools
  cutoff  = model.qwen25_coder_7b.cutoff
}

node "surface_diff" "more_itertools" {
  versions  = node.version_resolve.more_itertools
  ecosystem = "python"
}

node "bundle" "more_itertools" {
  apis      = node.surface_diff.more_itertools
  ecosystem = "python"
}
