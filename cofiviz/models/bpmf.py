"""BPMF: Bayesian probabilistic matrix factorisation by Gibbs sampling (a rating-prediction baseline).

Salakhutdinov & Mnih, "Bayesian Probabilistic Matrix Factorization using Markov Chain Monte Carlo"
(ICML 2008), the "BPMF" row of LCR's Table 2 (Lee et al., WWW 2014). With ratings centred on their training
mean μ::

    r_ij − μ ~ N(<U_i, V_j>, α⁻¹)                                   (observed entries)
    U_i ~ N(μ_U, Λ_U⁻¹),  V_j ~ N(μ_V, Λ_V⁻¹)
    μ_U ~ N(μ_0, (β_0 Λ_U)⁻¹),  Λ_U ~ W(W_0, ν_0)                  (the same for V)

Gibbs sweep (one ``fit`` iteration), following the paper's §3.3:

1. hyperparameters given U: with ``N`` users, ``Ū`` their mean and ``S̄ = (1/N) Σ (U_i − Ū)(U_i − Ū)ᵀ``,
   ``β_0* = β_0 + N``, ``ν_0* = ν_0 + N``, ``μ_0* = (β_0 μ_0 + N Ū)/(β_0 + N)``,
   ``(W_0*)⁻¹ = W_0⁻¹ + N S̄ + β_0 N/(β_0 + N) (μ_0 − Ū)(μ_0 − Ū)ᵀ``; draw
   ``Λ_U ~ W(W_0*, ν_0*)`` (Bartlett decomposition) and ``μ_U ~ N(μ_0*, (β_0* Λ_U)⁻¹)``;
2. every user in parallel (numba ``prange``): ``Λ_i* = Λ_U + α Σ_{j ∈ Ω_i} V_j V_jᵀ``,
   ``μ_i* = Λ_i*⁻¹ (α Σ_{j ∈ Ω_i} (r_ij − μ) V_j + Λ_U μ_U)``, ``U_i ~ N(μ_i*, Λ_i*⁻¹)``;
3. the same for the hyperparameters of V and for every item, given the new U.

Every random number comes from the model's seeded NumPy generator (the standard normals of step 2 are
drawn in NumPy and handed to the kernel), so a seeded fit is reproducible and independent of the
number of threads. The prediction is the Monte Carlo average over the samples drawn after
``burn_in`` sweeps (before that, the current sample), ``r̂_ij = μ + (1/T) Σ_t <U_i^(t), V_j^(t)>``,
kept exactly as one dot product of the concatenated samples
``[U^(1) … U^(T)] · [V^(1) … V^(T)]ᵀ / T``. With ``burn_in ≥ max_iter`` nothing is averaged and the
prediction comes from the last sample, as in the PREA toolkit in which LCR ran its BPMF baseline (that
toolkit also starts the factors at N(0, 1): ``init_scale=1``). Paper defaults: ``μ_0 = 0``, ``ν_0 = D``, ``W_0 = I``,
``β_0 = 2``, ``α = 2``.
"""

from __future__ import annotations

import numpy as np
import param
from numba import njit, prange

from ..datasets import tiny
from ..util.errors import ParameterError
from ..ratings import Ratings
from ..solvers import dense
from .base import Model
from .nmf import item_csr
from ..search.space import IntLogUniform, LogUniform

__all__ = ["BPMF", "warmup", "sample_wishart"]


def sample_wishart(rng: np.random.Generator, scale: np.ndarray, df: float) -> np.ndarray:
    """One draw of ``W(scale, df)`` (mean ``df · scale``) by the Bartlett decomposition."""
    D = scale.shape[0]
    L, ok = dense.cholesky(np.ascontiguousarray(scale))
    if not ok:
        raise ParameterError("sample_wishart: the scale matrix is not positive definite")
    A = np.zeros((D, D))
    A[np.diag_indices(D)] = np.sqrt(rng.chisquare(df - np.arange(D)))
    low = np.tril_indices(D, -1)
    A[low] = rng.standard_normal(len(low[0]))
    LA = dense.matmul(L, A)
    return dense.matmul(LA, LA.T)


def sample_hyper(rng, X, mu0, beta0, W0_inv, nu0):
    """Step 1: ``(μ, Λ)`` given the factor rows ``X`` (Gaussian–Wishart posterior)."""
    N, D = X.shape
    xbar = X.mean(axis=0)
    C = X - xbar
    S = dense.matmul(C.T, C)                          # = N · S̄
    d = mu0 - xbar
    Winv = W0_inv + S + (beta0 * N / (beta0 + N)) * np.outer(d, d)
    W = dense.spd_inverse(0.5 * (Winv + Winv.T))
    Lam = sample_wishart(rng, 0.5 * (W + W.T), nu0 + N)
    mu_star = (beta0 * mu0 + N * xbar) / (beta0 + N)
    cov = dense.spd_inverse(Lam * (beta0 + N))
    L, ok = dense.cholesky(0.5 * (cov + cov.T))
    if not ok:
        raise ParameterError("sample_hyper: the posterior covariance is not positive definite")
    mu = mu_star + dense.matvec(L, rng.standard_normal(D))
    return mu, Lam


