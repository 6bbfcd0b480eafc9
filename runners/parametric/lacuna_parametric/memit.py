"""MEMIT (Meng et al., "Mass-Editing Memory in a Transformer", ICLR 2023),
written from the paper for Llama-style models.

For a batch of requests (s, r, o*), with critical layers L = [l1 .. lk]
whose MLP output projections W_l are edited:

1. Target: for each request, the residual stream h at the last subject
   token after block lk is moved to z = h + δ, where δ maximises the mean
   log-probability of o* after the prompt, itself and behind a few short
   random prefixes, with two regularisers from the paper: a KL term that
   keeps the next-token distribution after "{subject} is a" near the
   base model's (kl_factor), and a weight decay on ||δ||²/||h||²
   (v_weight_decay); ||δ|| is clamped to clamp_norm_factor·||h||. Adam,
   v_lr, v_num_grad_steps steps (early stop when the NLL is below
   v_loss_stop).
2. Spread: for each l in L in ascending order, with the layers below
   already updated, the keys K (out_proj's input at the last subject
   token, averaged over the prefixes; [d_in, n]) and the residual still
   missing at lk, split evenly over the layers left,
   R = (z - h_now) / (number of layers left) ([d_out, n]), give
   ΔW_l = R Kᵀ (C_l + K Kᵀ)⁻¹,  C_l = λ·E[k kᵀ]  (λ = mom2_update_weight),
   the least-squares update that writes the new memories while keeping
   W_l k unchanged on the corpus's keys in proportion to λ.

`edit` takes the per-layer update as a function, so AlphaEdit reuses
steps 1 and 2 with its own closed form.

Hyperparameters: see HParams; the defaults are the paper's for GPT-J.

Key position. The paper reads keys at the subject's last token, where
large models enrich a subject with its attributes. The tiny test model
(lacuna_parametric.tiny: 4 layers, names that are one token at position
0) does not: an optimised δ of any norm added at the subject's position
after block 0, 1 or 2 leaves the target's NLL above 4, while at the
prompt's last token it reaches 0.05. key_position "prompt_last" reads keys
and adds δ there; it is not the paper's method, only its mechanics at
another position.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import torch

from . import editutil as eu

# An update function: (layer, K [d_in, n], R [d_out, n]) -> ΔW [d_out, d_in].
Update = Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclasses.dataclass
class HParams:
    """MEMIT's hyperparameters (JSON names as the fields). Defaults are the
    paper's (GPT-J) where it gives one. The tiny test model needs others,
    which edit_test.go passes and explains: its 256-dimensional keys come
    from a corpus of about 1,000 tokens (λ 600), the residual at its last
    token is small (clamp 2), it knows no text to sample prefixes from
    (none), and it looks facts up at the prompt's last token
    (key_position prompt_last)."""
    # λ: the weight of the corpus keys' second moment E[k kᵀ] against the
    # new keys (paper: 15000 for GPT-J, E[k kᵀ] over 100,000 Wikipedia texts).
    mom2_update_weight: float = 15000.0
    clamp_norm_factor: float = 0.75       # ||δ|| ≤ this · ||h|| (paper, GPT-J)
    v_lr: float = 0.5                     # Adam's learning rate for δ (paper, GPT-J)
    v_num_grad_steps: int = 20            # paper, GPT-J
    v_weight_decay: float = 0.5           # weight of ||δ||²/||h||² (paper, GPT-J)
    kl_factor: float = 0.0625             # weight of the essence KL (paper)
    v_loss_stop: float = 0.05             # stop optimising δ once the target NLL is below this
    kl_prompt: str = "{} is a"            # the paper's essence prompt
    n_prefixes: int = 10                  # prefixes sampled from the model, besides the bare prompt
    prefix_len: int = 5                   # tokens per sampled prefix
    batch_size: int = 0                   # requests per edit; 0: all at once, fewer: sequential edits
    # Where keys are read and δ is added: "subject_last" (the paper: the
    # subject's last token) or "prompt_last" (the prompt's last token, for
    # models that look a fact up there; the KL term is then dropped, its
    # prompt having no such token to edit).
    key_position: str = "subject_last"


_STARTERS = ["The", "Therefore", "Because", "I", "You"]


@torch.no_grad()
def prefixes(model, tok, n: int, length: int, seed: int) -> list[str]:
    """n short texts sampled from the model (top-5), each ending in ". ",
    to put before prompts so edits do not depend on the prompt's start."""
    if n <= 0:
        return []
    dev = eu.device_of(model)
    torch.manual_seed(seed)
    out = []
    for i in range(n):
        ids = torch.tensor([tok(_STARTERS[i % len(_STARTERS)])["input_ids"]], device=dev)
        gen = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=length,
                             do_sample=True, top_k=5, pad_token_id=eu.pad_id(tok))
        text = tok.decode(gen[0], skip_special_tokens=True).replace("{", " ").replace("}", " ")
        out.append(text.strip() + ". ")
    return out


