"""MMMF: maximum-margin matrix factorisation in its fast, factored form (Rennie & Srebro, ICML 2005).

Srebro, Rennie and Jaakkola (NIPS 2004) regularise a rating matrix ``X`` by its trace norm
``‖X‖_Σ = min_{X = U Vᵀ} (‖U‖²_F + ‖V‖²_F) / 2`` and fit ordinal ratings with per-user thresholds and a hinge
loss; Rennie and Srebro (2005, §§3–4) make it fast by optimising the factors ``U`` (users × k), ``V`` (items × k) and
the thresholds ``θ`` directly, with a smooth hinge and conjugate gradients. With ratings mapped to levels
``1 … R`` (the sorted distinct training ratings) and ``R − 1`` thresholds per user, the objective (the
all-threshold loss of their §4) is

.. math::

    J(U, V, θ) = \\sum_{r=1}^{R-1} \\sum_{(i, j) \\in S} h\\bigl(T^r_{ij} (θ_{ir} - U_i V_j^\\top)\\bigr)
                 + \\frac{λ}{2} \\bigl(\\|U\\|_F^2 + \\|V\\|_F^2\\bigr),
    \\qquad T^r_{ij} = \\begin{cases} +1 & r \\ge Y_{ij} \\\\ -1 & r < Y_{ij} \\end{cases}

with the smooth hinge ``h(z) = 1/2 − z`` (z ≤ 0), ``(1 − z)²/2`` (0 < z < 1), 0 (z ≥ 1). Its gradients are

.. math::

    \\frac{\\partial J}{\\partial U_i} = λ U_i - \\sum_{r, j} T^r_{ij} h'(z^r_{ij}) V_j, \\qquad
    \\frac{\\partial J}{\\partial V_j} = λ V_j - \\sum_{r, i} T^r_{ij} h'(z^r_{ij}) U_i, \\qquad
    \\frac{\\partial J}{\\partial θ_{ir}} = \\sum_j T^r_{ij} h'(z^r_{ij}).

One iteration is one Polak–Ribière conjugate-gradient step over ``(U, V, θ)`` with a backtracking (Armijo)
line search. A user's items are ranked by ``x_ij = U_i V_jᵀ`` (the thresholds are monotone, so they do not change a
user's order). CofiRank's Tables 2 and 3 (Weimer et al., NIPS 2007, §6) ran the authors' code with k = 100 and
λ = 1/1.6 on MovieLens: the ``paper`` preset here.

Beyond the publications, a choice of this library: a fixed item offset ``o_j = β·(m̃_j − μ)``
(:mod:`cofiviz.models.prior`, ``item_prior`` = β; 0: the published model) may be added to every ``x``,
``x_ij = U_i V_jᵀ + o_j``; it is learned by no step and carries no penalty. With ``rank = 0`` the model is that
offset alone (the thresholds still fitted), and it ranks each user's items as the damped item mean does.

Defaults. β = 2 and λ = 20, not the published k = 100, λ = 1/1.6 without an offset (``from_preset("paper")``,
which CofiRank's tables run): those rank far below the damped item mean with 10 to 50 training ratings per user;
these were chosen on the validation ratings of MovieLens 100K's LCR-protocol splits (N = 10, 20, 50, three seeds
each), where they are level with it (``benchmarks/bench_tuning_goal.py --mode defaults``).
"""

from __future__ import annotations

import numpy as np
import param

from ..datasets import tiny
from ..util.errors import DataError, ModelFitError
from ..ratings import Ratings
from . import _mmmf_kernels as mk
from .base import Model
from .prior import ItemPriorParams
from ..search.space import IntLogUniform, LogUniform

__all__ = ["MMMF", "warmup"]

#: Armijo's sufficient-decrease constant and the most halvings a line search tries
_ARMIJO = 1e-4
_MAX_HALVINGS = 40
#: the convergence test compares the objective with its value this many iterations earlier (a single
#: conjugate-gradient step may make almost no progress before a large one)
_WINDOW = 10


