"""What the knowledge editors share: where a model's edited weights are,
how a fact is tokenized, keys and hidden states at a subject's last token,
the key covariance statistics, evaluation, and loading an edited model.

Architecture access is in one place (`out_proj`, `block`): the editors touch
only a transformer block's output and its MLP's output projection, which for
Llama-style models (LlamaForCausalLM, Mistral, Qwen2, ...) are
`model.model.layers[i]` and `model.model.layers[i].mlp.down_proj`. A new
architecture needs a branch there and nowhere else.

A *request* is a dict with `prompt` (a template with one "{}" where the
subject goes, e.g. "{} lives in"), `subject`, `target` (the new object,
e.g. "Tokyo"), and optionally `target_true` and `paraphrase`. The object
follows the prompt after one space, so a target is tokenized as " " + target.

Nothing here prints or reads the environment; functions that report
progress take a `log` callable.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from typing import Callable, Iterable, Sequence

import torch

Log = Callable[[str], None]


def _nolog(_: str) -> None:
    pass


# ---------------------------------------------------------------------------
# Architecture access: the only code that knows module paths.

def _layers(model):
    inner = getattr(model, "model", None)
    layers = getattr(inner, "layers", None)
    if layers is None:
        raise ValueError(f"{type(model).__name__}: not a Llama-style model (no model.layers)")
    return layers


def num_layers(model) -> int:
    """The number of transformer blocks."""
    return len(_layers(model))


def block(model, layer: int):
    """Transformer block `layer`; its output is the residual stream after it."""
    return _layers(model)[layer]


def out_proj(model, layer: int) -> torch.nn.Linear:
    """The MLP output projection of block `layer` (Llama: mlp.down_proj).
    Its input is the editors' key space, its output their value space; its
    weight has shape [hidden, intermediate]."""
    return _layers(model)[layer].mlp.down_proj


def out_proj_name(layer: int) -> str:
    """The state-dict name of out_proj(model, layer).weight."""
    return f"model.layers.{layer}.mlp.down_proj.weight"


def check_layers(model, layers: Sequence[int]) -> list[int]:
    n = num_layers(model)
    out = sorted(set(int(x) for x in layers))
    if not out:
        raise ValueError("no layers given")
    for x in out:
        if x < 0 or x >= n:
            raise ValueError(f"layer {x} is out of range (the model has {n} layers: 0..{n - 1})")
    return out


# ---------------------------------------------------------------------------
# Inputs.

def hparams_from(cls, overrides: dict, method: str):
    """An instance of the dataclass cls with overrides (by field name)
    applied; unknown names and values of the wrong type are errors."""
    import dataclasses

    names = {f.name for f in dataclasses.fields(cls)}
    bad = sorted(set(overrides) - names)
    if bad:
        raise ValueError(f"unknown hyperparameters {bad} for {method} (known: {sorted(names)})")
    hp = cls()
    for k, v in overrides.items():
        cur = getattr(hp, k)
        ok = (isinstance(v, str) if isinstance(cur, str) else
              isinstance(v, int) and not isinstance(v, bool) if isinstance(cur, int) else
              isinstance(v, (int, float)) and not isinstance(v, bool))
        if isinstance(cur, int) and isinstance(v, float) and v.is_integer():
            v, ok = int(v), True
        if not ok:
            raise ValueError(f"hyperparameter {k} = {v!r}: want a {type(cur).__name__}")
        setattr(hp, k, type(cur)(v))
    return hp


def read_table(path: str) -> list[dict]:
    """Rows of a parquet or JSONL file as dicts."""
    if path.endswith(".jsonl") or path.endswith(".json"):
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    import pyarrow.parquet as pq

    return pq.read_table(path).to_pylist()


def read_requests(path: str, what: str = "requests") -> list[dict]:
    """Edit requests (or locality facts) from parquet/JSONL, validated."""
    rows = read_table(path)
    if not rows:
        raise ValueError(f"{path}: no {what}")
    out = []
    for i, r in enumerate(rows):
        for col in ("prompt", "subject", "target"):
            if not isinstance(r.get(col), str) or not r[col].strip():
                raise ValueError(f"{path}: {what} row {i}: column {col!r} is missing or empty")
        if r["prompt"].count("{}") != 1:
            raise ValueError(f"{path}: {what} row {i}: prompt {r['prompt']!r} must hold exactly one {{}} for the subject")
        q = {k: r[k] for k in ("prompt", "subject", "target")}
        for opt in ("target_true", "paraphrase"):  # a paraphrase may hold "{}" (any number) or the subject
            if isinstance(r.get(opt), str) and r[opt].strip():
                q[opt] = r[opt]
        out.append(q)
    return out


def read_texts(path: str, max_texts: int = 0) -> list[str]:
    """A corpus: JSONL with {"text": ...} per line, or parquet with a text column."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq

        t = pq.read_table(path, columns=["text"])
        texts = [x for x in t.column("text").to_pylist() if isinstance(x, str) and x]
    else:
        texts = []
        with open(path) as f:
            for i, line in enumerate(f):
                if not line.strip():
                    continue
                x = json.loads(line).get("text")
                if not isinstance(x, str):
                    raise ValueError(f"{path}:{i + 1}: no \"text\" string")
                if x:
                    texts.append(x)
    if max_texts > 0:
        texts = texts[:max_texts]
    if not texts:
        raise ValueError(f"{path}: no texts")
    return texts


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()


