"""The Gaussian-process models' hyper-parameters learned by maximising the evidence: its value, gradient and ascent.

Chu & Ghahramani ("Gaussian processes for ordinal regression", JMLR 6, 2005, §3.1) choose the hyper-parameters of
GPOR by gradient ascent of the evidence ``log P(D | θ)``: the Gaussian kernel ``K(x, x') = exp(−½ Σ_ς κ_ς
(x_ς − x'_ς)²)`` with one ``κ_ς`` per input (the ARD form), unit amplitude, the noise ``σ`` of the probit and the
thresholds, parametrised as ``θ = {ln κ_ς, ln σ, b_1, ln Δ_2, …, ln Δ_{R−1}}`` with ``b_j = b_{j−1} + Δ_j``.
The evidence of GP regression is exact; GPOR's is Laplace's approximation at the posterior mode ``f̂``,

.. math::

    \\log q(y | θ) = \\log P(y | \\hat f) - \\tfrac12 a^\\top (\\hat f - m) - \\tfrac12 \\log |I + K W|,
    \\qquad a = K^{-1}(\\hat f - m) = ∇ \\log P(y | \\hat f).

Its gradient (Rasmussen & Williams, *Gaussian Processes for Machine Learning*, 2006, §5.5.1, written out here
for both kinds of hyper-parameter and checked against finite differences in the tests) is the explicit part at
fixed ``f̂`` plus the part through ``f̂``: with ``R = W^½ B⁻¹ W^½``, ``Σ = (K⁻¹ + W)⁻¹ = K − K R K`` and
``s = ½ diag(Σ) ⊙ ∂³ log P/∂f³`` (the derivative of ``−½ log|I + KW|`` in ``f̂``),

.. math::

    \\frac{∂ \\log q}{∂ θ_K} = \\tfrac12 a^\\top C a - \\tfrac12 \\operatorname{tr}(R C)
        + s^\\top (I - K R) C a, \\qquad C = ∂K/∂θ_K,

    \\frac{∂ \\log q}{∂ θ_L} = \\sum_i \\frac{∂ \\log P_i}{∂ θ_L} - \\tfrac12 \\sum_i Σ_{ii} \\frac{∂ W_i}{∂ θ_L}
        + s^\\top Σ \\frac{∂ ∇ \\log P}{∂ θ_L}

for a kernel hyper-parameter ``θ_K`` and a likelihood one ``θ_L`` (a threshold, ``ln σ``); ``∂f̂/∂θ_K = (I − KR)
C a`` and ``∂f̂/∂θ_L = Σ ∂∇log P/∂θ_L`` follow from differentiating ``f̂ = m + K ∇ log P(y | f̂)``. For regression
``∂ log P(y|θ)/∂θ = ½ αᵀ C α − ½ tr(A C)`` (R&W eq. 5.9) with ``C`` the derivative of ``K_II + σ²I``.

Where the texts end and a choice begins: the collaborative-filtering setting has one task per user, and the
hyper-parameters here are shared by all users and learned on the summed evidence of (a seeded subset of) the
training users; the ascent is a limited-memory BFGS of this module (:func:`maximise`), written without BLAS so that a
seed gives the same hyper-parameters on every CPU, where Chu & Ghahramani used a conjugate-gradient package.
"""

from __future__ import annotations

import math

import numpy as np

from ..util import elementary
from ..util.errors import ModelFitError
from ..solvers import dense
from . import _gp
from . import _gp_kernels as gk

__all__ = ["ard_kernel", "ordinal_terms", "regression_evidence", "ordinal_evidence", "Hyper", "total_evidence",
           "maximise"]


def ard_kernel(X: np.ndarray | None, n_items: int, kappa: np.ndarray, signal: float, jitter: float) -> _gp.ItemKernel:
    """``K_ij = signal · (exp(−½ Σ_ς κ_ς (x_iς − x_jς)²) + jitter·[i = j])`` as an :class:`~._gp.ItemKernel` (its
    entries made when read); ``X = None`` means one-hot item ids and a single ``κ`` (every distinct pair at squared
    distance 2)."""
    if X is None:
        return _gp.ItemKernel.one_hot_ids(n_items, 1.0 / math.sqrt(float(kappa[0])), signal, jitter)
    Xs = np.ascontiguousarray(X * np.sqrt(kappa)[None, :])
    return _gp.ItemKernel(Xs, n_items, 1.0, signal, jitter)


