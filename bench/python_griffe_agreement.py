"""Compares lacuna's Python novel sets with an independent differ.

For each library: the surface_diff rows lacuna wrote (lacuna cat --format
jsonl), the two releases' environments in the store's Python cache, and
griffe's static surface of every top-level package of both releases
(the walk of runners/pyapi/testdata/griffe_surface.py, the dump
runners/pyapi's agreement test uses, over all of a distribution's packages
at once). griffe's novel set: an object of the new release is
novel when neither its alias target's path (canonical) nor any path it is
reachable at was a path of the old release. lacuna's: rows with novel =
true, api_id "module:qualname" read as "module.qualname"; an API that both
find novel under two canonical paths (a class a .pyi stub declares) is
paired by a shared public path. Prints, per library, both / only lacuna /
only griffe and the agreement (both, paired included, over the union),
then every disagreement with what lacuna's row and griffe's dump say
about it.

Usage: python python_griffe_agreement.py STORE LIB=ROWS.jsonl ...
(run by bench/python_griffe_agreement.sh with the griffe venv's python)
"""
import importlib.metadata
import json
import os
import re
import sys

import griffe


def norm(name):
    return re.sub(r"[-_.]+", "_", name).lower()


def site_packages(store, dist, version, prefer=""):
    """The site-packages of an environment in the store holding dist==version
    (the one whose lock digest is prefer when it has it)."""
    envs = os.path.join(store, "cache", "python", "envs")
    found = []
    for digest in sorted(os.listdir(envs)):
        lib = os.path.join(envs, digest, "lib")
        for py in sorted(os.listdir(lib)) if os.path.isdir(lib) else []:
            sp = os.path.join(lib, py, "site-packages")
            if os.path.isdir(os.path.join(sp, f"{norm(dist)}-{version}.dist-info")):
                found.append((digest != prefer, sp))
    if not found:
        raise SystemExit(f"no environment with {dist}=={version} under {envs}")
    return sorted(found)[0][1], f"{norm(dist)}-{version}.dist-info"


def packages(sp, distinfo):
    """Top-level import packages the distribution installs (from RECORD)."""
    out = set()
    with open(os.path.join(sp, distinfo, "RECORD")) as f:
        for line in f:
            path = line.split(",", 1)[0]
            parts = path.split("/")
            if len(parts) >= 2 and parts[1] == "__init__.py" and not parts[0].endswith((".dist-info", ".data")):
                out.add(parts[0])
    return sorted(out)


def dump(sp, pkgs):
    """griffe's static surface of the packages pkgs under sp, loaded together
    (attrs re-exports attr: each resolves the other's aliases): every
    function, class, method and property of them at its canonical path
    (the alias target's) with every public path it is reachable at. The
    walk is runners/pyapi/testdata/griffe_surface.py's for several
    packages: underscore names skipped, test modules skipped, targets
    outside the packages ignored."""
    loader = griffe.GriffeLoader(search_paths=[sp])
    tops = [loader.load(p) for p in pkgs]
    loader.resolve_aliases(implicit=False, external=False)
    objects = {}

    def inside(path):
        return any(path == p or path.startswith(p + ".") for p in pkgs)

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
            if not inside(target.path) or target.is_module:
                continue
            kind = target.kind.value
            if target.is_attribute:
                if "property" not in target.labels:
                    continue
                kind = "property"
            path = prefix + "." + name
            objects.setdefault(target.path, {"canonical": target.path, "kind": kind, "paths": set()})["paths"].add(path)
            if target.is_class:
                visit(target, path)

    def modules(m):
        yield m
        for sub in m.modules.values():
            if not sub.is_alias:
                yield from modules(sub)

    for top in tops:
        for m in modules(top):
            parts = m.path.split(".")[1:]
            if any(p in ("tests", "test", "conftest") or p.startswith("test_") for p in parts):
                continue
            visit(m, m.path)
    return [dict(o, paths=sorted(o["paths"])) for o in objects.values()]


