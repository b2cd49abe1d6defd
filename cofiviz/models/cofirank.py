"""CofiRank: maximum-margin matrix factorisation for collaborative ranking.

Weimer, Karatzoglou, Le, Smola, "CofiRank — Maximum Margin Matrix Factorization for Collaborative
Ranking", NIPS 2007 (``papers/001``; the extended copy ``papers/000`` adds appendix A's losses).
Scores are ``F = U Mᵀ`` with ``rank`` latent dimensions; training minimises

    Σ_u l(F_u, y_u) + (λ/2) (‖U‖² + ‖M‖²)                                                    (8)

by alternating minimisation: for fixed ``M`` each user's row is an independent regularised convex
problem, solved by its own BMRM in parallel over users; for fixed ``U`` one BMRM over all of ``M``
(Algorithm 1; :mod:`cofiviz.solvers.bmrm`). One outer iteration (what ``fit`` reports to its
callbacks) is one user phase followed by one item phase; the reported loss is objective (8) after it.

Losses (:mod:`cofiviz.losses`): ``ndcg`` — the structured NDCG@k bound of eq (4), solved by linear
assignment; ``ordinal`` — Algorithm 2; ``preference`` — Algorithm 3 on all pairs of different
ratings; ``regression`` — ½ squared error; ``eru`` — eq (4) with the NERU regret of appendix A.4.

What follows the authors' C++ code (CofiRank 0.1) rather than an unstated choice
-------------------------------------------------------------------------------
- ``c_p = (p + 1)^c_exponent`` over the whole training list with 0-based ``p``; ``k`` truncates the
  gains only.
- BMRM: ≤ ``bmrm_max_planes`` = 100 planes; stops from the second oracle call on once the gap is
  < ``bmrm_tol`` = 0.01 or < ``bmrm_rel_tol`` = 2 % of the objective, or after ``bmrm_max_iter`` = 70
  oracle calls; each call warm-starts from the current factors and returns the best iterate after
  the start. The outer loop runs ``max_iter`` = 31 iterations without a progress test.
- Initial factors uniform on [0, 1] (seeded by ``seed``); offsets are augmented factor columns.
- ``reference_order="item_id"`` reproduces the code's ⟨c, f⟩ reference order (stored item order);
  the default ``"rating"`` is the paper's intent (items sorted by rating).

At the paper's λ = 10 with the NDCG loss the factors shrink geometrically (the optimum of each
phase is proportional to the other factor divided by λ); rankings survive because only the
direction of each score vector matters. Scores can then be ~1e-60; they stay representable, and
the loss's assignment step then breaks ties between equally rated items by the scores as exact
arithmetic would (see :func:`cofiviz.losses.structured.structured_loss_grad`), where a
floating-point assignment solver — the original code's — no longer sees the scores at all.

Additions beyond the paper and the original code: ``reference_order="tie_average"`` (equally
rated items share one reference weight), ``bias_reg`` (a separate λ for the offsets), and
:meth:`CofiRank.fold_in` for strong generalization. The user phase runs in parallel over users
(numba ``prange``), the item phase's loss oracle in parallel over users and then items.
"""

from __future__ import annotations

import time

import numpy as np
import param

from ..errors import DataError, ModelFitError
from ..losses.collab import LOSS_NAMES, build_loss_data
from ..losses.pairwise import PAIR_COSTS
from ..ratings import Ratings
from ..solvers.alternating import item_index, item_oracle, user_phase
from ..solvers.bmrm import bmrm
from .base import Model

__all__ = ["CofiRank", "warmup"]


def _sq_norm(X: np.ndarray, free: np.ndarray) -> float:
    """``‖X[:, free]‖²`` without copying ``X`` (it can be hundreds of MB)."""
    total = float(np.einsum("ij,ij->", X, X))
    for t in np.setdiff1d(np.arange(X.shape[1]), free):
        total -= float(X[:, t] @ X[:, t])
    return total


