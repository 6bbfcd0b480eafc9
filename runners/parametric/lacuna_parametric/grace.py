"""GRACE (Hartvigsen et al., "Aging with GRACE: Lifelong Model Editing with
Discrete Key-Value Adaptors", NeurIPS 2023), written from the paper for
Llama-style models.

The base model's weights stay as they are. One layer (here the MLP output
projection of block `layer`, editutil.out_proj) gets an adaptor: a codebook
of entries (key k_i, value v_i, deferral radius ε_i, label y_i).

- Keys: the layer's input activation at the last token of an edit's
  prompt. Values: vectors that replace the layer's output there, trained
  (Adam, lr, steps) until the model continues the prompt with the target.
- Lookup: for an activation h, the nearest key k_i (Euclidean); if
  d(h, k_i) ≤ ε_i the layer outputs v_i instead of its own output,
  otherwise the layer is untouched. The lookup runs at every position of a
  forward pass, so it behaves the same with and without a KV cache: in a
  causal model a position's activation depends only on its prefix, and the
  position of an edit prompt's last token matches its key whenever the
  prompt is what precedes it. (The paper queries with the last token; at
  that position the two agree.)
- Codebook maintenance for an edit (h, y), with d and i the distance to
  and index of the nearest key:
    empty codebook, or d > ε_i + ε_init: add (h, v, ε_init, y);
    d ≤ ε_i + ε_init and y_i = y: expand, ε_i = max(ε_i, d);
    d ≤ ε_i + ε_init and y_i ≠ y: split, ε_i = d/2 and add (h, v, d/2, y);
    d = 0 (the same input edited again): the entry takes y and a new value.

Hyperparameters: see HParams (the paper's defaults; ε's scale is the
activations', so a model needs its own).

A codebook is saved as codebook.safetensors (keys [n, d_in], values
[n, d_out], epsilons [n]) and grace.json (layer, module, metric, epsilon
init, keys count, labels, hyperparameters, base model digests); `attach`
puts one on a loaded base model.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Sequence

import torch

from . import editutil as eu

CODEBOOK = "codebook.safetensors"
META = "grace.json"
METRIC = "euclidean"


@dataclasses.dataclass
class HParams:
    """GRACE's hyperparameters (JSON names as the fields); defaults are the
    paper's."""
    # Initial deferral radius, in the units of the layer's input activations
    # (paper: 1.0). In the tiny test model (layer 2) an edit prompt's key
    # lies 0.17-0.4 from other subjects' and its test uses 0.05: with 1.0,
    # an edit captures 45% of the unedited facts.
    epsilon_init: float = 1.0
    lr: float = 1.0                       # Adam's learning rate for a value (paper: 1.0)
    steps: int = 100                      # value training steps (paper: 100)
    loss_stop: float = 0.05               # stop training a value once the target NLL is below this