def model_digests(model_dir: str) -> dict:
    """sha256 of a model directory's config.json and of its weight files
    (the *.safetensors in name order, each name and digest hashed)."""
    out = {"model_config_sha256": sha256_file(os.path.join(model_dir, "config.json"))}
    names = sorted(n for n in os.listdir(model_dir) if n.endswith(".safetensors"))
    if names:
        h = hashlib.sha256()
        for n in names:
            h.update(f"{n}\x00{sha256_file(os.path.join(model_dir, n))}\x00".encode())
        out["model_weights_sha256"] = "sha256:" + h.hexdigest()
    return out


def versions() -> dict:
    import transformers

    return {"python": sys.version.split()[0], "torch": torch.__version__, "transformers": transformers.__version__}


# ---------------------------------------------------------------------------
# Tokenization of facts.

def target_ids(tok, target: str) -> list[int]:
    """The tokens of a target as it follows a prompt (after one space)."""
    ids = tok(" " + target, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError(f"target {target!r} has no tokens")
    return ids


def encode_fact(tok, prompt: str, subject: str, prefix: str = "") -> tuple[list[int], int]:
    """Token ids of prefix + prompt.format(subject) and the index of the
    subject's last token in them."""
    before = prompt[: prompt.index("{}")]
    full = tok(prefix + prompt.format(subject))["input_ids"]
    upto = tok(prefix + before + subject)["input_ids"]
    i = len(upto) - 1
    if i < 0 or full[: len(upto)] != upto:
        # BPE merged the subject's end with what follows: fall back on the
        # longest common prefix.
        i = 0
        while i < min(len(full), len(upto)) and full[i] == upto[i]:
            i += 1
        i = max(i - 1, 0)
    return full, i


def pad_right(seqs: Sequence[Sequence[int]], pad: int) -> tuple[torch.Tensor, torch.Tensor]:
    """input_ids and attention_mask for sequences padded on the right (so a
    token's position is its index)."""
    n = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), n), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), n), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(list(s), dtype=torch.long)
        mask[i, : len(s)] = 1
    return ids, mask


def pad_id(tok) -> int:
    if tok.pad_token_id is not None:
        return tok.pad_token_id
    if tok.eos_token_id is not None:
        return tok.eos_token_id
    return 0


# ---------------------------------------------------------------------------
# Activations.

@contextlib.contextmanager
def capture_keys(model, layers: Iterable[int]):
    """Within the block, keys[layer] holds the input of out_proj(layer) of
    the last forward pass ([batch, tokens, intermediate])."""
    keys: dict[int, torch.Tensor] = {}
    handles = []
    for layer in layers:
        def hook(_m, inputs, _o, layer=layer):
            keys[layer] = inputs[0]
        handles.append(out_proj(model, layer).register_forward_hook(hook))
    try:
        yield keys
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def capture_hidden(model, layer: int):
    """Within the block, hidden[0] holds block `layer`'s output (the residual
    stream) of the last forward pass."""
    hidden: list[torch.Tensor] = []

    def hook(_m, _i, out):
        hidden[:] = [out[0] if isinstance(out, tuple) else out]
    h = block(model, layer).register_forward_hook(hook)
    try:
        yield hidden
    finally:
        h.remove()


@contextlib.contextmanager
def add_to_hidden(model, layer: int, positions: Sequence[int], delta: torch.Tensor):
    """Within the block, block `layer`'s output gets delta[i] added at
    (row i, positions[i]) in every forward pass (delta: [rows, hidden] or
    [hidden] for all rows)."""
    def hook(_m, _i, out):
        h = out[0] if isinstance(out, tuple) else out
        rows = torch.arange(h.shape[0], device=h.device)
        pos = torch.tensor(list(positions), device=h.device)
        d = delta if delta.dim() == 2 else delta.unsqueeze(0).expand(h.shape[0], -1)
        add = torch.zeros_like(h)
        add[rows, pos] = d.to(h.dtype)
        h = h + add
        return (h,) + tuple(out[1:]) if isinstance(out, tuple) else h
    handle = block(model, layer).register_forward_hook(hook)
    try:
        yield
    finally:
        handle.remove()


