# NovelAPIBench stages 1-2 for a Python library from PyPI: the releases on
# either side of the model's cutoff, and every API of the new one with
# whether it is novel and why it would be filtered out.
#
#   lacuna run pipelines/examples/python_discovery.hcl
#   lacuna cat pipelines/examples/python_discovery.hcl node.surface_diff.attrs --where keep
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