def main(store, specs):
    summary, details = [], []
    for spec in specs:
        lib, rows_path = spec.split("=", 1)
        rows = [json.loads(l) for l in open(rows_path) if l.strip()]
        apis = [r for r in rows if r["api_id"]]
        if not apis:
            summary.append((lib, "", 0, 0, 0, 0, 0, "no APIs: " + "; ".join(r["reasons"] for r in rows)))
            continue
        dist, v_old, v_new, env_new = apis[0]["library"], apis[0]["v_old"], apis[0]["v_new"], apis[0]["v_new_env"]
        old_sp, old_di = site_packages(store, dist, v_old)
        new_sp, new_di = site_packages(store, dist, v_new, env_new)
        pkgs = sorted(set(packages(old_sp, old_di)) | set(packages(new_sp, new_di)))
        old_objs = dump(old_sp, [p for p in pkgs if os.path.isdir(os.path.join(old_sp, p))])
        new_objs = dump(new_sp, [p for p in pkgs if os.path.isdir(os.path.join(new_sp, p))])
        old_paths = set()
        for o in old_objs:
            old_paths.add(o["canonical"])
            old_paths.update(o["paths"])
        griffe_new = {o["canonical"]: o for o in new_objs}
        theirs = {c for c, o in griffe_new.items() if c not in old_paths and not any(p in old_paths for p in o["paths"])}
        by_id = {r["api_id"].replace(":", "."): r for r in apis}
        ours = {i for i, r in by_id.items() if r["novel"]}
        both, only_ours, only_theirs = ours & theirs, sorted(ours - theirs), sorted(theirs - ours)
        # The same API under two canonical paths (griffe takes a class a
        # .pyi stub declares as defined there): paired when lacuna's row and
        # griffe's object share a public path.
        renamed = []
        for i in list(only_ours):
            mine = set(by_id[i]["paths"].split()) | {i}
            for j in list(only_theirs):
                if mine & set(griffe_new[j]["paths"] + [j]):
                    renamed.append((i, j))
                    only_ours.remove(i)
                    only_theirs.remove(j)
                    break
        n = len(both) + len(renamed) + len(only_ours) + len(only_theirs)
        agree = len(both) + len(renamed)
        summary.append((lib, f"{v_old}→{v_new}", len(apis), len(new_objs), len(ours), len(theirs),
                        f"{len(both)} + {len(renamed)}", f"{len(only_ours)} / {len(only_theirs)}",
                        f"{agree}/{n} ({100 * agree / n:.1f}%)" if n else "n/a"))
        for i, j in renamed:
            details.append((lib, "both, canonical differs", i, f"griffe: {j} (shared path)"))
        for i in only_ours:
            r = by_id[i]
            seen = "not in griffe's surface of v_new" if i not in griffe_new else "griffe found it in v_old at " + ", ".join(
                sorted(p for p in [i] + griffe_new[i]["paths"] if p in old_paths))
            details.append((lib, "only lacuna", i, f"{r['kind']}; internal={r['internal']}; file {r['file']}:{r['line']}; {seen}"))
        for i in only_theirs:
            r = by_id.get(i)
            if r is None:
                say = "no lacuna row (griffe paths: " + ", ".join(griffe_new[i]["paths"]) + ")"
            else:
                say = f"lacuna: not novel, {r['how']}" + (f" (same_as {r['same_as']})" if r["same_as"] else "")
            details.append((lib, "only griffe", i, f"{griffe_new[i]['kind']}; {say}"))
    print(f"griffe {importlib.metadata.version('griffe')}, static; lacuna surface_diff rows")
    print()
    print("| library | versions | lacuna APIs | griffe objects | novel (lacuna) | novel (griffe) | both (+ same API, other canonical) | only lacuna / only griffe | agreement |")
    print("|---|---|---|---|---|---|---|---|---|")
    tot = [0, 0, 0, 0, 0, 0, 0, 0]  # lacuna APIs, griffe objects, novel each, both, paired, only each
    for s in summary:
        print("| " + " | ".join(str(x) for x in s) + " |")
        if len(s) == 9:
            b, p = map(int, s[6].split(" + "))
            o, t = map(int, s[7].split(" / "))
            for k, v in enumerate((s[2], s[3], s[4], s[5], b, p, o, t)):
                tot[k] += v
    n = tot[4] + tot[5] + tot[6] + tot[7]
    if n:
        print(f"| all | | {tot[0]} | {tot[1]} | {tot[2]} | {tot[3]} | {tot[4]} + {tot[5]} | {tot[6]} / {tot[7]} "
              f"| {tot[4] + tot[5]}/{n} ({100 * (tot[4] + tot[5]) / n:.1f}%) |")
    if details:
        print()
        print("Disagreements:")
        for lib, side, i, why in details:
            print(f"- {lib} {side}: {i} — {why}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2:])