# ---------------------------------------------------------------------------------------------- the likelihood
def _h_derivatives(u: np.ndarray, low: np.ndarray):
    """``h(u, l) = log(Φ(u) − Φ(l))`` and its partial derivatives up to the third, with ``u = +∞`` or ``l = −∞``
    allowed (every term carrying that end is then zero). With ``r_u = φ(u)/Z`` and ``r_l = φ(l)/Z``:
    ``h_u = r_u``, ``h_l = −r_l``, ``h_uu = −u r_u − r_u²``, ``h_ul = r_u r_l``, ``h_ll = l r_l − r_l²``,
    ``h_uuu = (u² − 1) r_u + 3u r_u² + 2 r_u³``, ``h_uul = −u r_u r_l − 2 r_u² r_l``,
    ``h_ull = 2 r_u r_l² − l r_u r_l``, ``h_lll = (1 − l²) r_l + 3 l r_l² − 2 r_l³``."""
    fu, fl = np.isfinite(u), np.isfinite(low)
    uu = np.where(fu, u, 0.0)
    ll = np.where(fl, low, 0.0)
    logz = _gp._log_diff_ndtr(u, low)
    ru = np.where(fu, elementary.exp(-0.5 * uu * uu - 0.5 * _gp._LOG_2PI - logz), 0.0)
    rl = np.where(fl, elementary.exp(-0.5 * ll * ll - 0.5 * _gp._LOG_2PI - logz), 0.0)
    d = {"u": ru, "l": -rl,
         "uu": -uu * ru - ru * ru, "ul": ru * rl, "ll": ll * rl - rl * rl,
         "uuu": (uu * uu - 1.0) * ru + 3.0 * uu * ru * ru + 2.0 * ru * ru * ru,
         "uul": -uu * ru * rl - 2.0 * ru * ru * rl,
         "ull": 2.0 * ru * rl * rl - ll * ru * rl,
         "lll": (1.0 - ll * ll) * rl + 3.0 * ll * rl * rl - 2.0 * rl * rl * rl}
    return logz, d, uu, ll


def ordinal_terms(f: np.ndarray, levels: np.ndarray, thresholds: np.ndarray, sigma: float):
    """The probit likelihood's derivatives that the evidence's gradient needs, per rating.

    Returns ``log P``, ``g = ∂ log P/∂f``, ``W = −∂² log P/∂f²``, ``d3 = ∂³ log P/∂f³`` and, for the likelihood's
    hyper-parameters ``(b_1 … b_{R−1}, ln σ)`` as the columns, the derivatives of ``log P``, ``g`` and ``W``
    (each ratings × ``R``). With ``u = (b_r − f)/σ`` and ``l = (b_{r−1} − f)/σ``: ``∂/∂f = −(∂_u + ∂_l)/σ``,
    ``∂/∂b_r = ∂_u/σ``, ``∂/∂b_{r−1} = ∂_l/σ`` and ``σ ∂/∂σ = −u ∂_u − l ∂_l`` (on a function of ``u, l`` alone).
    """
    f = np.asarray(f, dtype=np.float64)
    levels = np.asarray(levels, dtype=np.int64)
    n_thr = len(thresholds)
    b = np.concatenate([[-np.inf], thresholds, [np.inf]])
    logz, h, u, low = _h_derivatives((b[levels + 1] - f) / sigma, (b[levels] - f) / sigma)
    s, s2, s3 = sigma, sigma * sigma, sigma * sigma * sigma
    g = -(h["u"] + h["l"]) / s
    W = -(h["uu"] + 2.0 * h["ul"] + h["ll"]) / s2
    d3 = -(h["uuu"] + 3.0 * h["uul"] + 3.0 * h["ull"] + h["lll"]) / s3
    n = len(f)
    dlp, dg, dW = np.zeros((n, n_thr + 1)), np.zeros((n, n_thr + 1)), np.zeros((n, n_thr + 1))
    rows = np.arange(n)
    up = levels < n_thr            # the rating's upper threshold is b[levels] (0-based among the finite ones)
    lo = levels > 0                # its lower one is b[levels − 1]
    dlp[rows[up], levels[up]] += h["u"][up] / s
    dg[rows[up], levels[up]] += -(h["uu"] + h["ul"])[up] / s2
    dW[rows[up], levels[up]] += -(h["uuu"] + 2.0 * h["uul"] + h["ull"])[up] / s3
    dlp[rows[lo], levels[lo] - 1] += h["l"][lo] / s
    dg[rows[lo], levels[lo] - 1] += -(h["ul"] + h["ll"])[lo] / s2
    dW[rows[lo], levels[lo] - 1] += -(h["uul"] + 2.0 * h["ull"] + h["lll"])[lo] / s3
    # ln σ: σ∂σ of F(u, l)/σ^k is −(k F + u F_u + l F_l)/σ^k
    dlp[:, -1] = -(u * h["u"] + low * h["l"])
    su, sl = h["uu"] + h["ul"], h["ul"] + h["ll"]
    dg[:, -1] = (h["u"] + h["l"]) / s + (u * su + low * sl) / s
    S2 = h["uu"] + 2.0 * h["ul"] + h["ll"]
    dW[:, -1] = 2.0 * S2 / s2 + (u * (h["uuu"] + 2.0 * h["uul"] + h["ull"])
                                 + low * (h["uul"] + 2.0 * h["ull"] + h["lll"])) / s2
    return logz, g, np.maximum(W, 0.0), d3, dlp, dg, dW


