"""An independent surface for the agreement check: griffe (static) loads
PACKAGE from DIR and prints, as JSON, every function, class, method and
property of the package with its canonical path (the alias target's path)
and every path it is reachable at.

Usage: python griffe_surface.py DIR PACKAGE
"""
import importlib.metadata
import json
import sys

import griffe


def main(root, pkg):
    top = griffe.load(pkg, search_paths=[root], resolve_aliases=True, resolve_external=False)
    objects = {}  # canonical path -> {"kind", "paths"}

    def record(obj, path):
        kind = obj.kind.value
        if obj.is_attribute:
            if "property" not in obj.labels:
                return
            kind = "property"
        ent = objects.setdefault(obj.path, {"kind": kind, "paths": set()})
        ent["paths"].add(path)

    def visit(container, prefix):
        for name, member in list(container.members.items()):
            if name.startswith("_"):
                continue
            target = member
            if member.is_alias:
                try:
                    target = member.final_target
                except Exception:
                    continue  # an external import that does not resolve
            if not (target.path == pkg or target.path.startswith(pkg + ".")):
                continue
            path = prefix + "." + name
            if target.is_module:
                continue  # modules are walked on their own
            record(target, path)
            if target.is_class:
                visit(target, path)

    def modules(m):
        yield m
        for sub in m.modules.values():
            if not sub.is_alias:
                yield from modules(sub)

    for m in modules(top):
        parts = m.path.split(".")[1:]
        if any(p in ("tests", "test", "conftest") or p.startswith("test_") for p in parts):
            continue  # as surface.py: test modules are not API
        visit(m, m.path)
    out = [{"canonical": c, "kind": e["kind"], "paths": sorted(e["paths"])} for c, e in sorted(objects.items())]
    json.dump({"griffe": importlib.metadata.version("griffe"), "objects": out}, sys.stdout, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
