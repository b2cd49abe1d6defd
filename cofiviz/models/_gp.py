"""The linear algebra of the per-user Gaussian-process models (:mod:`cofiviz.models.gp`), free of the model class.

Every user ``u`` has a latent preference function over the items, ``f_u ~ N(m_u, K)`` with ``m_u = c_u + μ`` (the
user's offset ``c_u`` and an item mean ``μ``, zero for the non-collaborative models) and an item covariance ``K``.
Two likelihoods link ``f_u`` to the user's ratings ``y_u`` on the items ``I_u``:

- regression: ``y_ui = f_ui + ε``, ``ε ~ N(0, σ²)``. The posterior of ``f_u`` on every item is Gaussian with
  mean ``m_u + K_{·I} α_u`` and covariance ``K − K_{·I} A_u K_{I·}``, where ``α_u = (K_II + σ²I)⁻¹ (y_u − m_{u,I})``
  and ``A_u = (K_II + σ²I)⁻¹`` (Rasmussen & Williams, *Gaussian Processes for Machine Learning*, 2006, eqs.
  2.25-2.26; Algorithm 2.1 computes them through the Cholesky factor, and the log marginal likelihood
  ``log N(y_u; m_{u,I}, K_II + σ²I)`` of eq. 2.30 with them).
- ordinal (Chu & Ghahramani, "Gaussian processes for ordinal regression", JMLR 6, 2005, §2): rating level
  ``r ∈ {1 … R}`` with thresholds ``b_0 = −∞ < b_1 < … < b_{R−1} < b_R = +∞`` has the probit likelihood
  ``P(y = r | f) = Φ(z_1) − Φ(z_2)``, ``z_1 = (b_r − f)/σ``, ``z_2 = (b_{r−1} − f)/σ``. Its derivatives, derived
  here and checked against finite differences in the tests, are

  .. math::

      \\frac{∂ \\log P}{∂ f} = -\\frac{φ(z_1) - φ(z_2)}{σ (Φ(z_1) - Φ(z_2))}, \\qquad
      W = -\\frac{∂^2 \\log P}{∂ f^2} = \\Bigl(\\frac{∂ \\log P}{∂ f}\\Bigr)^2
          + \\frac{z_1 φ(z_1) - z_2 φ(z_2)}{σ^2 (Φ(z_1) - Φ(z_2))} > 0.

  The posterior is approximated by Laplace's method (Chu & Ghahramani §3.1: the MAP ``f̂`` by Newton's method on
  ``−log P(y|f) + ½ (f − m)ᵀ K⁻¹ (f − m)``; the Gaussian at ``f̂`` with precision ``K⁻¹ + W``). The Newton step and
  the approximate log marginal likelihood ``−½ aᵀ(f̂ − m) + log P(y|f̂) − Σ log diag L`` follow Rasmussen &
  Williams' Algorithms 3.1-3.2 (eqs. 3.18 and 3.32) with ``B = I + W^½ K W^½ = L Lᵀ``. The posterior on every item
  then has mean ``m + K_{·I} a`` (``a = K_II⁻¹ (f̂ − m) = ∇ log P(y | f̂)``, eq. 3.21) and covariance
  ``K − K_{·I} A K_{I·}`` with ``A = (K_II + W⁻¹)⁻¹ = W^½ B⁻¹ W^½`` (eq. 3.24), the regression's form.

The collaborative models learn ``μ`` and ``K`` from all users by EM (see :func:`m_step`), which needs only
``Σ_u s_u``, ``Q = Σ_u s_u s_uᵀ`` and ``P = Σ_u E_uᵀ A_u E_u``, where ``s_u`` is ``α_u`` (or ``a_u``) scattered to
the user's items and ``E_u`` selects them: :class:`EStats`.

The Cholesky factors, solves and products run in the numba kernels of :mod:`._gp_kernels`, not in LAPACK and
BLAS, whose rounding changes with their thread count; sums of elementwise products go through NumPy's pairwise sum.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import log_ndtr

from ..util import elementary
from ..util.errors import ModelFitError
from ..solvers import dense
from . import _gp_kernels as gk

__all__ = ["rbf_kernel", "one_hot_kernel", "ItemKernel", "posterior_means", "pair_scores", "regression_user", "ordinal_loglik", "ordinal_laplace_user", "EStats", "e_step",
           "m_step", "log_hyperprior", "thresholds_for"]

_LOG_2PI = math.log(2.0 * math.pi)


def rbf_kernel(X: np.ndarray, lengthscale: float, signal: float, jitter: float) -> np.ndarray:
    """``K0_ij = signal · exp(−‖x_i − x_j‖² / (2 lengthscale²)) + jitter·signal·[i = j]`` (``signal``: the prior
    variance of one item's latent value)."""
    d2 = gk.sq_dists(np.ascontiguousarray(X, dtype=np.float64))
    K = signal * elementary.exp(-0.5 * d2 / (lengthscale * lengthscale))
    K[np.diag_indices_from(K)] = signal * (1.0 + jitter)
    return K


def one_hot_kernel(n_items: int, lengthscale: float, signal: float, jitter: float) -> np.ndarray:
    """:func:`rbf_kernel` of one-hot item ids (every distinct pair at squared distance 2), without the ids."""
    K = np.full((n_items, n_items), signal * math.exp(-1.0 / (lengthscale * lengthscale)))
    K[np.diag_indices_from(K)] = signal * (1.0 + jitter)
    return K


class ItemKernel:
    """A feature kernel of the items read as a matrix whose entries are made when read: ``K[np.ix_(rows, cols)]``
    is the block, :meth:`dense` the whole. A user's posterior needs only the block of the items it rated and a
    score only the entries of one item's column, so the items × items matrix (2.5 GB at 17,770 items) is never
    kept. The entries are those of :func:`rbf_kernel`, :func:`one_hot_kernel` and the learned kernel of
    :mod:`._gp_evidence`, to the bit (:func:`._gp_kernels.feature_block`).

    Parameters
    ----------
    X : (items, features) array or None
        The features, already scaled for the learned kernel; None for one-hot item ids.
    n_items : int
    divisor, signal : float
        An entry off the diagonal is ``signal · exp((−½ ‖x_i − x_j‖²) / divisor)``.
    jitter : float
        The diagonal is ``signal · (1 + jitter)``.
    off : float
        The entry off the diagonal of one-hot ids.
    diag : float, optional
        The diagonal itself, instead of ``jitter`` (a kernel read back from a save).
    """

    def __init__(self, X: np.ndarray | None, n_items: int, divisor: float, signal: float, jitter: float = 0.0,
                 off: float = 0.0, diag: float | None = None):
        self.one_hot = X is None
        self.X = np.zeros((n_items, 0)) if X is None else np.ascontiguousarray(X, dtype=np.float64)
        self.shape = (int(n_items), int(n_items))
        self.divisor, self.signal, self.off = float(divisor), float(signal), float(off)
        self.diag = float(signal * (1.0 + jitter)) if diag is None else float(diag)

    @classmethod
    def rbf(cls, X: np.ndarray, lengthscale: float, signal: float, jitter: float) -> "ItemKernel":
        """:func:`rbf_kernel`'s entries."""
        return cls(X, len(X), lengthscale * lengthscale, signal, jitter)

    @classmethod
    def one_hot_ids(cls, n_items: int, lengthscale: float, signal: float, jitter: float) -> "ItemKernel":
        """:func:`one_hot_kernel`'s entries."""
        return cls(None, n_items, 1.0, signal, jitter, off=signal * math.exp(-1.0 / (lengthscale * lengthscale)))

    @property
    def _args(self) -> tuple:
        return self.X, self.divisor, self.signal, self.diag, self.off, self.one_hot

    def __getitem__(self, key) -> np.ndarray:
        rows, cols = key
        X, *rest = self._args
        return gk.feature_block(X, np.ascontiguousarray(np.ravel(rows), dtype=np.int64),
                                np.ascontiguousarray(np.ravel(cols), dtype=np.int64), *rest)

    def dense(self) -> np.ndarray:
        """The whole items × items matrix."""
        every = np.arange(self.shape[0])
        return self[every, every]


def _chol(M: np.ndarray, what: str) -> np.ndarray:
    L, ok = gk.cholesky(np.ascontiguousarray(M, dtype=np.float64))
    if not ok:
        raise ModelFitError(f"the Cholesky factorisation of {what} failed: not positive definite, or not finite")
    return L


def _solve(L: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(L Lᵀ)⁻¹ b`` for a vector or a matrix ``b``."""
    b = np.asarray(b, dtype=np.float64)
    if b.ndim == 1:
        return gk.cho_solve(L, np.ascontiguousarray(b[:, None]))[:, 0]
    return gk.cho_solve(L, np.ascontiguousarray(b))


def regression_user(K: np.ndarray, mean: np.ndarray, items: np.ndarray, y: np.ndarray, noise: float,
                    inverse: bool = True):
    """GP regression of one user: ``α = (K_II + σ²I)⁻¹ (y − mean_I)``, ``A = (K_II + σ²I)⁻¹`` (``None`` without
    ``inverse``) and the log marginal likelihood ``−½ (y − mean_I)ᵀ α − Σ log diag L − n/2 log 2π`` (R&W Algorithm
    2.1, eq. 2.30)."""
    n = len(items)
    C = K[np.ix_(items, items)] + noise * np.eye(n)
    L = _chol(C, "a user's K_II + σ²I")
    r = y - mean[items]
    alpha = _solve(L, r)
    A = _solve(L, np.eye(n)) if inverse else None
    logml = -0.5 * float(np.sum(r * alpha)) - float(np.sum(elementary.log(np.diag(L)))) - 0.5 * n * _LOG_2PI
    return alpha, A, logml


def thresholds_for(values: np.ndarray) -> np.ndarray:
    """The thresholds ``b_1 … b_{R−1}`` halfway between consecutive rating values."""
    values = np.asarray(values, dtype=np.float64)
    return 0.5 * (values[1:] + values[:-1])


def _log_diff_ndtr(z1: np.ndarray, z2: np.ndarray) -> np.ndarray:
    """``log(Φ(z1) − Φ(z2))`` for ``z1 > z2``, computed in the tail where it does not cancel."""
    upper = z2 > 0  # both in the upper tail: Φ(z1) − Φ(z2) = Φ(−z2) − Φ(−z1)
    a = np.where(upper, -z2, z1)
    b = np.where(upper, -z1, z2)
    la, lb = log_ndtr(a), log_ndtr(b)
    return la + elementary.log1p(-elementary.exp(np.minimum(lb - la, 0.0)))


def ordinal_loglik(f: np.ndarray, levels: np.ndarray, thresholds: np.ndarray, sigma: float):
    """Per-rating ``log P(y|f)``, its first derivative and ``W = −∂² log P/∂f²`` (Chu & Ghahramani §2).

    ``levels`` are 0-based (``0 … R−1``); ``thresholds`` the ``R − 1`` finite ``b``'s.
    """
    b = np.concatenate([[-np.inf], thresholds, [np.inf]])
    z1 = (b[levels + 1] - f) / sigma
    z2 = (b[levels] - f) / sigma
    logz = _log_diff_ndtr(z1, z2)
    # φ(z)/Z and z·φ(z)/Z, zero at the infinite ends
    lphi1 = np.where(np.isfinite(z1), -0.5 * np.where(np.isfinite(z1), z1, 0.0) ** 2 - 0.5 * _LOG_2PI, -np.inf)
    lphi2 = np.where(np.isfinite(z2), -0.5 * np.where(np.isfinite(z2), z2, 0.0) ** 2 - 0.5 * _LOG_2PI, -np.inf)
    r1, r2 = elementary.exp(lphi1 - logz), elementary.exp(lphi2 - logz)
    zr1 = np.where(np.isfinite(z1), np.where(np.isfinite(z1), z1, 0.0) * r1, 0.0)
    zr2 = np.where(np.isfinite(z2), np.where(np.isfinite(z2), z2, 0.0) * r2, 0.0)
    grad = -(r1 - r2) / sigma
    W = grad * grad + (zr1 - zr2) / (sigma * sigma)
    return logz, grad, np.maximum(W, 0.0)


def ordinal_laplace_user(K: np.ndarray, mean: np.ndarray, items: np.ndarray, levels: np.ndarray,
                         thresholds: np.ndarray, sigma: float, max_newton: int = 30, tol: float = 1e-8,
                         inverse: bool = True):
    """Laplace's approximation for one user (Chu & Ghahramani §3.1; R&W Algorithm 3.1 with a prior mean).

    Newton's method on ``ψ(f) = −log P(y|f) + ½ aᵀ(f − m)`` with ``f = m + K_II a``; a step that does not lower
    ``ψ`` is halved. Returns ``a`` (the posterior mean on every item is ``mean + K_{·I} a``), ``A = W^½ B⁻¹ W^½``
    (``None`` without ``inverse``), the approximate log marginal likelihood and ``f̂``.
    """
    n = len(items)
    Kii = np.ascontiguousarray(K[np.ix_(items, items)])
    m = mean[items]
    a = np.zeros(n)
    f = m.copy()
    lp, g, W = ordinal_loglik(f, levels, thresholds, sigma)
    psi = -float(np.sum(lp))
    for _ in range(max_newton):
        sW = np.sqrt(W)
        L = _chol(np.eye(n) + sW[:, None] * Kii * sW[None, :], "a user's B = I + W^½ K W^½")
        bvec = W * (f - m) + g
        a_new = bvec - sW * _solve(L, sW * dense.matvec(Kii, bvec))
        step = a_new - a
        t = 1.0
        for _ in range(30):
            a_try = a + t * step
            f_try = m + dense.matvec(Kii, a_try)
            lp_try, g_try, W_try = ordinal_loglik(f_try, levels, thresholds, sigma)
            psi_try = -float(np.sum(lp_try)) + 0.5 * float(np.sum(a_try * (f_try - m)))
            if np.isfinite(psi_try) and psi_try <= psi + 1e-12 * max(1.0, abs(psi)):
                break
            t *= 0.5
        else:
            break
        done = psi - psi_try <= tol * max(1.0, abs(psi))
        a, f, lp, g, W, psi = a_try, f_try, lp_try, g_try, W_try, psi_try
        if done:
            break
    sW = np.sqrt(W)
    L = _chol(np.eye(n) + sW[:, None] * Kii * sW[None, :], "a user's B = I + W^½ K W^½")
    A = sW[:, None] * _solve(L, np.diag(sW)) if inverse else None
    logml = -0.5 * float(np.sum(a * (f - m))) + float(np.sum(lp)) - float(np.sum(elementary.log(np.diag(L))))
    return a, A, logml, f


@dataclass
class EStats:
    """What an E-step over the users leaves for the M-step: ``n`` users with ratings, ``s = Σ_u s_u``,
    ``Q = Σ_u s_u s_uᵀ``, ``P = Σ_u E_uᵀ A_u E_u`` (``None`` when the E-step was asked for no moments) and the
    summed log marginal likelihood."""

    n: int
    s: np.ndarray | None
    Q: np.ndarray | None
    P: np.ndarray | None
    logml: float


def posterior_means(K, mu: np.ndarray, offsets: np.ndarray, indptr: np.ndarray, items: np.ndarray,
                    coef: np.ndarray) -> np.ndarray:
    """The posterior means of every user on every item (users × items), ``offsets[u] + μ + Σ_{p ∈ I_u} coef_p
    K[items_p]``, from :func:`e_step`'s coefficients; ``K`` a matrix or an :class:`ItemKernel`. For small data:
    :func:`pair_scores` makes the pairs a model scores without the whole matrix."""
    K = K.dense() if isinstance(K, ItemKernel) else np.ascontiguousarray(K)
    base = offsets[:, None] + mu[None, :]
    return gk.sparse_rows_times(indptr, items, coef, K, np.ascontiguousarray(base))


def pair_scores(K, mu: np.ndarray, offsets: np.ndarray, indptr: np.ndarray, items: np.ndarray, coef: np.ndarray,
                users: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """The posterior means of (user, item) pairs: the entries of :func:`posterior_means` at ``(users, cols)``, to
    the bit, made pair by pair (``K`` a matrix or an :class:`ItemKernel`, whose entries are made as read)."""
    users = np.ascontiguousarray(users, dtype=np.int64)
    cols = np.ascontiguousarray(cols, dtype=np.int64)
    if isinstance(K, ItemKernel):
        return gk.feature_pair_scores(indptr, items, coef, offsets, mu, users, cols, *K._args)
    return gk.dense_pair_scores(indptr, items, coef, offsets, mu, users, cols, np.ascontiguousarray(K))


def e_step(K, mu: np.ndarray, offsets: np.ndarray, indptr: np.ndarray, items: np.ndarray,
           targets: np.ndarray, solve, stats: bool = True, moments: bool = True):
    """Each user's posterior under ``(μ, K)``: the coefficients ``coef`` of the posterior means (``α_u`` or
    ``a_u`` of each rating, in the order of ``items``: the mean on every item is ``offset_u + μ + K_{·I_u}
    coef_u``, :func:`posterior_means` and :func:`pair_scores`) and, with ``stats``, the :class:`EStats` of the
    users with ratings; without ``moments`` those hold only ``n`` and the log marginal likelihood (no
    ``items × items`` sums: what a model without an M-step needs). ``K`` is a matrix or an :class:`ItemKernel`.

    ``solve(K, mean, items, targets)`` is :func:`regression_user` or :func:`ordinal_laplace_user` with the
    likelihood's settings bound; its first two results are ``α_u`` and ``A_u`` (``A_u`` is read only for the
    moments), its third the log marginal likelihood. Users without ratings have no coefficient: their mean is
    the prior's, ``offset + μ``.
    """
    n_users, n_items = len(indptr) - 1, len(mu)
    coef = np.zeros(len(items))  # α_u of each rating, in the order of ``items``
    moments = stats and moments
    P = np.zeros((n_items, n_items)) if moments else None
    logml, n = 0.0, 0
    for u in range(n_users):
        lo, hi = indptr[u], indptr[u + 1]
        if hi == lo:
            continue
        its = items[lo:hi]
        out = solve(K, mu + offsets[u], its, targets[lo:hi])
        coef[lo:hi] = out[0]
        if moments:
            P[np.ix_(its, its)] += out[1]
        logml += out[2]
        n += 1
    if not stats:
        return coef, None
    if not moments:
        return coef, EStats(n=n, s=None, Q=None, P=None, logml=logml)
    s = np.bincount(items, weights=coef, minlength=n_items)
    return coef, EStats(n=n, s=s, Q=gk.sparse_outer_sum(indptr, items, coef, n_items), P=P, logml=logml)


def m_step(K: np.ndarray, mu: np.ndarray, K0: np.ndarray, st: EStats, tau: float, pi: float):
    """The EM update of the item mean and covariance under the prior :func:`log_hyperprior`.

    With ``m_u = μ + K s_u`` and ``C_u = K − K E_uᵀ A_u E_u K`` each user's posterior on every item (the E-step under
    the current ``(μ, K)``), the expected complete-data log posterior is maximised by

    .. math::

        μ' = \\frac{\\sum_u m_u}{n + π}, \\qquad
        K' = \\frac{τ K_0 + π μ' μ'^\\top + \\sum_u \\bigl[(m_u - μ')(m_u - μ')^\\top + C_u\\bigr]}{n + τ + 1},

    the update of Yu, Tresp & Schwaighofer ("Learning Gaussian processes from multiple tasks", ICML 2005, §3) for
    their normal-inverse-Wishart prior, with ``n + τ + 1`` where they write ``n + τ``: the ``+1`` is the
    ``|K|^{-1/2}`` of the normal prior on ``μ``, kept so that the update is the exact M-step of the stated prior.
    The sum is formed without any per-user ``items × items`` matrix: with ``d = μ − μ'``,
    ``Σ_u [(m_u − μ')(m_u − μ')ᵀ + C_u] = n K + n d dᵀ + d (K s)ᵀ + (K s) dᵀ + K (Q − P) K``; the new ``K`` is made
    exactly symmetric, ``(K' + K'ᵀ)/2``. All but the product takes two passes over memory
    (:func:`._gp_kernels.em_covariance`).
    """
    n = st.n
    Ks = dense.matvec(K, st.s)
    mu_new = (n * mu + Ks) / (n + pi)
    d = mu - mu_new
    X = gk.matmul(gk.matmul(K, st.Q - st.P), K)
    K_new = gk.em_covariance(np.ascontiguousarray(K), np.ascontiguousarray(K0), X, mu_new, d, Ks, float(n),
                             float(tau), float(pi), float(n + tau + 1.0))
    return K_new, mu_new


def log_hyperprior(K: np.ndarray, mu: np.ndarray, K0: np.ndarray, tau: float, pi: float) -> float:
    """``log p(μ, K) = −(τ + 1)/2 · log|K| − τ/2 · tr(K⁻¹ K0) − π/2 · μᵀ K⁻¹ μ`` up to a constant: an inverse-Wishart
    prior on ``K`` centred at the feature kernel ``K0`` (weight ``τ``) and ``μ | K ~ N(0, K/π)``."""
    L = _chol(K, "the item covariance K")
    logdet = 2.0 * float(np.sum(elementary.log(np.diag(L))))
    tr = float(np.trace(_solve(L, K0)))
    q = float(np.sum(mu * _solve(L, mu)))
    return -0.5 * (tau + 1.0) * logdet - 0.5 * tau * tr - 0.5 * pi * q