# ---------------------------------------------------------------------------------------------- one user
def _kernel_contractions(P: np.ndarray, X: np.ndarray | None, kappa: np.ndarray, Kii: np.ndarray) -> np.ndarray:
    """``Σ_ij P_ij ∂K_ij/∂ln κ_ς`` for each ``ς`` (``P`` symmetric): ``∂K/∂ln κ_ς = −½ κ_ς D²_ς ⊙ K``, so the sum is
    ``−κ_ς (Σ_i x_iς² (Q1)_i − x_ςᵀ Q x_ς)`` with ``Q = P ⊙ K``; one-hot ids (``X = None``) have ``D² = 2`` off the
    diagonal."""
    Q = P * Kii
    if X is None:
        return np.array([-float(kappa[0]) * (float(np.sum(Q)) - float(np.sum(np.diag(Q))))])
    rs = np.sum(Q, axis=1)
    QX = gk.matmul(Q, X)
    t = np.sum(X * X * rs[:, None], axis=0) - np.sum(X * QX, axis=0)
    return -kappa * t


def _kernel_times(v: np.ndarray, X: np.ndarray | None, kappa: np.ndarray, Kii: np.ndarray) -> np.ndarray:
    """The columns ``(∂K/∂ln κ_ς) v`` (items × features)."""
    Kv = dense.matvec(Kii, v)
    if X is None:
        return (-float(kappa[0]) * (Kv - np.diag(Kii) * v))[:, None]
    KXv = gk.matmul(Kii, np.ascontiguousarray(X * v[:, None]))
    KX2v = gk.matmul(Kii, np.ascontiguousarray(X * X * v[:, None]))
    return -0.5 * kappa[None, :] * (X * X * Kv[:, None] - 2.0 * X * KXv + KX2v)


def regression_evidence(Kii: np.ndarray, X: np.ndarray | None, kappa: np.ndarray, r: np.ndarray, noise: float):
    """One user's exact log evidence ``log N(r; 0, K_II + σ²I)`` (``r`` the ratings less the prior mean) and its
    gradient in ``(ln κ_ς …, ln signal, ln σ²)``."""
    n = len(r)
    L = _gp._chol(Kii + noise * np.eye(n), "a user's K_II + σ²I")
    alpha = _gp._solve(L, r)
    A = _gp._solve(L, np.eye(n))
    logml = -0.5 * float(np.sum(r * alpha)) - float(np.sum(elementary.log(np.diag(L)))) - 0.5 * n * _gp._LOG_2PI
    P = 0.5 * (alpha[:, None] * alpha[None, :] - A)
    g_kappa = _kernel_contractions(P, X, kappa, Kii)
    g_signal = float(np.sum(P * Kii))
    g_noise = 0.5 * noise * (float(np.sum(alpha * alpha)) - float(np.sum(np.diag(A))))
    return logml, np.concatenate([g_kappa, [g_signal, g_noise]])