def device_of(model) -> torch.device:
    return next(model.parameters()).device


@torch.no_grad()
def keys_at(model, seqs: Sequence[Sequence[int]], positions: Sequence[int], layers: Sequence[int],
            pad: int) -> dict[int, torch.Tensor]:
    """The out_proj inputs at (seq i, positions[i]) for each layer: {layer: [n, intermediate]}."""
    dev = device_of(model)
    ids, mask = pad_right(seqs, pad)
    with capture_keys(model, layers) as keys:
        model(input_ids=ids.to(dev), attention_mask=mask.to(dev))
    rows = torch.arange(len(seqs), device=dev)
    pos = torch.tensor(list(positions), device=dev)
    return {layer: keys[layer][rows, pos].float() for layer in layers}


@torch.no_grad()
def hidden_at(model, seqs: Sequence[Sequence[int]], positions: Sequence[int], layer: int,
              pad: int) -> torch.Tensor:
    """Block `layer`'s output at (seq i, positions[i]): [n, hidden]."""
    dev = device_of(model)
    ids, mask = pad_right(seqs, pad)
    with capture_hidden(model, layer) as hidden:
        model(input_ids=ids.to(dev), attention_mask=mask.to(dev))
    rows = torch.arange(len(seqs), device=dev)
    pos = torch.tensor(list(positions), device=dev)
    return hidden[0][rows, pos].float()


# ---------------------------------------------------------------------------
# Key statistics: E[k k^T] of out_proj's input over a corpus's tokens.

STATS_FILE = "stats.safetensors"
STATS_META = "stats.json"