def locate(tok, req: dict, prefix: str, hp: HParams) -> tuple[list[int], int]:
    """Token ids of prefix + the request's prompt and the position of its key."""
    ids, i = eu.encode_fact(tok, req["prompt"], req["subject"], prefix)
    if hp.key_position == "prompt_last":
        return ids, len(ids) - 1
    if hp.key_position != "subject_last":
        raise ValueError(f"key_position {hp.key_position!r}: want subject_last or prompt_last")
    return ids, i


def compute_target(model, tok, req: dict, layer: int, prefix_texts: Sequence[str], hp: HParams) -> tuple[torch.Tensor, torch.Tensor, dict]:
    """(h, z, info): block `layer`'s output at the key position (see
    locate) of the bare prompt, and the z = h + δ that makes the request's
    target likely (step 1 of the module doc)."""
    dev = eu.device_of(model)
    pad = eu.pad_id(tok)
    tgt = eu.target_ids(tok, req["target"])
    seqs, subj, starts = [], [], []
    for p in [""] + list(prefix_texts):
        ids, i = locate(tok, req, p, hp)
        seqs.append(ids + tgt[:-1])
        subj.append(i)
        starts.append(len(ids) - 1)
    kl_ids, kl_i = eu.encode_fact(tok, hp.kl_prompt, req["subject"])
    use_kl = hp.kl_factor > 0 and hp.key_position == "subject_last"
    if use_kl:
        seqs.append(kl_ids)
        subj.append(kl_i)
    n_rw = len(starts)
    ids, mask = eu.pad_right(seqs, pad)
    ids, mask = ids.to(dev), mask.to(dev)
    tgt_t = torch.tensor(tgt, device=dev)
    pos = torch.tensor(starts, device=dev).unsqueeze(1) + torch.arange(len(tgt), device=dev).unsqueeze(0)

    with torch.no_grad(), eu.capture_hidden(model, layer) as hidden:
        logits = model(input_ids=ids, attention_mask=mask).logits
        h = hidden[0][0, subj[0]].float().clone()
        base_kl = torch.log_softmax(logits[n_rw, len(kl_ids) - 1].float(), -1) if use_kl else None

    delta = torch.zeros_like(h, requires_grad=True)
    opt = torch.optim.Adam([delta], lr=hp.v_lr)
    max_norm = hp.clamp_norm_factor * h.norm()
    nll_v = float("nan")
    steps = 0
    for steps in range(1, hp.v_num_grad_steps + 1):
        with eu.add_to_hidden(model, layer, subj, delta):
            logits = model(input_ids=ids, attention_mask=mask).logits
        logp = torch.log_softmax(logits[:n_rw].float(), -1)
        rows = torch.arange(n_rw, device=dev).unsqueeze(1)
        tok_lp = logp[rows, pos, tgt_t.unsqueeze(0).expand(n_rw, -1)]
        nll = -tok_lp.mean(1).mean()
        loss = nll + hp.v_weight_decay * delta.pow(2).sum() / h.pow(2).sum()
        if use_kl:
            cur = torch.log_softmax(logits[n_rw, len(kl_ids) - 1].float(), -1)
            loss = loss + hp.kl_factor * torch.sum(base_kl.exp() * (base_kl - cur))
        nll_v = float(nll.detach())
        if nll_v < hp.v_loss_stop:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            if delta.norm() > max_norm:
                delta.mul_(max_norm / delta.norm())
    z = (h + delta.detach()).float()
    return h, z, {"nll": nll_v, "steps": steps, "delta_norm": float(delta.detach().norm()), "h_norm": float(h.norm())}