def ordinal_evidence(Kii: np.ndarray, X: np.ndarray | None, kappa: np.ndarray, m: np.ndarray, levels: np.ndarray,
                     thresholds: np.ndarray, sigma: float, max_newton: int = 30):
    """One user's Laplace log evidence (see the module) and its gradient in ``(ln κ_ς …, b_1 … b_{R−1}, ln σ)``."""
    n = len(levels)
    a, R, logml, f = _gp.ordinal_laplace_user(Kii, m, np.arange(n), levels, thresholds, sigma,
                                              max_newton=max_newton, tol=1e-12)
    _, g, _, d3, dlp, dg, dW = ordinal_terms(f, levels, thresholds, sigma)
    KR = gk.matmul(Kii, np.ascontiguousarray(R))
    diag_sigma = np.diag(Kii) - np.sum(KR * Kii, axis=1)      # diag(K − K R K)
    s = 0.5 * diag_sigma * d3
    # kernel hyper-parameters: explicit ½ aᵀCa − ½ tr(RC), implicit ((I − RK) s)ᵀ C a
    g_kappa = _kernel_contractions(0.5 * (a[:, None] * a[None, :] - R), X, kappa, Kii)
    w = s - dense.matvec(np.ascontiguousarray(R), dense.matvec(Kii, s))
    g_kappa = g_kappa + np.sum(w[:, None] * _kernel_times(a, X, kappa, Kii), axis=0)
    # likelihood hyper-parameters: explicit Σ ∂log P − ½ Σ diag(Σ) ∂W, implicit (Σ s)ᵀ ∂g
    Ks = dense.matvec(Kii, s)
    sig_s = Ks - dense.matvec(Kii, dense.matvec(np.ascontiguousarray(R), Ks))
    g_lik = np.sum(dlp, axis=0) - 0.5 * np.sum(diag_sigma[:, None] * dW, axis=0) + np.sum(sig_s[:, None] * dg, axis=0)
    return logml, np.concatenate([g_kappa, g_lik])


# ---------------------------------------------------------------------------------------------- all users
class Hyper:
    """The vector ``θ`` the ascent moves and what it stands for.

    Regression: ``(ln κ_ς …, ln signal, ln σ²)``. Ordinal: ``(ln κ_ς …, b_1, ln Δ_2 … ln Δ_{R−1}, ln σ)`` at unit
    signal, Chu & Ghahramani's parametrisation.
    """

    def __init__(self, n_kappa: int, ordinal: bool, n_thresholds: int = 0):
        self.n_kappa, self.ordinal, self.n_thr = n_kappa, ordinal, n_thresholds

    def pack(self, kappa, signal, noise, thresholds=None) -> np.ndarray:
        kappa = np.broadcast_to(np.asarray(kappa, dtype=np.float64), (self.n_kappa,))
        head = elementary.log(np.ascontiguousarray(kappa))
        if not self.ordinal:
            return np.concatenate([head, elementary.log(np.array([signal, noise], dtype=np.float64))])
        thr = np.asarray(thresholds, dtype=np.float64)
        gaps = elementary.log(np.ascontiguousarray(np.diff(thr))) if len(thr) > 1 else np.zeros(0)
        return np.concatenate([head, thr[:1], gaps, elementary.log(np.array([math.sqrt(noise)]))])

    def unpack(self, theta: np.ndarray):
        """``(κ, signal, noise, thresholds)``; ``noise`` is ``σ²`` in both forms."""
        e = elementary.exp(np.ascontiguousarray(theta))
        kappa = e[:self.n_kappa]
        if not self.ordinal:
            return kappa, float(e[self.n_kappa]), float(e[self.n_kappa + 1]), np.zeros(0)
        k = self.n_kappa
        thr = np.concatenate([theta[k:k + 1], e[k + 1:k + self.n_thr]])
        thr = np.cumsum(thr)
        sigma = float(e[-1])
        return kappa, 1.0, sigma * sigma, thr

    def chain(self, theta: np.ndarray, grad_b: np.ndarray) -> np.ndarray:
        """The ordinal gradient in ``(ln κ, b_1 … b_{R−1}, ln σ)`` carried to ``θ``'s ``ln Δ_j`` (``∂b_k/∂ln Δ_j =
        Δ_j`` for ``k ≥ j``)."""
        k = self.n_kappa
        out = np.array(grad_b, copy=True)
        gb = grad_b[k:k + self.n_thr]
        tail = np.cumsum(gb[::-1])[::-1]          # Σ_{k ≥ j} ∂/∂b_k
        gaps = elementary.exp(np.ascontiguousarray(theta[k + 1:k + self.n_thr]))
        out[k + 1:k + self.n_thr] = gaps * tail[1:]
        out[k] = tail[0]
        return out