@njit(parallel=True, cache=True)
def _sample_rows(A, B, indptr, other, values, alpha, mu, Lam, Z):
    """Step 2 for every row a of A in parallel: ``A_a ~ N(μ*, Λ*⁻¹)`` with ``Λ* = Λ + α Σ B_b B_bᵀ``,
    ``μ* = Λ*⁻¹ (α Σ r B_b + Λ μ)``, using the given standard normals ``Z[a]``."""
    n, D = A.shape
    Lmu = np.empty(D)
    for d in range(D):
        Lmu[d] = dense.dot(Lam[d], mu)
    for a in prange(n):
        P = Lam.copy()
        rhs = Lmu.copy()
        for k in range(indptr[a], indptr[a + 1]):
            b = other[k]
            r = values[k]
            for d in range(D):
                bd = B[b, d]
                rhs[d] += alpha * r * bd
                for e in range(d + 1):
                    P[d, e] += alpha * bd * B[b, e]
        for d in range(D):
            for e in range(d + 1, D):
                P[d, e] = P[e, d]
        L, _ = dense.cholesky(P)                     # P = L Lᵀ (positive definite: Λ plus a Gram matrix)
        # mean: solve L y = rhs, then Lᵀ m = y; sample: m + L⁻ᵀ z (covariance P⁻¹), so Lᵀ (m + L⁻ᵀ z) = y + z
        y = dense.solve_lower(L, rhs)
        A[a] = dense.solve_lower_t(L, y + Z[a])


@njit(parallel=True, cache=True)
def _dots(U, V, users, items, out, add):
    D = U.shape[1]
    for k in prange(users.shape[0]):
        acc = 0.0
        for d in range(D):
            acc += U[users[k], d] * V[items[k], d]
        if add:
            out[k] += acc
        else:
            out[k] = acc


