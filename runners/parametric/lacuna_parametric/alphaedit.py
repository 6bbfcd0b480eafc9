"""AlphaEdit (Fang et al., "AlphaEdit: Null-Space Constrained Knowledge
Editing for Language Models", ICLR 2025), written from the paper.

AlphaEdit keeps MEMIT's targets z and its spreading of the residual over
the critical layers (memit.compute_target, memit.edit) and changes the
per-layer update: the perturbation is projected onto the null space of the
preserved knowledge's keys K0, so that (W + ΔP) K0 = W K0.

- Projection: from the eigendecomposition (= SVD, the matrix being
  symmetric) of K0 K0ᵀ, here the corpus second moment E[k kᵀ] that MEMIT
  uses, P = Û Ûᵀ with Û the eigenvectors whose eigenvalues are below
  nullspace_threshold (paper: 1e-2).
- Update: with K1 the batch's keys, R its residuals and Kp the keys of the
  batches edited before (sequential editing),
      ΔW = R K1ᵀ P (Kp Kpᵀ P + K1 K1ᵀ P + α I)⁻¹ P,
  the closed form of the paper's objective
      min ||(W + ΔP) K1 - V1||² + α||ΔP||² + ||(W + ΔP) Kp - Vp||²
  (α = l2; the paper's equation has α = 1). The trailing P is exact
  algebra (the solution already satisfies X P = X) and is applied so the
  update lies in the null space to machine precision.
- After each batch, Kp Kpᵀ accumulates K1 K1ᵀ.

The threshold is absolute on E[k kᵀ]'s eigenvalues, whose scale depends on
the model: the tiny test model's keys are small (see HParams).
"""

from __future__ import annotations

import dataclasses

import torch

from . import editutil as eu
from . import memit


@dataclasses.dataclass
class HParams(memit.HParams):
    """MEMIT's hyperparameters (mom2_update_weight unused) plus the null
    space's threshold and the update's ridge. Defaults are the paper's."""
    # Eigenvalues of E[k kᵀ] below this span the null space (paper: 1e-2).
    # Its scale is that of E[k kᵀ]: in the tiny test model a fact's key
    # weighs about 2e-3 of a 1,000-token corpus, so its test uses 1e-4.
    nullspace_threshold: float = 1e-2
    l2: float = 1.0                        # α, the weight of ||ΔP||² (paper: the identity, α = 1)


class Updater:
    """The per-layer update with the state sequential editing needs (the
    projections and Kp Kpᵀ). One Updater serves one edit run."""

    def __init__(self, mom2: dict[int, torch.Tensor], hp: HParams):
        self.hp = hp
        self.P: dict[int, torch.Tensor] = {}
        self.null_dims: dict[int, int] = {}
        self.cache: dict[int, torch.Tensor] = {}
        for layer, c in mom2.items():
            vals, vecs = torch.linalg.eigh(c.double())
            small = vecs[:, vals < hp.nullspace_threshold]
            self.P[layer] = small @ small.T
            self.null_dims[layer] = int(small.shape[1])

    def __call__(self, layer: int, K: torch.Tensor, R: torch.Tensor) -> torch.Tensor:
        P = self.P[layer].to(K.device)
        K64, R64 = K.double(), R.double()
        d = K64.shape[0]
        cp = self.cache.get(layer, torch.zeros(d, d, dtype=torch.float64, device=K.device))
        M = (cp + K64 @ K64.T) @ P + self.hp.l2 * torch.eye(d, dtype=torch.float64, device=K.device)
        # X = R K1ᵀ P M⁻¹  <=>  Mᵀ Xᵀ = P K1 Rᵀ
        X = torch.linalg.solve(M.T, P @ K64 @ R64.T).T
        self.cache[layer] = cp + K64 @ K64.T
        return (X @ P).float()


def edit(model, tok, requests, layers, mom2, hp: HParams, seed: int = 0, log: eu.Log = eu._nolog) -> dict:
    """Edits model in place with AlphaEdit (see the module doc); returns
    memit.edit's diagnostics plus the null space's dimension per layer."""
    up = Updater({x: mom2[x] for x in layers}, hp)
    for x in sorted(up.null_dims):
        log(f"layer {x}: null space of dimension {up.null_dims[x]} of {mom2[x].shape[0]} at threshold {hp.nullspace_threshold:g}")
        if up.null_dims[x] == 0:
            log(f"layer {x}: the null space is empty: AlphaEdit cannot change this layer (raise nullspace_threshold)")
    info = memit.edit(model, tok, requests, layers, up, hp, seed=seed, log=log)
    info["null_space_dims"] = {str(x): d for x, d in up.null_dims.items()}
    return info
