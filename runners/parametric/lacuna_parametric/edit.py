"""Edit a causal language model's knowledge with GRACE, MEMIT or AlphaEdit.

    python -m lacuna_parametric.edit --method grace|memit|alphaedit \\
        --base DIR --requests FILE.parquet --out DIR \\
        [--stats DIR | --corpus FILE [--stats-out DIR]] [--layers 1,2] \\
        [--hparams '{"v_lr": 0.5}'] [--locality FILE.parquet] [--seed 0] [--threads N]

    python -m lacuna_parametric.edit --stats-only --base DIR --corpus FILE \\
        --stats-out DIR [--layers 1,2] [--max-texts N]

Requests (parquet or JSONL): prompt (with "{}" for the subject), subject,
target (the new object), optional target_true (the old object: adds the
probability version of efficacy) and paraphrase (another prompt for the
same fact; every "{}" in it becomes the subject). Locality facts: prompt,
subject, target, facts that must not change.

--out receives, for memit and alphaedit, model/ (the edited checkpoint and
tokenizer, safetensors, in the base's dtype); for grace, codebook.safetensors
and grace.json (the base is not copied: editutil.load_edited(out, base) or
grace.attach(model, out) puts the codebook on a loaded base); and always,
written last, manifest.json:
  method, hparams (all, after overrides), layers, requests, seed
  efficacy_pre, efficacy_post   share of requests whose greedy continuation
                                of prompt.format(subject) starts with target
  efficacy_prob_pre/_post       share with mean-token p(target) > p(target_true)
                                (with target_true)
  paraphrase_pre, paraphrase    efficacy on the paraphrases (with paraphrase)
  locality                      share of locality facts whose greedy
                                continuation (target's tokens + 1) is unchanged
  locality_target_pre/_post     share of locality facts answered with their target
  wall_seconds, edit_seconds, stats (what the statistics were computed
  from: model and corpus sha256, layers, samples; null for grace),
  versions, outputs (each request's continuation before and after) and
  diagnostics (the editor's).

Statistics (memit, alphaedit): E[k kᵀ] of the edited layers' MLP output
projection inputs over a corpus (JSONL {"text"} or parquet with a text
column), saved as stats.safetensors + stats.json (model config and weights
sha256, corpus sha256, layers, samples: the number of token keys); --stats
reuses them. Statistics of another model configuration are an error; of
other weights with the same configuration (a model edited before) a
warning, as MEMIT keeps the base model's statistics.

Default layers: for an n-layer model, round(n/8)..round(n/4) (at least
1..2): Llama3-8B's 4..8 as in AlphaEdit, 1,2 for the 4-layer tiny model.
GRACE takes one layer, by default round(n/2) (2 for the tiny model).

--device (auto: cuda when there is one) and --dtype (float32) are where and
in what the edit is computed. Progress goes to stderr ("request i/N ...");
an error is one line on stderr and exit status 2.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import random
import shutil
import sys
import time

METHODS = ("grace", "memit", "alphaedit")


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def default_layers(n: int, method: str | None) -> list[int]:
    if method == "grace":
        return [min(n - 1, round(n / 2))]
    lo = max(1, round(n / 8))
    hi = max(lo + 1, round(n / 4))
    return list(range(lo, min(hi, n - 1) + 1))


def parse_layers(s: str) -> list[int]:
    try:
        return [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--layers {s!r}: want comma-separated layer indices, e.g. 1,2")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m lacuna_parametric.edit", description=__doc__.split("\n\n")[0])
    p.add_argument("--method", choices=METHODS)
    p.add_argument("--base", required=True, help="the model directory to edit")
    p.add_argument("--requests", help="edit requests, parquet or JSONL")
    p.add_argument("--out", help="output directory")
    p.add_argument("--stats", help="a directory of statistics from --stats-only")
    p.add_argument("--stats-out", help="save the statistics computed here")
    p.add_argument("--stats-only", action="store_true", help="compute statistics and stop")
    p.add_argument("--corpus", help="texts for the statistics, JSONL {\"text\"} or parquet")
    p.add_argument("--max-texts", type=int, default=0, help="use the first N corpus texts (0: all)")
    p.add_argument("--layers", help="comma-separated layer indices")
    p.add_argument("--hparams", default="{}", help="JSON object of hyperparameter overrides")
    p.add_argument("--locality", help="facts that must not change, parquet or JSONL")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                   help="dtype to edit in (the checkpoint is saved in the base's dtype)")
    return p


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _stats(a, model, tok, layers, log) -> tuple[dict, dict]:
    from . import editutil as eu

    digests = eu.model_digests(a.base)
    if a.stats:
        mom2, meta = eu.load_stats(a.stats, layers)
        if meta.get("model_config_sha256") != digests["model_config_sha256"]:
            raise UsageError(f"--stats {a.stats}: computed for another model configuration than {a.base}")
        if meta.get("model_weights_sha256") != digests.get("model_weights_sha256"):
            log(f"warning: --stats {a.stats} was computed on other weights than {a.base}'s (fine for an already edited model)")
        return mom2, dict(meta, dir=os.path.abspath(a.stats), computed=False)
    texts = eu.read_texts(a.corpus, a.max_texts)
    log(f"stats: {len(texts)} texts, layers {layers}")
    mom2, count = eu.compute_stats(model, tok, texts, layers, log=log)
    meta = dict(digests, corpus_sha256=eu.sha256_file(a.corpus), corpus=os.path.abspath(a.corpus),
                layers=layers, samples=count, texts=len(texts), max_texts=a.max_texts, format=1)
    if a.stats_out:
        eu.save_stats(a.stats_out, mom2, meta)
        meta = json.load(open(os.path.join(a.stats_out, eu.STATS_META)))
        meta["dir"] = os.path.abspath(a.stats_out)
    return mom2, dict(meta, computed=True)


def run(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    t0 = time.time()
    try:
        overrides = json.loads(a.hparams)
    except json.JSONDecodeError as e:
        raise UsageError(f"--hparams: not JSON: {e}")
    if not isinstance(overrides, dict):
        raise UsageError("--hparams: want a JSON object")
    if not a.stats_only:
        for flag in ("method", "requests", "out"):
            if not getattr(a, flag):
                raise UsageError(f"--{flag} is required (unless --stats-only)")
    elif not (a.corpus and a.stats_out):
        raise UsageError("--stats-only needs --corpus and --stats-out")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from . import alphaedit, editutil as eu, grace, memit

    # Inputs are checked before the model is loaded, so a mistake fails fast.
    if not os.path.exists(os.path.join(a.base, "config.json")):
        raise UsageError(f"--base {a.base}: no config.json")
    hp, requests, locality = None, [], []
    if not a.stats_only:
        hp_cls = {"grace": grace.HParams, "memit": memit.HParams, "alphaedit": alphaedit.HParams}[a.method]
        hp = eu.hparams_from(hp_cls, overrides, a.method)
        if a.method != "grace" and not (a.stats or a.corpus):
            raise UsageError(f"--method {a.method} needs --stats DIR or --corpus FILE")
        requests = eu.read_requests(a.requests)
        locality = eu.read_requests(a.locality, "locality facts") if a.locality else []

    import transformers

    transformers.utils.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()  # stderr is progress lines and errors
    if a.threads > 0:
        torch.set_num_threads(a.threads)
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
    dtype = getattr(torch, a.dtype)
    tok = AutoTokenizer.from_pretrained(a.base)
    model = AutoModelForCausalLM.from_pretrained(a.base, dtype=dtype).to(device).eval()
    with open(os.path.join(a.base, "config.json")) as f:
        cfg = json.load(f)
    saved_dtype = getattr(torch, str(cfg.get("dtype") or cfg.get("torch_dtype") or a.dtype), dtype)
    n_layers = eu.num_layers(model)
    layers = eu.check_layers(model, parse_layers(a.layers) if a.layers else default_layers(n_layers, a.method))

    if a.stats_only:
        _, meta = _stats(a, model, tok, layers, _log)
        _log(f"stats: {meta['samples']} tokens, layers {layers} -> {a.stats_out}")
        return 0

    if a.method == "grace" and len(layers) != 1:
        raise UsageError(f"--method grace edits one layer, not {layers}")
    mom2, stats_meta = (None, None)
    if a.method != "grace":
        mom2, stats_meta = _stats(a, model, tok, layers, _log)

    _log(f"evaluating the base model on {len(requests)} requests and {len(locality)} locality facts")
    pre = eu.evaluate(model, tok, requests)
    base_loc = eu.locality_outputs(model, tok, locality) if locality else []
    loc_pre = (sum(eu.starts_with(tok, ids, f["target"]) for ids, f in zip(base_loc, locality)) / len(locality)
               if locality else None)

    t_edit = time.time()
    if a.method == "grace":
        adaptor, info = grace.edit(model, tok, requests, layers[0], hp, log=_log)
    elif a.method == "memit":
        info = memit.edit(model, tok, requests, layers, memit.closed_form(mom2, hp), hp, seed=a.seed, log=_log)
    else:
        info = alphaedit.edit(model, tok, requests, layers, mom2, hp, seed=a.seed, log=_log)
    edit_seconds = time.time() - t_edit

    _log("evaluating the edited model")
    post = eu.evaluate(model, tok, requests, locality, base_loc)

    # Data first, the manifest last: a directory with a manifest is complete.
    os.makedirs(a.out, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.remove(os.path.join(a.out, "manifest.json"))
    if a.method == "grace":
        adaptor.save(a.out, {"base": os.path.abspath(a.base), "base_digests": eu.model_digests(a.base),
                             "epsilon_init": hp.epsilon_init, "hparams": dataclasses.asdict(hp)})
    else:
        final = os.path.join(a.out, "model")
        tmp = os.path.join(a.out, ".model.tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        if saved_dtype != dtype:  # edited in --dtype, saved in the base's
            model = model.to(saved_dtype)
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)

    manifest = {
        "method": a.method,
        "base": os.path.abspath(a.base),
        "hparams": dataclasses.asdict(hp),
        "layers": layers,
        "requests": len(requests),
        "locality_facts": len(locality),
        "seed": a.seed,
        "efficacy_pre": pre["efficacy"],
        "efficacy_post": post["efficacy"],
        "edit_seconds": edit_seconds,
        "wall_seconds": time.time() - t0,
        "stats": stats_meta,
        "versions": eu.versions(),
        "outputs": [{"subject": r["subject"], "target": r["target"], "pre": p, "post": q}
                    for r, p, q in zip(requests, pre["outputs"], post["outputs"])],
        "diagnostics": info,
    }
    if "efficacy_prob" in post:
        manifest["efficacy_prob_pre"], manifest["efficacy_prob_post"] = pre["efficacy_prob"], post["efficacy_prob"]
    if "paraphrase" in post:
        manifest["paraphrase_pre"], manifest["paraphrase"] = pre["paraphrase"], post["paraphrase"]
    if locality:
        manifest["locality"] = post["locality"]
        manifest["locality_target_pre"], manifest["locality_target_post"] = loc_pre, post["locality_target"]
    eu.write_json(os.path.join(a.out, "manifest.json"), manifest)
    summary = f"efficacy {pre['efficacy']:.3f} -> {post['efficacy']:.3f}"
    if locality:
        summary += f", locality {post['locality']:.3f}"
    _log(f"{a.method}: {summary} ({manifest['wall_seconds']:.1f}s) -> {a.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    try:
        return run(argv)
    except SystemExit as e:  # --help
        return int(e.code or 0)
    except Exception as e:  # one line, exit 2 (the contract of every lacuna_parametric CLI)
        msg = " ".join(str(e).split()) or type(e).__name__
        print(f"edit: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
