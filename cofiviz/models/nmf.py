"""NMF: non-negative matrix factorisation of the observed ratings (a rating-prediction baseline).

Lee & Seung, "Algorithms for non-negative matrix factorization" (NIPS 2001), as used by the LCR paper
(Lee et al., WWW 2014, Table 2) for the baseline row "NMF". Only the observed entries count (the weighted
NMF of Zhang, Wang, Ford & Makedon, SDM 2006, with an L2 penalty), so the objective is

    L(P, Q) = ½ Σ_{(u,i) ∈ Ω} (r_ui − <P_u, Q_i>)² + (λ/2) (‖P‖² + ‖Q‖²),      P, Q ≥ 0

minimised by the multiplicative updates (each never increases L and keeps P, Q non-negative)::

    P_uk ← P_uk · Σ_{i ∈ Ω_u} r_ui Q_ik / (Σ_{i ∈ Ω_u} r̂_ui Q_ik + λ P_uk)
    Q_ik ← Q_ik · Σ_{u ∈ Ω_i} r_ui P_uk / (Σ_{u ∈ Ω_i} r̂_ui P_uk + λ Q_ik)

with ``r̂ = <P_u, Q_i>``. One iteration (what ``fit`` reports) is a user pass then an item pass, each a
numba ``prange`` over users (items), O(|Ω| D). Scores are ``<P_u, Q_i>``; an item without training
ratings keeps its initial factors (its numerator is 0, so they shrink to 0: it scores 0).
"""

from __future__ import annotations

import numpy as np
import param
from numba import njit, prange

from ..datasets import tiny
from ..util.errors import DataError, ParameterError
from ..ratings import Ratings
from ..solvers import dense
from .base import Model
from ..search.space import IntLogUniform, LogUniform

__all__ = ["NMF", "warmup", "item_csr"]

_EPS = 1e-12


def item_csr(train: Ratings) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The ratings grouped by item: ``(item_indptr, users, position)``, position into ``train``'s arrays."""
    indptr, positions = train.item_index()
    return indptr, np.ascontiguousarray(train.users[positions], dtype=np.int64), positions


@njit(parallel=True, cache=True)
def _multiplicative(A, B, indptr, other, values, lam):
    """One multiplicative update of the rows of A (rows grouped by ``indptr``; ``other[k]`` the row of B,
    ``values[k]`` the rating of entry k)."""
    n, D = A.shape
    for a in prange(n):
        lo, hi = indptr[a], indptr[a + 1]
        num = np.zeros(D)
        den = np.zeros(D)
        for k in range(lo, hi):
            b = other[k]
            pred = 0.0
            for d in range(D):
                pred += A[a, d] * B[b, d]
            for d in range(D):
                num[d] += values[k] * B[b, d]
                den[d] += pred * B[b, d]
        for d in range(D):
            A[a, d] *= num[d] / (den[d] + lam * A[a, d] + 1e-12)


@njit(parallel=True, cache=True)
def _multiplicative_zero(A, B, indptr, other, values, lam, BtB):
    """Lee & Seung's update with unobserved entries read as 0: ``A ← A ⊙ (R B) / (A BᵀB + λ A)``."""
    n, D = A.shape
    for a in prange(n):
        num = np.zeros(D)
        for k in range(indptr[a], indptr[a + 1]):
            b = other[k]
            for d in range(D):
                num[d] += values[k] * B[b, d]
        den = np.zeros(D)
        for d in range(D):
            acc = lam * A[a, d]
            for e in range(D):
                acc += A[a, e] * BtB[e, d]
            den[d] = acc
        for d in range(D):
            A[a, d] *= num[d] / (den[d] + 1e-12)


@njit(parallel=True, cache=True)
def _sse(P, Q, users, items, ratings):
    total = 0.0
    D = P.shape[1]
    for k in prange(users.shape[0]):
        pred = 0.0
        for d in range(D):
            pred += P[users[k], d] * Q[items[k], d]
        e = ratings[k] - pred
        total += e * e
    return total