class _Problem:
    """The objective of a fit (every user, ``U``, ``V`` and ``θ`` free) or of a fold-in (the users of
    ``active``, their ``U`` rows and ``θ`` free, ``V`` fixed), on one flat parameter vector."""

    def __init__(self, train: Ratings, levels: np.ndarray, n_users: int, n_items: int, k: int, n_thr: int,
                 reg: float, offset: np.ndarray, active: np.ndarray | None = None, V: np.ndarray | None = None):
        self.indptr = train.indptr
        self.items = np.ascontiguousarray(train.items, dtype=np.int64)
        self.users = np.ascontiguousarray(train.users, dtype=np.int64)
        self.levels = np.ascontiguousarray(levels, dtype=np.int64)
        self.iptr, self.ipos = train.item_index()
        self.n_users, self.n_items, self.k, self.n_thr, self.reg = n_users, n_items, k, n_thr, float(reg)
        self.fold_in = active is not None
        self.active = np.ones(n_users, dtype=np.bool_) if active is None else np.asarray(active, dtype=np.bool_)
        self.V_fixed = V
        self.offset = np.ascontiguousarray(offset, dtype=np.float64)
        self.dx = np.empty(len(train))

    def split(self, w: np.ndarray):
        nu, ni, k, t = self.n_users, self.n_items, self.k, self.n_thr
        U = w[:nu * k].reshape(nu, k)
        if self.fold_in:
            return U, self.V_fixed, w[nu * k:].reshape(nu, t)
        V = w[nu * k:(nu + ni) * k].reshape(ni, k)
        return U, V, w[(nu + ni) * k:].reshape(nu, t)

    def __call__(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        U, V, theta = self.split(w)
        g = np.empty_like(w)
        gU, gV, gT = self.split(g)
        f = mk.objective(U, V, self.offset, theta, self.indptr, self.items, self.levels, self.reg, self.active, gU, gT, self.dx)
        if not self.fold_in:
            f += mk.item_gradient(U, V, self.users, self.iptr, self.ipos, self.dx, self.reg, gV)
        return float(f), g


def _dot(a: np.ndarray, b: np.ndarray, scratch: np.ndarray | None = None) -> float:
    """``a · b`` by NumPy's pairwise sum, not BLAS: the same bits whatever the BLAS thread count. The products go
    into ``scratch`` when given (the same values, so the same sum), instead of a new array."""
    return float(np.sum(np.multiply(a, b, out=scratch)))


class _ConjugateGradient:
    """Polak–Ribière (PR+) conjugate gradients with a backtracking line search, one step per call.

    A step computes its trial points and the products of its dot products into two buffers of its own, so that
    on a long parameter vector it holds a fixed few copies of it (the point, the gradient, the direction, the
    trial point and its gradient, the products), which it frees when it returns; each value is the one the plain
    expressions give (``w + t·d``, ``β·d − g``, ``Σ a·b``)."""

    def __init__(self, problem: _Problem, w: np.ndarray):
        self.problem = problem
        self.w = w
        self.f, self.g = problem(w)
        self.d = -self.g
        gg = _dot(self.g, self.g)
        self.t = 1.0 / np.sqrt(gg) if gg > 0 else 1.0

    def step(self) -> float:
        """One iteration; when the line search finds no decrease along the conjugate direction it restarts
        along the negative gradient, and when that fails too the point is (numerically) stationary."""
        scratch, w_new = np.empty_like(self.w), np.empty_like(self.w)
        for attempt in range(2):
            if attempt == 1 or _dot(self.g, self.d, scratch) >= 0:  # restart: steepest descent
                self.d = -self.g
            slope = _dot(self.g, self.d, scratch)
            if slope == 0.0:
                return self.f
            t = 2.0 * self.t  # first trial: twice the last accepted step, halved until Armijo's condition holds
            for _ in range(_MAX_HALVINGS):
                np.add(self.w, np.multiply(self.d, t, out=w_new), out=w_new)
                f_new, g_new = self.problem(w_new)
                if np.isfinite(f_new) and f_new <= self.f + _ARMIJO * t * slope:
                    beta = max(0.0, _dot(g_new, np.subtract(g_new, self.g, out=scratch), scratch)
                               / _dot(self.g, self.g, scratch))
                    self.w, self.f, self.g, self.t = w_new, f_new, g_new, t
                    np.subtract(np.multiply(self.d, beta, out=self.d), g_new, out=self.d)
                    return self.f
                t *= 0.5
        return self.f


class MMMF(Model, ItemPriorParams):
    """Fast maximum-margin matrix factorisation: all-threshold smooth hinge, trace-norm penalty, conjugate gradients.

    Parameters
    ----------
    rank : int
        k, the number of columns of ``U`` and ``V`` (CofiRank's experiments: 100; 0: no factors, the item offset
        alone).
    reg : float
        λ of the penalty ``λ/2 (‖U‖²_F + ‖V‖²_F)`` (default 20, see the module notes; CofiRank's experiments on
        MovieLens: 1/1.6).
    init_scale : float
        Initial factors N(0, init_scale²); the thresholds start evenly spaced, one apart, around 0.
    item_prior, prior_damping : float
        β and the damping of the fixed item offset ``β·(m̃_j − μ)`` added to every ``x`` (module notes; 0: the
        published model).
    tol : float
        Stop when the last ten iterations lowered the objective by less than ``10 × tol`` times its value
        (0: never).
    max_iter : int
        Conjugate-gradient iterations at most.
    seed : int
        Seed of the initial factors.
    """

    search_space = {"rank": IntLogUniform(5, 100), "reg": LogUniform(0.05, 10.0)}
    item_mean_setting = {"rank": 0, "item_prior": 1.0}
    presets = {"paper": {"rank": 100, "reg": 1 / 1.6, "item_prior": 0.0}}
    divergence_hint = (("reg", "raise"), ("init_scale", "lower"))

    rank = param.Integer(default=100, bounds=(0, 1000), doc="k, the rank of U and V (0: the item offset alone).")
    item_prior = param.Number(default=2.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: the published model).")
    reg = param.Number(default=20.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                       doc="λ of the trace-norm penalty λ/2 (‖U‖² + ‖V‖²).")
    init_scale = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                              doc="Standard deviation of the initial factors.")
    tol = param.Number(default=1e-5, bounds=(0.0, None), doc="Relative decrease of the objective that stops the fit.")

    # ------------------------------------------------------------------ fitting
    def _levels(self, ratings: np.ndarray) -> np.ndarray:
        """The 1-based level of each rating among :attr:`values_` (a value between two levels takes the nearer)."""
        v = self.values_
        pos = np.clip(np.searchsorted(v, ratings), 1, len(v) - 1) if len(v) > 1 else np.zeros(len(ratings), int)
        if len(v) > 1:
            nearer_left = np.abs(ratings - v[pos - 1]) <= np.abs(ratings - v[pos])
            pos = np.where(nearer_left, pos - 1, pos)
        return pos.astype(np.int64) + 1

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self.values_ = np.unique(train.ratings).astype(np.float64)
        if len(self.values_) < 2:
            raise DataError(f"MMMF needs at least two distinct rating values to place its thresholds, got only "
                            f"{self.values_.tolist()}")
        k, n_thr = int(self.rank), len(self.values_) - 1
        U = rng.normal(0.0, self.init_scale, (train.n_users, k))
        V = rng.normal(0.0, self.init_scale, (train.n_items, k))
        theta = np.tile(np.arange(n_thr, dtype=np.float64) - (n_thr - 1) / 2.0, (train.n_users, 1))
        self.prior_ = self.item_prior_offsets(train)
        problem = _Problem(train, self._levels(train.ratings), train.n_users, train.n_items, k, n_thr, self.reg,
                           self.prior_)
        self._cg = _ConjugateGradient(problem, np.concatenate([U.ravel(), V.ravel(), theta.ravel()]))
        self._objective = [self._cg.f]
        self._publish()

    def _publish(self) -> None:
        U, V, theta = self._cg.problem.split(self._cg.w)
        self.U_, self.V_, self.theta_ = U, V, theta

    def _step(self, iteration: int) -> float:
        f = self._cg.step()
        self._objective.append(f)
        self._publish()
        return f

    def _converged(self, iteration: int) -> bool:
        if self.tol <= 0 or len(self._objective) <= _WINDOW:
            return False
        before, now = self._objective[-_WINDOW - 1], self._objective[-1]
        return before - now <= self.tol * _WINDOW * abs(before)

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        out = np.empty(len(users))
        mk.dots(self.U_, self.V_, self.prior_, np.ascontiguousarray(users, dtype=np.int64),
                np.ascontiguousarray(items, dtype=np.int64), out)
        return out

    def predict_level(self, users, items) -> np.ndarray:
        """The predicted rating of (user, item) index pairs: the level whose thresholds bracket ``U_i V_jᵀ``
        (one plus the number of the user's thresholds below it), as a rating value."""
        self._require_fitted()
        users = np.asarray(users, dtype=np.int64)
        x = self.score(users, items)
        below = (self.theta_[users] < x[:, None]).sum(axis=1)
        return self.values_[below]

    # ------------------------------------------------------------------ strong generalization
    def fold_in(self, given: Ratings, seed: int | None = None, max_iter: int | None = None) -> "MMMF":
        """Fit the factors and thresholds of the users in ``given`` with ``V`` frozen (strong generalization).

        Each user with ratings in ``given`` gets fresh factors (N(0, init_scale²), seeded by ``seed``, default the
        model's seed) and evenly spaced thresholds, then conjugate gradients on the objective restricted to those
        users, for ``max_iter`` iterations (default the model's) or until the relative decrease is below ``tol``.
        Other users are untouched. :func:`cofiviz.evaluate` calls this for a split with a ``given`` part.
        """
        self._check_given(given)
        active = given.user_counts() > 0
        if not active.any():
            return self
        rng = np.random.default_rng(self.seed if seed is None else seed)
        k, n_thr = self.U_.shape[1], self.theta_.shape[1]
        U = np.array(self.U_, copy=True)
        theta = np.array(self.theta_, copy=True)
        U[active] = rng.normal(0.0, self.init_scale, (int(active.sum()), k))
        theta[active] = np.arange(n_thr, dtype=np.float64) - (n_thr - 1) / 2.0
        problem = _Problem(given, self._levels(given.ratings), len(U), len(self.V_), k, n_thr, self.reg,
                           self.prior_, active=active, V=np.ascontiguousarray(self.V_))
        cg = _ConjugateGradient(problem, np.concatenate([U.ravel(), theta.ravel()]))
        trace = [cg.f]
        for _ in range(int(self.max_iter if max_iter is None else max_iter)):
            trace.append(cg.step())
            if self.tol > 0 and len(trace) > _WINDOW and \
                    trace[-_WINDOW - 1] - trace[-1] <= self.tol * _WINDOW * abs(trace[-_WINDOW - 1]):
                break
        last = trace[-1]
        U_new, _, theta_new = problem.split(cg.w)
        if not (np.isfinite(last) and np.all(np.isfinite(U_new[active]))):
            raise ModelFitError("MMMF.fold_in: the fold-in produced non-finite factors; " + self.divergence_advice())
        self.U_, self.theta_ = np.ascontiguousarray(U_new), np.ascontiguousarray(theta_new)
        self.folded_in_ = {"n_users": int(active.sum()), "objective": float(last)}
        return self

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, np.ndarray]:
        state = {"U": self.U_, "V": self.V_, "theta": self.theta_, "values": self.values_}
        if self.item_prior != 0.0:
            state["prior"] = self.prior_
        return state

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        U = np.asarray(state["U"], dtype=np.float64)
        V = np.asarray(state["V"], dtype=np.float64)
        theta = np.asarray(state["theta"], dtype=np.float64)
        values = np.asarray(state["values"], dtype=np.float64)
        if U.ndim != 2 or V.ndim != 2 or U.shape[1] != V.shape[1] or theta.shape != (U.shape[0], len(values) - 1):
            raise DataError(f"MMMF state needs U, V with as many columns and theta of shape (users, levels - 1), got "
                            f"U {U.shape}, V {V.shape}, theta {theta.shape}, {len(values)} levels")
        self.U_, self.V_ = np.ascontiguousarray(U), np.ascontiguousarray(V)
        self.theta_, self.values_ = np.ascontiguousarray(theta), np.ascontiguousarray(values)
        self.prior_ = (np.ascontiguousarray(state["prior"], dtype=np.float64) if self.item_prior != 0.0
                       else np.zeros(V.shape[0]))

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        r = int(self.rank)
        spec = {"U": (n_users, r), "V": (n_items, r), "theta": (n_users, None), "values": (None,)}
        if self.item_prior != 0.0:
            spec["prior"] = (n_items,)
        return spec


def warmup() -> None:
    """Compile (or load from cache) MMMF's kernels on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    train = tiny()
    model = MMMF(rank=2, max_iter=2).fit(train)
    model.score(np.arange(2), np.arange(2))