class Adaptor:
    """A codebook at one layer, used as that layer's forward hook (see the
    module doc for the lookup). `train` names an entry whose value is the
    parameter being trained; attach and detach with `attach`/`remove`."""

    def __init__(self, layer: int, key_dim: int, value_dim: int, device=None):
        self.layer = layer
        self.keys = torch.zeros(0, key_dim, device=device)
        self.values = torch.zeros(0, value_dim, device=device)
        self.eps = torch.zeros(0, device=device)
        self.labels: list[str] = []
        self.train: tuple[int, torch.nn.Parameter] | None = None
        self.handle = None

    def __len__(self) -> int:
        return self.keys.shape[0]

    def lookup(self, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """For activations h [m, d_in]: (index of the nearest key, hit mask)."""
        d = torch.cdist(h.float(), self.keys)
        dmin, idx = d.min(-1)
        return idx, dmin <= self.eps[idx]

    def __call__(self, _module, inputs, output):
        if len(self) == 0:
            return output
        x = inputs[0]
        flat_out = output.reshape(-1, output.shape[-1])
        idx, hit = self.lookup(x.reshape(-1, x.shape[-1]))
        if not bool(hit.any()):
            return output
        vals = self.values
        if self.train is not None:
            vals = vals.clone()
            vals[self.train[0]] = self.train[1]
        new = torch.where(hit.unsqueeze(-1), vals[idx].to(output.dtype), flat_out)
        return new.reshape(output.shape)

    def attach(self, model) -> "Adaptor":
        m = eu.out_proj(model, self.layer)
        if m.in_features != self.keys.shape[1] or m.out_features != self.values.shape[1]:
            raise ValueError(f"the codebook's keys/values ({self.keys.shape[1]}/{self.values.shape[1]}) do not fit "
                             f"layer {self.layer} ({m.in_features}/{m.out_features})")
        self.remove()
        dev = m.weight.device
        self.keys, self.values, self.eps = self.keys.to(dev), self.values.to(dev), self.eps.to(dev)
        self.handle = m.register_forward_hook(self)
        return self

    def remove(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None

    def add(self, key: torch.Tensor, value: torch.Tensor, eps: float, label: str) -> int:
        self.keys = torch.cat([self.keys, key.float().unsqueeze(0)])
        self.values = torch.cat([self.values, value.float().unsqueeze(0)])
        self.eps = torch.cat([self.eps, torch.tensor([eps], device=self.eps.device)])
        self.labels.append(label)
        return len(self) - 1

    def save(self, out_dir: str, meta: dict) -> None:
        """Writes codebook.safetensors, then grace.json."""
        from safetensors.torch import save_file

        os.makedirs(out_dir, exist_ok=True)
        save_file({"keys": self.keys.cpu().contiguous(), "values": self.values.cpu().contiguous(),
                   "epsilons": self.eps.cpu().contiguous()}, os.path.join(out_dir, CODEBOOK))
        meta = dict(meta)
        meta.update(layer=self.layer, module=eu.out_proj_name(self.layer).rsplit(".", 1)[0], metric=METRIC,
                    keys=len(self), key_dim=self.keys.shape[1], value_dim=self.values.shape[1],
                    labels=self.labels, codebook_sha256=eu.sha256_file(os.path.join(out_dir, CODEBOOK)),
                    format=1)
        eu.write_json(os.path.join(out_dir, META), meta)


def load(path: str) -> Adaptor:
    """The codebook saved in directory path (not attached)."""
    from safetensors.torch import load_file

    with open(os.path.join(path, META)) as f:
        meta = json.load(f)
    if meta.get("metric", METRIC) != METRIC:
        raise ValueError(f"{path}: distance metric {meta.get('metric')!r} is not supported")
    t = load_file(os.path.join(path, CODEBOOK))
    a = Adaptor(int(meta["layer"]), t["keys"].shape[1], t["values"].shape[1])
    a.keys, a.values, a.eps = t["keys"].float(), t["values"].float(), t["epsilons"].float()
    a.labels = list(meta.get("labels", [""] * len(a)))
    return a


def attach(model, src) -> Adaptor:
    """Puts a codebook (a directory written by `edit`'s caller, or an
    Adaptor) on model as a forward hook of its layer's out_proj and returns
    the Adaptor (adaptor.remove() takes it off)."""
    a = load(src) if isinstance(src, (str, os.PathLike)) else src
    return a.attach(model)


def _train_value(model, tok, a: Adaptor, j: int, text: str, target: str, hp: HParams) -> tuple[float, int]:
    dev = eu.device_of(model)
    p = tok(text)["input_ids"]
    t = eu.target_ids(tok, target)
    ids = torch.tensor([p + t[:-1]], device=dev)
    tgt = torch.tensor(t, device=dev)
    param = torch.nn.Parameter(a.values[j].clone())
    a.train = (j, param)
    opt = torch.optim.Adam([param], lr=hp.lr)
    nll_v, step = float("nan"), 0
    try:
        for step in range(1, hp.steps + 1):
            logits = model(input_ids=ids).logits[0, len(p) - 1:].float()
            nll = torch.nn.functional.cross_entropy(logits, tgt)
            nll_v = float(nll.detach())
            if nll_v < hp.loss_stop:
                break
            opt.zero_grad()
            nll.backward()
            opt.step()
    finally:
        a.train = None
    with torch.no_grad():
        a.values[j] = param.detach()
    return nll_v, step


def edit(model, tok, requests: Sequence[dict], layer: int, hp: HParams, log: eu.Log = eu._nolog) -> tuple[Adaptor, dict]:
    """Adds the requests to a new codebook at `layer`, one after the other,
    and leaves it attached to model. Returns the adaptor and diagnostics."""
    eu.check_layers(model, [layer])
    model.requires_grad_(False)
    m = eu.out_proj(model, layer)
    a = Adaptor(layer, m.in_features, m.out_features, device=m.weight.device).attach(model)
    info: dict = {"requests": [], "added": 0, "expanded": 0, "split": 0, "replaced": 0}
    for n, r in enumerate(requests, 1):
        text = r["prompt"].format(r["subject"])
        ids = tok(text)["input_ids"]
        with torch.no_grad(), eu.capture_keys(model, [layer]) as keys:
            # The adaptor does not change its own layer's input, so the key
            # is the base model's.
            model(input_ids=torch.tensor([ids], device=m.weight.device))
            key = keys[layer][0, -1].float().clone()
            base_out = m(keys[layer][0, -1:]).float()[0]
        if len(a) == 0:
            j, how = a.add(key, base_out, hp.epsilon_init, r["target"]), "added"
        else:
            d = torch.cdist(key.unsqueeze(0), a.keys)[0]
            i = int(d.argmin())
            dmin = float(d[i])
            if dmin <= 1e-6 * max(1.0, float(key.norm())):
                # The same input again: the later edit wins.
                a.labels[i] = r["target"]
                j, how = i, "replaced"
            elif dmin > float(a.eps[i]) + hp.epsilon_init:
                j, how = a.add(key, base_out, hp.epsilon_init, r["target"]), "added"
            elif a.labels[i] == r["target"]:
                a.eps[i] = max(float(a.eps[i]), dmin)
                j, how = i, "expanded"
            else:
                a.eps[i] = dmin / 2
                j, how = a.add(key, base_out, dmin / 2, r["target"]), "split"
        info[how] += 1
        nll, steps = _train_value(model, tok, a, j, text, r["target"], hp)
        info["requests"].append({"subject": r["subject"], "target": r["target"], "entry": j, "codebook": how,
                                 "nll": nll, "steps": steps})
        log(f"request {n}/{len(requests)} {r['subject']!r} -> {r['target']!r}: {how} entry {j}, target NLL {nll:.3f} after {steps} steps")
    return a, info