class NMF(Model):
    """Non-negative matrix factorisation of the observed ratings by multiplicative updates.

    Parameters
    ----------
    rank : int
        Latent dimension D.
    reg : float
        λ of the L2 penalty (≥ 0).
    init_scale : float
        Initial factors are uniform on ``[0, init_scale · 2 sqrt(mean rating / D))``, so that the first
        predictions average about ``init_scale² ×`` the mean rating.
    missing : {"ignore", "zero"}
        ``"ignore"`` (default): the objective above, over the observed entries Ω only. ``"zero"``: Lee &
        Seung's original NMF of the whole matrix with every unrated entry read as rating 0,
        ``½ ‖R − PQᵀ‖²_F + (λ/2)(‖P‖² + ‖Q‖²)``, updated by ``P ← P ⊙ RQ / (P QᵀQ + λP)`` (and the same
        for Q), still O(|Ω| D + (m + n) D²) per iteration since ``R`` is sparse. It mixes *whether* an
        item was rated into its score (a popularity component).
    tol : float
        Stop when the objective decreases by less than ``tol`` (relative) in an iteration (0: never).

    Notes
    -----
    The reported loss is ``L(P, Q) / |Ω|`` after the iteration. Ratings must be ≥ 0 (non-negative
    data; every MovieLens rating is).
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"rank": IntLogUniform(5, 50), "reg": LogUniform(0.01, 30.0)}
    presets = {"paper": {"missing": "ignore"}}

    rank = param.Integer(default=10, bounds=(1, 1000), doc="Latent dimension D.")
    reg = param.Number(default=0.1, bounds=(0.0, None), softbounds=(0.0, 10.0), doc="λ: L2 regularisation.")
    init_scale = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                              softbounds=(0.1, 2.0), doc="Scale of the uniform initial factors.")
    missing = param.Selector(default="ignore", objects=["ignore", "zero"],
                             doc="Fit the observed ratings only, or the whole matrix with unrated entries as 0.")
    tol = param.Number(default=1e-5, bounds=(0.0, None), doc="Relative objective decrease that stops training.")
    max_iter = param.Integer(default=200, bounds=(1, 100_000), doc="Iterations at most.")

    #: no step size: the multiplicative updates never increase the objective; the penalty bounds the factors
    divergence_hint = (("reg", "raise"),)
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (dense.warmup,)

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        if train.ratings.min() < 0:
            raise DataError(f"NMF needs non-negative ratings, got {train.ratings.min():g}")
        D = int(self.rank)
        mean = max(float(train.ratings.mean()), _EPS)
        hi = float(self.init_scale) * 2.0 * np.sqrt(mean / D)
        self.P_ = rng.uniform(0.0, hi, size=(train.n_users, D))
        self.Q_ = rng.uniform(0.0, hi, size=(train.n_items, D))
        self._u = (np.asarray(train.indptr, np.int64), np.ascontiguousarray(train.items, dtype=np.int64),
                   np.ascontiguousarray(train.ratings))
        iptr, iusers, pos = item_csr(train)
        self._i = (iptr, iusers, np.ascontiguousarray(train.ratings[pos]))
        self._all = (np.ascontiguousarray(train.users, dtype=np.int64), self._u[1], self._u[2])
        self._last = np.inf

    def _objective(self) -> float:
        sse = _sse(self.P_, self.Q_, *self._all)
        if self.missing == "zero":
            # ‖R − PQᵀ‖² over every entry = Σ_Ω (r − r̂)² + Σ_{not Ω} r̂² = Σ_Ω (r − r̂)² + tr(PᵀP QᵀQ) − Σ_Ω r̂²
            pred = np.einsum("ij,ij->i", self.P_[self._all[0]], self.Q_[self._all[1]])
            gram = dense.matmul(self.P_.T, self.P_) * dense.matmul(self.Q_.T, self.Q_)
            sse += float(np.sum(gram)) - dense.dot(pred, pred)
        lam = float(self.reg)
        return 0.5 * sse + 0.5 * lam * (float(np.sum(self.P_ ** 2)) + float(np.sum(self.Q_ ** 2)))

    def _step(self, iteration: int) -> float:
        lam = float(self.reg)
        if self.missing == "zero":
            _multiplicative_zero(self.P_, self.Q_, *self._u, lam, dense.matmul(self.Q_.T, self.Q_))
            _multiplicative_zero(self.Q_, self.P_, *self._i, lam, dense.matmul(self.P_.T, self.P_))
        else:
            _multiplicative(self.P_, self.Q_, *self._u, lam)
            _multiplicative(self.Q_, self.P_, *self._i, lam)
        obj = self._objective()
        self._rel = (self._last - obj) / max(abs(self._last), _EPS) if np.isfinite(self._last) else np.inf
        self._last = obj
        return obj / max(len(self._all[0]), 1)

    def _converged(self, iteration: int) -> bool:
        return self.tol > 0 and iteration > 1 and self._rel < self.tol

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", self.P_[users], self.Q_[items])

    def _state(self) -> dict[str, np.ndarray]:
        return {"P": self.P_, "Q": self.Q_}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        P = np.ascontiguousarray(state["P"], dtype=np.float64)
        Q = np.ascontiguousarray(state["Q"], dtype=np.float64)
        if P.ndim != 2 or Q.ndim != 2 or P.shape[1] != Q.shape[1]:
            raise ParameterError(f"NMF state needs P and Q with one number of columns, got {P.shape}, {Q.shape}")
        self.P_, self.Q_ = P, Q

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        return {"P": (n_users, int(self.rank)), "Q": (n_items, int(self.rank))}


def warmup() -> None:
    """Compile (or load from cache) NMF's kernels on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    train = tiny()
    NMF(rank=2, max_iter=2).fit(train).score(np.arange(4), np.arange(4))