def total_evidence(theta: np.ndarray, hyper: Hyper, X: np.ndarray | None, n_items: int, users, jitter: float,
                   max_newton: int = 30):
    """The summed log evidence of ``users`` (a list of ``(items, targets, prior mean)``) and its gradient in ``θ``;
    ``(−inf, None)`` where a factorisation fails (the ascent then steps back)."""
    kappa, signal, noise, thr = hyper.unpack(theta)
    try:
        K = ard_kernel(X, n_items, kappa, signal, jitter)
        total, grad = 0.0, np.zeros(len(theta))
        for its, targets, mean in users:
            Kii = np.ascontiguousarray(K[np.ix_(its, its)])
            Xi = None if X is None else np.ascontiguousarray(X[its])
            if hyper.ordinal:
                lm, gr = ordinal_evidence(Kii, Xi, kappa, np.full(len(its), mean), targets, thr,
                                          math.sqrt(noise), max_newton)
            else:
                lm, gr = regression_evidence(Kii, Xi, kappa, targets - mean, noise)
            total += lm
            grad += gr
    except ModelFitError:
        return -math.inf, None
    if not (math.isfinite(total) and np.all(np.isfinite(grad))):
        return -math.inf, None
    return total, (hyper.chain(theta, grad) if hyper.ordinal else grad)


def maximise(fun, theta0: np.ndarray, max_iter: int = 50, tol: float = 1e-6, memory: int = 10, max_step: float = 2.0):
    """Maximise ``fun(θ) → (value, gradient)`` by limited-memory BFGS with a backtracking (Armijo) line search.

    No step moves a coordinate by more than ``max_step`` (the coordinates are logarithms and thresholds); the ascent
    stops after ``max_iter`` iterations, when an iteration raises the value by less than ``tol`` relative to it, or
    when no step along the direction raises it. Dot products are NumPy's pairwise sums, not BLAS. Returns
    ``(θ, value, iterations)``.
    """
    theta = np.array(theta0, dtype=np.float64, copy=True)
    val, grad = fun(theta)
    if grad is None:
        raise ModelFitError("the evidence could not be evaluated at the starting hyper-parameters")
    S, Y = [], []
    it = 0
    for it in range(1, max_iter + 1):
        q = -grad                                     # minimise −value
        alphas = []
        for s, y in zip(reversed(S), reversed(Y)):
            rho = 1.0 / float(np.sum(y * s))
            al = rho * float(np.sum(s * q))
            alphas.append((rho, al))
            q = q - al * y
        if S:
            q = q * (float(np.sum(S[-1] * Y[-1])) / float(np.sum(Y[-1] * Y[-1])))
        for (s, y), (rho, al) in zip(zip(S, Y), reversed(alphas)):
            be = rho * float(np.sum(y * q))
            q = q + (al - be) * s
        d = -q                                        # ascent direction
        slope = float(np.sum(d * grad))
        if not slope > 0:
            d, slope, S, Y = grad.copy(), float(np.sum(grad * grad)), [], []
        biggest = float(np.max(np.abs(d)))
        t = min(1.0, max_step / biggest) if biggest > 0 else 1.0
        for _ in range(30):
            new_val, new_grad = fun(theta + t * d)
            if new_grad is not None and new_val >= val + 1e-4 * t * slope and new_val > val:
                break
            t *= 0.5
        else:
            break
        step, change = t * d, new_val - val
        y = grad - new_grad                           # gradient of −value: new − old
        theta, val, grad = theta + step, new_val, new_grad
        if float(np.sum(y * step)) > 1e-12:
            S.append(step)
            Y.append(y)
            if len(S) > memory:
                S.pop(0)
                Y.pop(0)
        if change <= tol * max(1.0, abs(val)):
            break
    return theta, val, it