@torch.no_grad()
def compute_stats(model, tok, texts: Sequence[str], layers: Sequence[int], batch: int = 8,
                  max_length: int = 256, log: Log = _nolog) -> tuple[dict[int, torch.Tensor], int]:
    """The second moment E[k kᵀ] of out_proj's input over every token of
    texts, per layer (float32 [intermediate, intermediate]), and the number
    of tokens it averages. Sums accumulate in float64."""
    dev = device_of(model)
    sums: dict[int, torch.Tensor] = {}
    count = 0
    pad = pad_id(tok)
    for b in range(0, len(texts), batch):
        chunk = texts[b: b + batch]
        seqs = [tok(t, truncation=True, max_length=max_length)["input_ids"] for t in chunk]
        seqs = [s for s in seqs if s]
        if not seqs:
            continue
        ids, mask = pad_right(seqs, pad)
        with capture_keys(model, layers) as keys:
            model(input_ids=ids.to(dev), attention_mask=mask.to(dev))
        m = mask.to(dev).bool()
        for layer in layers:
            k = keys[layer][m].double()
            s = k.T @ k
            sums[layer] = s if layer not in sums else sums[layer] + s
        count += int(m.sum())
        if (b // batch) % 50 == 0:
            log(f"stats: text {min(b + batch, len(texts))}/{len(texts)}")
    if count == 0:
        raise ValueError("the corpus has no tokens")
    return {layer: (sums[layer] / count).float().cpu() for layer in layers}, count


def save_stats(out_dir: str, mom2: dict[int, torch.Tensor], meta: dict) -> None:
    """Writes stats.safetensors ("layer.<i>.mom2") then stats.json (so a
    directory with stats.json is complete)."""
    from safetensors.torch import save_file

    os.makedirs(out_dir, exist_ok=True)
    save_file({f"layer.{k}.mom2": v.contiguous() for k, v in mom2.items()}, os.path.join(out_dir, STATS_FILE))
    meta = dict(meta)
    meta["stats_sha256"] = sha256_file(os.path.join(out_dir, STATS_FILE))
    write_json(os.path.join(out_dir, STATS_META), meta)


def load_stats(stats_dir: str, layers: Sequence[int]) -> tuple[dict[int, torch.Tensor], dict]:
    """The E[k kᵀ] of `layers` saved by save_stats, and stats.json."""
    from safetensors.torch import load_file

    meta_path = os.path.join(stats_dir, STATS_META)
    if not os.path.exists(meta_path):
        raise ValueError(f"{stats_dir}: no {STATS_META} (compute statistics with --stats-only)")
    with open(meta_path) as f:
        meta = json.load(f)
    missing = [x for x in layers if x not in meta.get("layers", [])]
    if missing:
        raise ValueError(f"{stats_dir}: no statistics for layers {missing} (it has {meta.get('layers')})")
    t = load_file(os.path.join(stats_dir, STATS_FILE))
    return {x: t[f"layer.{x}.mom2"].float() for x in layers}, meta


def write_json(path: str, obj) -> None:
    """Writes JSON to a temporary name and renames it into place."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


# ---------------------------------------------------------------------------
# Evaluation.

@torch.no_grad()
def greedy(model, tok, text: str, n: int) -> list[int]:
    """The first n tokens of the greedy continuation of text (fewer if EOS)."""
    dev = device_of(model)
    ids = torch.tensor([tok(text)["input_ids"]], device=dev)
    out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                         do_sample=False, pad_token_id=pad_id(tok))
    return out[0, ids.shape[1]:].tolist()


def starts_with(tok, ids: list[int], target: str) -> bool:
    return tok.decode(ids, skip_special_tokens=True).lstrip().startswith(target)


@torch.no_grad()
def target_nll(model, tok, text: str, target: str) -> float:
    """Mean negative log-probability per token of " " + target after text."""
    dev = device_of(model)
    p = tok(text)["input_ids"]
    t = target_ids(tok, target)
    ids = torch.tensor([p + t], device=dev)
    logp = torch.log_softmax(model(input_ids=ids).logits[0, len(p) - 1: -1].float(), -1)
    return float(-logp[torch.arange(len(t)), torch.tensor(t, device=dev)].mean())


def paraphrase_text(r: dict) -> str:
    return r["paraphrase"].replace("{}", r["subject"])


def locality_outputs(model, tok, facts: Sequence[dict]) -> list[list[int]]:
    """Greedy continuations of the locality facts (their target's length + 1 tokens)."""
    return [greedy(model, tok, f["prompt"].format(f["subject"]), len(target_ids(tok, f["target"])) + 1)
            for f in facts]


def evaluate(model, tok, requests: Sequence[dict], locality: Sequence[dict] | None = None,
             locality_base: Sequence[Sequence[int]] | None = None) -> dict:
    """Efficacy: the fraction of requests whose greedy continuation of
    prompt.format(subject) starts with the target. With target_true on every
    request, efficacy_prob: the fraction with mean-token p(target) >
    p(target_true). With paraphrase on every request, paraphrase: efficacy
    on the paraphrases. With locality facts and the base model's
    continuations of them, locality: the fraction unchanged, and
    locality_target: the fraction that still start with their target.
    "outputs" holds each request's continuation."""
    out: dict = {}
    ok, outputs = 0, []
    for r in requests:
        ids = greedy(model, tok, r["prompt"].format(r["subject"]), len(target_ids(tok, r["target"])) + 1)
        outputs.append(tok.decode(ids, skip_special_tokens=True))
        ok += starts_with(tok, ids, r["target"])
    out["efficacy"] = ok / len(requests)
    out["outputs"] = outputs
    if all("target_true" in r for r in requests):
        wins = 0
        for r in requests:
            text = r["prompt"].format(r["subject"])
            wins += target_nll(model, tok, text, r["target"]) < target_nll(model, tok, text, r["target_true"])
        out["efficacy_prob"] = wins / len(requests)
    if all("paraphrase" in r for r in requests):
        ok = 0
        for r in requests:
            ids = greedy(model, tok, paraphrase_text(r), len(target_ids(tok, r["target"])) + 1)
            ok += starts_with(tok, ids, r["target"])
        out["paraphrase"] = ok / len(requests)
    if locality:
        now = locality_outputs(model, tok, locality)
        if locality_base is not None:
            out["locality"] = sum(a == list(b) for a, b in zip(now, locality_base)) / len(locality)
        out["locality_target"] = sum(starts_with(tok, ids, f["target"]) for ids, f in zip(now, locality)) / len(locality)
    return out


# ---------------------------------------------------------------------------
# Loading what the editors wrote.

def load_edited(out_dir: str, base: str | None = None, dtype=torch.float32, device: str = "cpu"):
    """The model an editor wrote to out_dir, and its tokenizer: for MEMIT
    and AlphaEdit the full checkpoint in out_dir/model; for GRACE the base
    model (`base`, or the one grace.json names) with the codebook attached
    as a forward hook (see grace.attach)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if os.path.exists(os.path.join(out_dir, "grace.json")):
        from . import grace

        if base is None:
            with open(os.path.join(out_dir, "grace.json")) as f:
                base = json.load(f).get("base")
        if not base:
            raise ValueError(f"{out_dir}: a GRACE codebook needs its base model")
        model = AutoModelForCausalLM.from_pretrained(base, dtype=dtype).to(device).eval()
        grace.attach(model, out_dir)
        return model, AutoTokenizer.from_pretrained(base)
    d = os.path.join(out_dir, "model")
    if not os.path.exists(os.path.join(d, "config.json")):
        d = out_dir
    model = AutoModelForCausalLM.from_pretrained(d, dtype=dtype).to(device).eval()
    return model, AutoTokenizer.from_pretrained(d)
