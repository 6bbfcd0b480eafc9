# Commands as nodes: one in a container whose image is pinned by digest,
# one on this machine. Each reads its inputs from $LACUNA_IN (<i>.parquet,
# and inputs.json mapping each input's address to its file) and leaves its
# results in $LACUNA_OUT: every top-level file or directory there becomes a
# row (name, kind, size, content_blob, text).
#
#   lacuna plan pipelines/examples/container.hcl   # resolves the tag to its digest
#   lacuna run  pipelines/examples/container.hcl
#   lacuna cat  pipelines/examples/container.hcl node.command.sizes
#
# The image's tag is resolved once per plan and run; the digest is in the
# key of node.command.sizes, so when the tag moves the node runs again and
# `lacuna plan` says "identity changed: image sha256:… → sha256:…".

variable "image" {
  type        = string
  default     = "docker.io/library/python:3.12-slim"
  description = "the image the container runner runs, by tag or digest"
}

variable "data_dir" {
  type        = string
  default     = "../../../shared/data/toolsense"
  description = "folder holding the released ToolSense JSONL files"
}

runner "py" {
  kind   = "container"
  image  = var.image
  cpus   = 2
  memory = "2G"
  env    = { PYTHONHASHSEED = "0" } # all of the environment the container gets, besides LACUNA_IN/OUT
  # engine = "docker"                # default: podman, else docker, on PATH
  # args   = ["--runtime=runc"]      # podman's global options, where a host needs them
  # gpus   = 1                       # CDI nvidia.com/gpu=0 (podman) or --gpus (docker)
}

node "import" "retrieval" {
  path = "${var.data_dir}/toolsense-realistic-retrieval.jsonl"
}

# In the container: /lacuna/in is read-only, /lacuna/out the one writable
# directory; stdout and stderr go to the node's log (lacuna show).
node "command" "sizes" {
  runner = runner.py
  inputs = [node.import.retrieval]
  command = ["python3", "-c", <<-EOT
    import json, os, pathlib
    src, out = pathlib.Path(os.environ["LACUNA_IN"]), pathlib.Path(os.environ["LACUNA_OUT"])
    inputs = json.loads((src / "inputs.json").read_text())
    sizes = {addr: (src / name).stat().st_size for addr, name in inputs.items()}
    (out / "sizes.json").write_text(json.dumps(sizes, indent=2, sort_keys=True) + "\n")
    (out / "magic").mkdir()
    for addr, name in inputs.items():
        (out / "magic" / name).write_bytes((src / name).read_bytes()[:4])
    print("read", len(inputs), "inputs")
  EOT
  ]
}

# On this machine (no runner): a process in the pipeline's directory with
# the run's PATH; its key covers the program's content (here sh), not what
# it reads beyond its inputs.
node "command" "listing" {
  inputs  = [node.import.retrieval]
  command = ["sh", "-c", "ls -l \"$LACUNA_IN\" > \"$LACUNA_OUT/listing.txt\""]
}