def closed_form(mom2: dict[int, torch.Tensor], hp: HParams) -> Update:
    """MEMIT's update ΔW = R Kᵀ (λ E[k kᵀ] + K Kᵀ)⁻¹, in float64."""
    def update(layer: int, K: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        K64, R64 = K.double(), R.double()
        A = hp.mom2_update_weight * mom2[layer].to(K.device).double() + K64 @ K64.T
        return (R64 @ torch.linalg.solve(A, K64).T).float()
    return update


def batches(items: Sequence, size: int) -> list[list]:
    if size <= 0 or size >= len(items):
        return [list(items)]
    return [list(items[i: i + size]) for i in range(0, len(items), size)]


def edit(model, tok, requests: Sequence[dict], layers: Sequence[int], update: Update, hp: HParams,
         seed: int = 0, log: eu.Log = eu._nolog) -> dict:
    """Edits model in place (the out_proj weights of `layers`) so that it
    completes each request's prompt with its target; `update` is the
    per-layer closed form (closed_form(...) for MEMIT). Requests go in
    batches of hp.batch_size, one after the other (sequential editing).
    Returns diagnostics (per request: the NLL δ reached; per layer: the
    norm of its total update)."""
    layers = eu.check_layers(model, layers)
    top = layers[-1]
    pad = eu.pad_id(tok)
    model.requires_grad_(False)
    prefix_texts = prefixes(model, tok, hp.n_prefixes, hp.prefix_len, seed)
    w0 = {x: eu.out_proj(model, x).weight.detach().clone() for x in layers}
    info: dict = {"prefixes": prefix_texts, "requests": []}
    done = 0
    for batch in batches(requests, hp.batch_size):
        zs = []
        for r in batch:
            _, z, zi = compute_target(model, tok, r, top, prefix_texts, hp)
            zs.append(z)
            done += 1
            zi.update(subject=r["subject"], target=r["target"])
            info["requests"].append(zi)
            log(f"request {done}/{len(requests)} {r['subject']!r} -> {r['target']!r}: target NLL {zi['nll']:.3f} after {zi['steps']} steps")
        Z = torch.stack(zs)
        plain = [locate(tok, r, "", hp) for r in batch]
        variants = [[locate(tok, r, p, hp) for p in [""] + prefix_texts] for r in batch]
        for i, layer in enumerate(layers):
            ks = []
            for v in variants:
                k = eu.keys_at(model, [s for s, _ in v], [j for _, j in v], [layer], pad)[layer]
                ks.append(k.mean(0))
            K = torch.stack(ks).T                                    # [d_in, n]
            H = eu.hidden_at(model, [s for s, _ in plain], [j for _, j in plain], top, pad)
            R = ((Z - H) / (len(layers) - i)).T                      # [d_out, n]
            dW = update(layer, K, R)
            W = eu.out_proj(model, layer).weight
            with torch.no_grad():
                W.add_(dW.to(W.dtype))
            log(f"layer {layer}: |R| {float(R.norm(dim=0).mean()):.3f} |ΔW| {float(dW.norm()):.4f}")
    info["layers"] = {str(x): {"delta_norm": float((eu.out_proj(model, x).weight - w0[x]).norm()),
                               "weight_norm": float(w0[x].norm())} for x in layers}
    return info