class BPMF(Model):
    """Bayesian PMF (Salakhutdinov & Mnih 2008) by Gibbs sampling; one iteration is one sweep.

    Parameters
    ----------
    rank : int
        Latent dimension D (paper: 10 to 300).
    alpha : float
        Observation precision α (paper: 2).
    beta0 : float
        β_0 of the Gaussian–Wishart hyperprior (paper: 2).
    nu0 : int or None
        Wishart degrees of freedom ν_0 (≥ D; None: D, the paper's choice). ``W_0 = I``, ``μ_0 = 0``.
    burn_in : int
        Sweeps discarded before samples are averaged into the prediction.
    init_scale : float
        Initial factors N(0, init_scale²).
    max_iter : int
        Sweeps in all; ``max_iter − burn_in`` samples are averaged.

    Notes
    -----
    The reported loss is the training RMSE of the current prediction (the posterior mean estimate
    once samples are averaged). Early stopping on validation (``patience``) restores the average
    over the samples drawn up to the best sweep.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"rank": IntLogUniform(2, 30), "alpha": LogUniform(0.3, 4.0)}
    presets = {"paper": {"alpha": 2.0, "beta0": 2.0, "burn_in": 10}}

    rank = param.Integer(default=10, bounds=(1, 500), doc="Latent dimension D.")
    alpha = param.Number(default=2.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                         doc="Observation precision α.")
    beta0 = param.Number(default=2.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                         doc="β_0 of the Gaussian–Wishart hyperprior.")
    nu0 = param.Integer(default=None, bounds=(1, None), allow_None=True,
                        doc="Wishart degrees of freedom ν_0 (None: D); must be ≥ D.")
    burn_in = param.Integer(default=10, bounds=(0, None), doc="Sweeps before samples are averaged.")
    init_scale = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                              doc="Standard deviation of the initial factors.")
    max_iter = param.Integer(default=60, bounds=(1, 100_000), doc="Gibbs sweeps in all.")

    #: no step size: a lower observation precision gives the prior more weight in every row's posterior
    divergence_hint = (("alpha", "lower"),)
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (dense.warmup,)

    def _check_params(self) -> None:
        if self.nu0 is not None and self.nu0 < self.rank:
            raise ParameterError(f"BPMF: nu0 must be >= rank ({self.rank}) for the Wishart prior, got nu0={self.nu0}")

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self._check_params()   # the parameters may have been set one by one since construction
        D = int(self.rank)
        self._nu0 = D if self.nu0 is None else int(self.nu0)
        self._rng = rng
        self.mean_ = float(train.ratings.mean())
        self.U_ = rng.normal(0.0, self.init_scale, size=(train.n_users, D))
        self.V_ = rng.normal(0.0, self.init_scale, size=(train.n_items, D))
        centred = np.ascontiguousarray(train.ratings - self.mean_)
        self._u = (np.asarray(train.indptr, np.int64), np.ascontiguousarray(train.items, dtype=np.int64), centred)
        iptr, iusers, pos = item_csr(train)
        self._i = (iptr, iusers, np.ascontiguousarray(centred[pos]))
        self._pairs = (np.ascontiguousarray(train.users, dtype=np.int64), self._u[1])
        self._centred = centred
        n_keep = max(1, int(self.max_iter) - int(self.burn_in))
        self._Ucat = np.zeros((train.n_users, n_keep * D))
        self._Vcat = np.zeros((train.n_items, n_keep * D))
        self.n_samples_ = 0
        self._pred_sum = np.zeros(len(train))
        self._tmp = np.empty(len(train))
        self._refresh_state()

    def _refresh_state(self) -> None:
        D = int(self.rank)
        if self.n_samples_ == 0:
            self.Us_, self.Vs_ = self.U_, self.V_
        else:
            t = self.n_samples_
            self.Us_ = self._Ucat[:, :t * D]
            self.Vs_ = self._Vcat[:, :t * D]

    def _step(self, iteration: int) -> float:
        rng = self._rng
        D = int(self.rank)
        alpha = float(self.alpha)
        beta0 = float(self.beta0)
        mu0 = np.zeros(D)
        W0_inv = np.eye(D)
        mu_u, lam_u = sample_hyper(rng, self.U_, mu0, beta0, W0_inv, self._nu0)
        Zu = rng.standard_normal(self.U_.shape)
        _sample_rows(self.U_, self.V_, *self._u, alpha, mu_u, lam_u, Zu)
        mu_v, lam_v = sample_hyper(rng, self.V_, mu0, beta0, W0_inv, self._nu0)
        Zv = rng.standard_normal(self.V_.shape)
        _sample_rows(self.V_, self.U_, *self._i, alpha, mu_v, lam_v, Zv)
        if iteration > int(self.burn_in) and self.n_samples_ < self._Ucat.shape[1] // D:
            t = self.n_samples_
            self._Ucat[:, t * D:(t + 1) * D] = self.U_
            self._Vcat[:, t * D:(t + 1) * D] = self.V_
            self.n_samples_ = t + 1
            _dots(self.U_, self.V_, *self._pairs, self._pred_sum, True)
            pred = self._pred_sum / self.n_samples_
        else:
            _dots(self.U_, self.V_, *self._pairs, self._tmp, False)
            pred = self._tmp
        self._refresh_state()
        return float(np.sqrt(np.mean((self._centred - pred) ** 2)))

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        # one parallel dot product over the concatenated samples, without gathering (n, T·D) rows
        t = max(self.Us_.shape[1] // int(self.rank), 1)
        out = np.empty(len(users))
        _dots(self.Us_, self.Vs_, users.astype(np.int64),
              items.astype(np.int64), out, False)
        return self.mean_ + out / t

    def _state(self) -> dict[str, np.ndarray]:
        # (rows, samples, rank): views of the concatenated samples, one block of rank columns per sample
        D = int(self.rank)
        return {"U_samples": self.Us_.reshape(self.Us_.shape[0], -1, D),
                "V_samples": self.Vs_.reshape(self.Vs_.shape[0], -1, D), "mean": np.array([self.mean_])}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        Us = np.asarray(state["U_samples"], dtype=np.float64)
        Vs = np.asarray(state["V_samples"], dtype=np.float64)
        if Us.ndim != 3 or Vs.ndim != 3 or Us.shape[1:] != Vs.shape[1:] or Us.shape[2] != int(self.rank):
            raise ParameterError(f"BPMF state needs samples shaped (rows, samples, {self.rank}) alike for users and "
                                 f"items, got {Us.shape}, {Vs.shape}")
        self.Us_ = np.ascontiguousarray(Us.reshape(Us.shape[0], -1))
        self.Vs_ = np.ascontiguousarray(Vs.reshape(Vs.shape[0], -1))
        self.mean_ = float(np.asarray(state["mean"]).ravel()[0])

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        # the samples averaged so far (the current sample before burn-in ends), each of rank columns
        return {"U_samples": (n_users, None, int(self.rank)), "V_samples": (n_items, None, int(self.rank)),
                "mean": (1,)}


def warmup() -> None:
    """Compile (or load from cache) BPMF's kernels on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    train = tiny()
    BPMF(rank=2, max_iter=3, burn_in=1).fit(train).score(np.arange(4), np.arange(4))