class CofiRank(Model):
    """CofiRank (Weimer et al. 2007): F = U Mᵀ trained on a ranking loss by alternating BMRM.

    Parameters
    ----------
    rank : int
        Latent dimension ``d`` (paper: 100).
    reg : float
        λ of objective (8), for ``U`` and ``M`` alike (paper: 10).
    k : int
        NDCG (ERU) truncation of the structured losses (paper: 10).
    loss : {"ndcg", "ordinal", "preference", "regression", "eru"}
    offsets : bool
        Learn a user and an item bias (augmented factor columns, regularised like the factors).
    bias_reg : float or None
        λ of the biases when ``offsets`` is on (default ``None``: ``reg``, as the original code).
    c_exponent : float
        Exponent ``e < 0`` of ``c_p = (p + 1)^e`` in ⟨c, f_π⟩ (paper: −0.25).
    reference_order : {"rating", "item_id", "tie_average"}
        Reference order of ⟨c, f⟩: items by rating, ties in item order (paper); stored item order
        (original code); or by rating with equally rated items sharing the mean weight of their
        positions (convex, still an upper bound, and indifferent to the order of tied items).
    pair_cost, normalize_pairs
        Pair costs ``C(y_i, y_j)`` and the ``1/M`` normalisation of the ordinal and preference
        losses (``"difference"`` with ``normalize_pairs=False`` is the original code's ordinal loss).
    eru_neutral, eru_halflife
        ERU's neutral vote ``d`` and viewing half-life ``α``.
    bmrm_tol, bmrm_rel_tol, bmrm_max_iter, bmrm_max_planes
        BMRM stopping rule and bundle size, per user problem and for the item phase.
    max_iter : int
        Outer (user phase + item phase) iterations (original code: 31).

    Attributes
    ----------
    U_, M_ : ndarray
        Augmented user and item factors (``rank`` columns, plus the user- and item-bias columns
        with ``offsets``); ``score(u, i) = U_[u] · M_[i]``.
    phase_log_ : list of dict
        Per outer iteration: objective, each phase's loss, BMRM calls (mean and max per user in
        the user phase; the item phase's count and final gap), seconds per phase, ‖U‖ and ‖M‖.
    """

    rank = param.Integer(default=100, bounds=(1, 10_000), doc="Latent dimension d.")
    reg = param.Number(default=10.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                       doc="Regularisation λ of U and M.")
    k = param.Integer(default=10, bounds=(1, None), doc="Truncation of the NDCG / ERU loss.")
    loss = param.Selector(default="ndcg", objects=list(LOSS_NAMES), doc="Training loss.")
    offsets = param.Boolean(default=False, doc="Learn user and item biases.")
    bias_reg = param.Number(default=None, allow_None=True, bounds=(0.0, None), inclusive_bounds=(False, True),
                            doc="Regularisation of the biases (None: the same as reg).")
    c_exponent = param.Number(default=-0.25, bounds=(None, 0.0), inclusive_bounds=(True, False),
                              doc="Exponent of c_p = (p+1)^e in <c, f_pi>.")
    reference_order = param.Selector(default="rating", objects=["rating", "item_id", "tie_average"],
                                     doc="Reference order of <c, f>: by rating (paper), item id (original code), "
                                         "or by rating with tied items sharing their mean weight.")
    pair_cost = param.Selector(default="uniform", objects=list(PAIR_COSTS),
                               doc="Cost of a mis-ordered pair in the ordinal / preference losses.")
    normalize_pairs = param.Boolean(default=True, doc="Divide pairwise losses by the number of pairs.")
    eru_neutral = param.Number(default=3.0, doc="ERU neutral vote d.")
    eru_halflife = param.Number(default=5.0, bounds=(1.0, None), inclusive_bounds=(False, True),
                                doc="ERU viewing half-life alpha (> 1).")
    bmrm_tol = param.Number(default=0.01, bounds=(0.0, None), doc="BMRM absolute gap tolerance.")
    bmrm_rel_tol = param.Number(default=0.02, bounds=(0.0, None), doc="BMRM relative gap tolerance.")
    bmrm_max_iter = param.Integer(default=70, bounds=(2, None), doc="BMRM oracle calls at most.")
    bmrm_max_planes = param.Integer(default=100, bounds=(2, None), doc="BMRM cutting planes kept at most.")
    max_iter = param.Integer(default=31, bounds=(1, 100_000), doc="Outer iterations (user + item phase).")

    # ------------------------------------------------------------------ layout of the factors
    def _layout(self) -> tuple[int, np.ndarray, np.ndarray]:
        """``(D, free_u, free_m)``: stored columns and the columns each phase learns."""
        d = int(self.rank)
        if not self.offsets:
            cols = np.arange(d, dtype=np.int64)
            return d, cols, cols
        # column d: user bias (learned in U, ones in M); column d+1: item bias (ones in U, learned in M)
        free_u = np.arange(d + 1, dtype=np.int64)
        free_m = np.concatenate([np.arange(d), [d + 1]]).astype(np.int64)
        return d + 2, free_u, free_m

    def _scales(self) -> tuple[np.ndarray, np.ndarray]:
        """Per free column ``sqrt(reg / λ_t)`` of each phase (1 for factors; biases with ``bias_reg``)."""
        _, free_u, free_m = self._layout()
        su, sm = np.ones(len(free_u)), np.ones(len(free_m))
        if self.offsets and self.bias_reg is not None:
            s = float(np.sqrt(self.reg / self.bias_reg))
            su[-1] = sm[-1] = s  # the user-bias column of U, the item-bias column of M
        return su, sm

    def _init_factors(self, n: int, rng: np.random.Generator, side: str) -> np.ndarray:
        D, _, _ = self._layout()
        X = rng.uniform(0.0, 1.0, size=(n, D))
        if self.offsets:
            X[:, self.rank + (1 if side == "user" else 0)] = 1.0
        return X

    def _loss_data(self, ratings: Ratings) -> tuple:
        return build_loss_data(ratings.indptr, ratings.ratings, self.loss, k=self.k, c_exponent=self.c_exponent,
                               reference=self.reference_order, pair_cost=self.pair_cost,
                               normalize_pairs=self.normalize_pairs, eru_neutral=self.eru_neutral,
                               eru_halflife=self.eru_halflife)

    # ------------------------------------------------------------------ contract
    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        _, free_u, free_m = self._layout()
        self.U_ = self._init_factors(train.n_users, rng, "user")
        self.M_ = self._init_factors(train.n_items, rng, "item")
        self._free_u, self._free_m = free_u, free_m
        self._data = self._loss_data(train)
        self._users = np.ascontiguousarray(train.users, dtype=np.int32)  # no copy: Ratings holds int32
        self._items = np.ascontiguousarray(train.items, dtype=np.int32)
        self._item_ptr, self._item_pos = item_index(self._items, train.n_items)
        self._gf = np.empty(len(train))
        self._user_losses = np.empty(train.n_users)
        self.phase_log_: list[dict] = []

    def _run_user_phase(self, data, items, U, M, active=None) -> tuple[float, np.ndarray]:
        losses = np.zeros(U.shape[0])
        iters = np.zeros(U.shape[0], dtype=np.int64)
        if active is None:
            active = np.ones(U.shape[0], dtype=np.bool_)
        user_phase(data, items, U, M, self._free_u, self._scales()[0], active, float(self.reg),
                   float(self.bmrm_tol), float(self.bmrm_rel_tol), int(self.bmrm_max_iter),
                   int(self.bmrm_max_planes), losses, iters)
        return float(losses.sum()), iters

    def _step(self, iteration: int) -> float:
        lam = float(self.reg)
        t0 = time.perf_counter()
        user_loss, iters = self._run_user_phase(self._data, self._items, self.U_, self.M_)
        t1 = time.perf_counter()
        M, fm = self.M_, self._free_m
        G = np.empty((M.shape[0], len(fm)))
        su, sm = self._scales()
        scaled = bool(np.any(sm != 1.0))

        def oracle(z):  # BMRM works on z = M[:, fm] / sm (uniform λ); see user_phase
            M[:, fm] = z * sm if scaled else z
            total = item_oracle(self._data, self._users, self._items, self.U_, M, self._item_ptr, self._item_pos,
                                fm, self._gf, self._user_losses, G)
            if scaled:
                G[:] *= sm
            return total, G

        res = bmrm(oracle, M[:, fm] / sm if scaled else M[:, fm], lam, tol=self.bmrm_tol,
                   rel_tol=self.bmrm_rel_tol, max_iter=self.bmrm_max_iter, max_planes=self.bmrm_max_planes)
        M[:, fm] = res.w * sm if scaled else res.w
        t2 = time.perf_counter()
        sq_u, sq_m = _sq_norm(self.U_, self._free_u), _sq_norm(M, fm)
        reg_u, reg_m = 0.5 * lam * sq_u, 0.5 * lam * sq_m
        if self.offsets and self.bias_reg is not None:  # the bias columns carry bias_reg instead of reg
            d = self.rank
            reg_u += 0.5 * (self.bias_reg - lam) * float(self.U_[:, d] @ self.U_[:, d])
            reg_m += 0.5 * (self.bias_reg - lam) * float(M[:, d + 1] @ M[:, d + 1])
        objective = res.loss + reg_u + reg_m
        active = iters[iters > 0]
        self.phase_log_.append({
            "iteration": iteration, "objective": objective, "user_phase_loss": user_loss,
            "item_phase_loss": res.loss, "user_bmrm_iter_mean": float(active.mean()) if len(active) else 0.0,
            "user_bmrm_iter_max": int(iters.max()) if len(iters) else 0, "item_bmrm_iter": res.n_iter,
            "item_bmrm_gap": res.gap, "user_phase_seconds": t1 - t0, "item_phase_seconds": t2 - t1,
            "norm_U": float(np.sqrt(sq_u)), "norm_M": float(np.sqrt(sq_m))})
        return objective

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return np.einsum("ij,ij->i", self.U_[users], self.M_[items])

    def _state(self) -> dict[str, np.ndarray]:
        return {"U": self.U_, "M": self.M_}

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        D, free_u, free_m = self._layout()
        U, M = np.asarray(state["U"], dtype=np.float64), np.asarray(state["M"], dtype=np.float64)
        if U.ndim != 2 or M.ndim != 2 or U.shape[1] != D or M.shape[1] != D:
            raise DataError(f"CofiRank state must hold U and M with {D} columns (rank {self.rank}, "
                            f"offsets={self.offsets}), got {U.shape} and {M.shape}")
        self.U_, self.M_ = np.array(U), np.array(M)
        self._free_u, self._free_m = free_u, free_m

    # ------------------------------------------------------------------ strong generalization
    def fold_in(self, given: Ratings, seed: int | None = None) -> "CofiRank":
        """Fit the factors of the users in ``given`` with the item factors frozen (strong generalization).

        Each user with ratings in ``given`` gets a fresh row (uniform on [0, 1], seeded by ``seed``,
        default the model's seed) and one user phase — a BMRM per user to the model's tolerances, as
        the original code does for its test users (CofiRank §6, "Strong generalization": "the user
        training procedure is applied to optimize U. M is kept fixed"). Other users are untouched.
        This is what :func:`cofiviz.evaluate` calls for a split with a ``given`` part.

        Parameters
        ----------
        given : Ratings
            The new users' known ratings in the model's index space (``split.given``).
        seed : int, optional

        Returns
        -------
        self
        """
        self._require_fitted()
        if not isinstance(given, Ratings):
            raise DataError(f"given must be a cofiviz.Ratings, got {type(given).__name__}")
        if given.n_users != self.train_.n_users or given.n_items != self.train_.n_items:
            raise DataError(f"given must share the model's index space ({self.train_.n_users} users x "
                            f"{self.train_.n_items} items), got {given.n_users} x {given.n_items}; "
                            "take it from the same Split as the training table")
        active = given.user_counts() > 0
        if not active.any():
            return self
        rng = np.random.default_rng(self.seed if seed is None else seed)
        U = np.array(self.U_, copy=True)
        U[active] = self._init_factors(int(active.sum()), rng, "user")
        data = self._loss_data(given)
        loss, _ = self._run_user_phase(data, np.ascontiguousarray(given.items, dtype=np.int32), U, self.M_, active)
        if not (np.isfinite(loss) and np.all(np.isfinite(U[active]))):
            raise ModelFitError("CofiRank.fold_in: the user phase produced non-finite factors")
        self.U_ = U
        self.folded_in_ = {"n_users": int(active.sum()), "loss": loss}
        return self


def warmup() -> None:
    """Compile (or load from cache) CofiRank's kernels: a 2-iteration fit per loss on a tiny table."""
    users = np.repeat(np.arange(4), 3)
    items = np.array([0, 1, 2, 1, 2, 3, 0, 2, 3, 0, 1, 3])
    ratings = np.array([5, 3, 1, 4, 2, 5, 1, 3, 4, 2, 5, 3], dtype=float)
    train = Ratings(users, items, ratings, user_ids=np.arange(4), item_ids=np.arange(4), scale=(1, 5))
    for loss in LOSS_NAMES:
        m = CofiRank(rank=2, loss=loss, max_iter=1, offsets=loss == "ndcg").fit(train)
        m.score([0, 1], [1, 2])
    m.fold_in(train.take(train.users >= 2))
