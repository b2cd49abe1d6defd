"""The bilinear rank functional with side features (blog post "The rank 1 problem": "Designing the rank functional").

"It is natural to go for a function of the form f(u,i) = W_u'V_i [...] the features don't have to be
discovered if they are available, e.g., user profiles and item content descriptions. Or the features
can be mixed: some are latent (a.k.a. random effects), and some are given (a.k.a. fixed effects). [...]
the user features and item features don't have to stay in the same space. What we need to do is to
build a bilinear functional form f(u,i) = W_u' A V_i [...] A = B'C where the ranks of B and C are small
[...] equivalent to applying linear transforms to the user features and item features so that the
projected features belong to the same space."

cofiviz's model: with ``x_u`` the user's given features (MovieLens 100K: age, gender, occupation) and
``z_i`` the item's (genres, release year), each side's vector is a latent part plus a projection of its
features,

    p_u = U_u + Wᵀ x_u,   q_i = V_i + Hᵀ z_i,   f(u, i) = p_u · q_i + c_i + dᵀ z_i

which is ``w_uᵀ Bᵀ C v_i`` with ``w_u = [e_u; x_u]`` (one-hot id and features), ``B = [U; W]ᵀ`` and
``C = [V; H]ᵀ`` of rank ``rank``, plus item offsets (latent ``c_i`` and a feature part ``dᵀ z_i``).
``features="latent"`` keeps only the one-hot ids (plain factorisation), ``"given"`` only the features
(on a side that has none, the ids), ``"both"`` mixes them.

Training minimises, by full-batch gradient steps (AdaGrad by default), one of

- LCR's pairwise surrogates (``log_m``, ``log_a``, ``exp_m``, ``exp_a``, ``hinge_m``, ``hinge_a``;
  Table 1 of Lee et al. 2014, ties dropped);
- the tie-aware Bradley–Terry extensions ``rao_kupper`` (θ) and ``davidson`` (ν), which use pairs of
  equal ratings as ties (``ties="use"``) or drop them (``ties="drop"``) — Rao & Kupper 1967, Davidson
  1970;
- the listwise ``plackett_luce`` loss of each user's rated list (Luce 1959, Plackett 1975), ties by
  Breslow's or Efron's rule, or — ``pl_ties="partition"`` — the ordered-partition likelihood that
  chooses each group of equal ratings as a whole among every non-empty subset of the items left, a
  subset's potential being the mean of its items' ``e^f`` (the model of the blog post's reference, Tran,
  Phung & Venkatesh, SDM 2011; :mod:`cofiviz.losses.partition`), or — ``pl_ties="partition_product"`` —
  their product;
- the ``smoothed_rank`` loss: one minus the NDCG of the list with each position replaced by the smoothed
  position ``1 + Σ_{j≠i} σ(γ(f_j − f_i))`` of the blog post ("The loss functions"), i.e. ApproxNDCG (Qin,
  Liu & Li 2010; :mod:`cofiviz.losses.smoothed_rank`), scale γ = ``gamma``; non-convex, and flat where
  the pairwise probabilities saturate;

each user's loss divided by its number of pairs (items for the listwise likelihoods; the smoothed NDCG
loss, already normalised by the list's ideal DCG, is not divided), plus
``(λ/2)(‖U‖² + ‖V‖² + ‖W‖² + ‖H‖²) + (λ_b/2)(‖c‖² + ‖d‖²)``. New users (strong generalization) are
folded in by :meth:`Bilinear.fold_in`: their latent part starts at zero — their score is then the
feature-only prediction ``(Wᵀx_u) · q_i`` — and is fitted to the given ratings with the item side
frozen.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import param

from .. import losses
from ..datasets import tiny
from ..util.errors import DataError, ModelFitError
from ..losses.partition import LISTWISE_TIES, listwise_ties_code
from ..losses.surrogates import SURROGATES
from ..ratings import Ratings
from ..solvers import dense
from . import _bilinear_kernels as bk
from . import _local_kernels as lk
from ._local_kernels import apply_adagrad
from .base import Model
from .prior import ItemPriorParams
from ..search.space import Choice, IntLogUniform, LogUniform

__all__ = ["Bilinear", "encode_features", "BILINEAR_LOSSES", "warmup"]

#: Losses the bilinear model trains with (``--set loss=...``).
BILINEAR_LOSSES = tuple(SURROGATES) + ("rao_kupper", "davidson", "plackett_luce", "smoothed_rank")

#: Columns of a side table never used as features by ``"auto"`` (ids and free text).
_SKIP = {"user", "item", "title", "zip", "genres", "name", "id"}


def encode_features(info: pd.DataFrame | None, spec: str = "auto", bins: int = 5,
                    label: str = "user_features") -> tuple[np.ndarray, list[str]]:
    """Encode a side table (one row per index) as a dense 0/1 feature matrix.

    Parameters
    ----------
    info : pandas.DataFrame or None
        ``Ratings.user_info`` / ``item_info``.
    spec : str
        ``"auto"`` (every usable column), ``"none"``, or column names separated by ``,`` or ``+``
        (``+`` on the command line, where ``--set KEY=A,B`` means a search over A and B).
    bins : int
        Numeric columns with more than ``bins`` distinct values are cut into ``bins`` quantile bins.
    label : str
        The parameter named in error messages.

    Returns
    -------
    (numpy.ndarray, list of str)
        ``(n_rows × n_features)`` float64 matrix and the feature names (``column=value``). Booleans are
        one column; categories and bins one column per value; a missing value has all zeros.

    Raises
    ------
    DataError
        ``spec`` names a column the table does not have.
    """
    spec = (spec or "none").strip()
    if info is None or spec.lower() == "none":
        return np.zeros((0 if info is None else len(info), 0)), []
    if spec.lower() == "auto":
        cols = [c for c in info.columns if str(c).lower() not in _SKIP]
    else:
        cols = [c.strip() for c in spec.replace("+", ",").split(",") if c.strip()]
        missing = [c for c in cols if c not in info.columns]
        if missing:
            raise DataError(f"{label}: the side table has no column(s) {missing}; it has {list(info.columns)}")
    blocks, names = [], []
    for c in cols:
        s = info[c]
        if s.dtype == bool or str(s.dtype) == "boolean":
            blocks.append(s.fillna(False).to_numpy(dtype=np.float64)[:, None])
            names.append(str(c))
            continue
        if pd.api.types.is_numeric_dtype(s):
            vals = pd.to_numeric(s, errors="coerce").astype("float64")
            if vals.nunique() > bins:
                cats = pd.qcut(vals, q=bins, duplicates="drop")
            else:
                cats = vals
        else:
            if spec.lower() == "auto" and s.nunique() > 50:
                continue  # free text or ids: not a feature
            cats = s.astype("string")
        dummies = pd.get_dummies(cats, prefix=str(c), prefix_sep="=", dummy_na=False)
        if dummies.shape[1]:
            blocks.append(dummies.to_numpy(dtype=np.float64))
            names.extend(str(n) for n in dummies.columns)
    if not blocks:
        return np.zeros((len(info), 0)), []
    return np.ascontiguousarray(np.hstack(blocks)), names


class Bilinear(Model, ItemPriorParams):
    """Bilinear rank functional ``f(u, i) = w_uᵀ Bᵀ C v_i`` with latent and/or given features.

    Parameters
    ----------
    rank : int
        Rank of ``A = Bᵀ C``: the dimension of the shared space of the projected user and item vectors (0: no
        factors).
    loss : str
        ``plackett_luce`` (listwise likelihood, see ``pl_ties``), ``smoothed_rank`` (smoothed NDCG,
        ApproxNDCG), ``rao_kupper``, ``davidson`` (tie-aware pairwise), or one of LCR's pairwise surrogates
        ``log_m``, ``log_a``, ``exp_m``, ``exp_a``, ``hinge_m``, ``hinge_a``.
    margin : float
        γ of the pairwise surrogates (LCR's margin).
    gamma : float
        Scale γ > 0 of the smoothed rank ``σ(γ(f_j − f_i))`` (``loss="smoothed_rank"``): larger follows
        NDCG more closely, and is flatter for pairs far apart.
    theta : float
        Rao–Kupper's θ > 1: ties are likely when the score difference is below ``log θ``.
    nu : float
        Davidson's ν > 0: the tie propensity.
    ties : {"use", "drop"}
        Tie-aware losses: use pairs of equal ratings as ties, or drop them (what the surrogates do).
    pl_ties : {"breslow", "efron", "partition", "partition_product"}
        ``loss="plackett_luce"``: Plackett–Luce with Breslow's or Efron's rule for equal ratings
        (:mod:`cofiviz.losses.listwise`), or the ordered-partition model, which chooses each group of equal
        ratings as a whole (:mod:`cofiviz.losses.partition`, Tran, Phung & Venkatesh, SDM 2011): a group
        costs ``log Σ_{R} e^f − log Σ_{group} e^f`` (``R``: the group and every item rated lower), so it asks
        that one of the group's items, not each of them, come before the items rated lower. Like the
        other two it is shift-invariant and is Plackett–Luce when there are no ties. ``"partition_product"``:
        the same model with the product potential, a group costing ``log(Π_R (1 + e^f) − 1) − Σ_{group} f``:
        each item joins the chosen group on its own with odds ``e^f``, so the scores' level matters too.
    features : {"both", "latent", "given"}
        Latent ids plus given features; ids only (plain factorisation); given features only (a side
        with no features keeps its ids). ``"both"`` without side tables is ``"latent"``.
    user_features, item_features : str
        Side-table columns used as features: ``"auto"``, ``"none"`` or names separated by ``,`` or ``+``
        (``age+gender``; see :func:`encode_features`).
    item_bias : bool
        Learn item offsets ``c_i`` (latent) and ``dᵀ z_i`` (from item features).
    item_prior, prior_damping : float
        A fixed item offset ``β·(m̃_i − μ)`` added to every score (:mod:`cofiviz.models.prior`): β =
        ``item_prior`` (default 4; 0: none) times the item's training mean damped by ``prior_damping``
        pseudo-ratings at the global mean ``μ``; learned by no step and not penalised.
    lr : float
        Step size (AdaGrad's base rate, or the plain gradient step).
    reg, reg_bias : float
        λ of the factors and projections, λ_b of the offsets.
    solver : {"adagrad", "gd"}
    init_scale : float
        Standard deviation of the normal initial factors and projections.
    tol : float
        Stop when the objective improves by less than this per iteration (averaged over 10; 0: never).
    fold_in_iter : int
        AdaGrad steps of :meth:`fold_in`.
    fold_in_reg : float or None
        λ of a new user's latent part in :meth:`fold_in` (default ``None``: ``reg``). A new user has
        a few ratings; a larger penalty keeps them closer to the feature-only prediction.

    Attributes (after ``fit``)
    --------------------------
    U_, V_ : latent user and item factors (zeros on a side without latent part); ``W_``, ``H_``:
    feature projections; ``c_``, ``d_``: item offsets; ``X_``, ``Z_``: the encoded features;
    ``user_feature_names_``, ``item_feature_names_``; ``sides_``: what each side uses.
    """

    #: what :func:`cofiviz.search.tune` searches (see :mod:`cofiviz.search.space`); ``presets``: named settings
    search_space = {"loss": Choice(("plackett_luce", "log_a", "rao_kupper", "smoothed_rank")),
                    "rank": IntLogUniform(5, 50), "lr": LogUniform(0.01, 0.5), "reg": LogUniform(0.01, 1.0),
                    "gamma": LogUniform(0.3, 10.0), "features": Choice(("both", "latent")),
                    "item_bias": Choice((True, False)), "item_prior": Choice((0.0, 1.0, 2.0)),
                    "prior_damping": Choice((5.0, 10.0, 25.0, 50.0))}
    #: the configured model without the item-mean offset and with side features where the data has them
    tune_anchors = ({"item_prior": 0.0, "features": "both"},)
    item_mean_setting = {"rank": 0, "item_prior": 1.0, "features": "latent", "item_bias": False}

    rank = param.Integer(default=10, bounds=(0, 2000),
                         doc="Rank of the association matrix A = B'C (0: no factors).")
    loss = param.Selector(default="plackett_luce", objects=list(BILINEAR_LOSSES),
                          doc="Training loss: listwise likelihood, smoothed NDCG, tie-aware pairwise, or an LCR surrogate.")
    margin = param.Number(default=0.0, doc="Margin γ of the pairwise surrogates.")
    gamma = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                         doc="Scale γ > 0 of the smoothed rank σ(γ(f_j − f_i)) (loss=smoothed_rank).")
    theta = param.Number(default=2.0, bounds=(1.0, None), inclusive_bounds=(False, True),
                         doc="Rao-Kupper threshold θ > 1.")
    nu = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                      doc="Davidson tie propensity ν > 0.")
    ties = param.Selector(default="use", objects=["use", "drop"],
                          doc="Tie-aware losses: use equal ratings as ties, or drop those pairs.")
    pl_ties = param.Selector(default="breslow", objects=list(LISTWISE_TIES),
                             doc="Listwise likelihood: Plackett-Luce with Breslow's or Efron's ties, or the ordered partition "
                                 "with the mean or the product potential.")
    features = param.Selector(default="latent", objects=["both", "latent", "given"],
                              doc="Latent ids and given features, ids only, or given features only.")
    user_features = param.String(default="auto", doc="User side-table columns: auto, none, or names joined by + (age+gender).")
    item_features = param.String(default="auto", doc="Item side-table columns: auto, none, or names joined by + (Action+Comedy).")
    item_bias = param.Boolean(default=True, doc="Learn item offsets (latent and from item features).")
    lr = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True), doc="Step size.")
    reg = param.Number(default=1.0, bounds=(0.0, None), doc="L2 penalty λ of factors and projections.")
    patience = param.Integer(default=10, bounds=(0, None),
                             doc="Early stopping: iterations without validation improvement (0: off).")
    item_prior = param.Number(default=4.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: none).")
    reg_bias = param.Number(default=0.1, bounds=(0.0, None), doc="L2 penalty of the item offsets.")
    solver = param.Selector(default="adagrad", objects=["adagrad", "gd"], doc="AdaGrad or plain gradient steps.")
    init_scale = param.Number(default=0.1, bounds=(0.0, None), inclusive_bounds=(False, True),
                              doc="Standard deviation of the initial factors.")
    tol = param.Number(default=1e-4, bounds=(0.0, None), doc="Stop when the objective improves by less (0: never).")
    max_iter = param.Integer(default=100, bounds=(1, 100_000), doc="Iterations at most.")
    fold_in_iter = param.Integer(default=50, bounds=(1, 100_000), doc="AdaGrad steps of fold_in.")
    fold_in_reg = param.Number(default=None, allow_None=True, bounds=(0.0, None),
                               doc="L2 penalty of a new user's latent part in fold_in (None: reg).")

    tol_window = 10
    divergence_hint = (("lr", "lower"), ("reg", "raise"))
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (losses.warmup, lk.warmup, dense.warmup)

    # ------------------------------------------------------------------ features
    def _encode(self, train: Ratings) -> None:
        X, xn = encode_features(train.user_info, self.user_features if self.features != "latent" else "none",
                                label="user_features")
        Z, zn = encode_features(train.item_info, self.item_features if self.features != "latent" else "none",
                                label="item_features")
        if X.shape[0] != train.n_users:
            X = np.zeros((train.n_users, 0))
            xn = []
        if Z.shape[0] != train.n_items:
            Z = np.zeros((train.n_items, 0))
            zn = []
        if self.features == "given" and X.shape[1] == 0 and Z.shape[1] == 0:
            raise DataError("Bilinear: features='given' needs side tables with usable columns "
                            "(Ratings.user_info / item_info, e.g. movielens_100k()); use features='latent' or 'both'")
        self.X_, self.Z_ = X, Z
        self.user_feature_names_, self.item_feature_names_ = xn, zn

    def _sides(self) -> dict:
        p, q = self.X_.shape[1], self.Z_.shape[1]
        latent = self.features in ("latent", "both")
        return {"user_latent": latent or p == 0, "item_latent": latent or q == 0,
                "user_features": p > 0, "item_features": q > 0}

    # ------------------------------------------------------------------ contract
    def _check_gains(self, table: Ratings, label: str) -> None:
        if self.loss == "smoothed_rank" and len(table) and float(np.min(table.ratings)) < 0.0:
            raise DataError(f"Bilinear: loss='smoothed_rank' needs ratings >= 0 (its NDCG gain 2^y - 1 is negative "
                            f"below 0); the {label} ratings go down to {float(np.min(table.ratings)):g}")

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        self._check_gains(train, "training")
        self._encode(train)
        self.sides_ = self._sides()
        m, n, r = train.n_users, train.n_items, int(self.rank)
        p, q = self.X_.shape[1], self.Z_.shape[1]
        s = float(self.init_scale)
        self.U_ = rng.normal(0.0, s, (m, r)) if self.sides_["user_latent"] else np.zeros((m, r))
        self.V_ = rng.normal(0.0, s, (n, r)) if self.sides_["item_latent"] else np.zeros((n, r))
        self.W_ = rng.normal(0.0, s, (p, r))
        self.H_ = rng.normal(0.0, s, (q, r))
        self.c_ = np.zeros(n)
        self.d_ = np.zeros(q)
        self.prior_ = self.item_prior_offsets(train)
        self._bind(train)
        self._acc = {k: np.zeros_like(v) for k, v in self._params().items()}
        self._objective: list[float] = []
        self.train_log_: list[dict] = []

    def _params(self) -> dict[str, np.ndarray]:
        return {"U": self.U_, "V": self.V_, "W": self.W_, "H": self.H_, "c": self.c_, "d": self.d_}

    def _bind(self, table: Ratings) -> None:
        self._indptr = table.indptr
        self._users = table.users
        self._items = table.items
        self._ratings = table.ratings
        self._iptr, self._ipos = table.item_index()
        self._f = np.empty(len(table))
        self._G = np.empty(len(table))
        self._uloss = np.empty(table.n_users)
        self._ucount = np.empty(table.n_users, dtype=np.int64)

    def _codes(self) -> tuple[int, float, float]:
        """``(loss code, θ or ν, γ)``: γ is the surrogates' margin, or the smoothed rank's scale."""
        code = bk.LOSS_CODES[self.loss]
        tie_param = float(self.theta) if self.loss == "rao_kupper" else float(self.nu)
        gamma = float(self.gamma) if self.loss == "smoothed_rank" else float(self.margin)
        return code, tie_param, gamma

    def _projected(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        P = np.ascontiguousarray(self.U_ + dense.matmul(self.X_, self.W_))
        Q = np.ascontiguousarray(self.V_ + dense.matmul(self.Z_, self.H_))
        b = self.c_ + dense.matvec(self.Z_, self.d_)
        if np.any(self.prior_):  # the offsets of the fit (zeros without item_prior), whatever item_prior says now
            b = b + self.prior_
        return P, Q, np.ascontiguousarray(b)

    def _data_term(self, P, Q, b, active) -> tuple[float, int]:
        """Scores, per-user losses and ``G`` of the bound table; ``(Σ_u loss_u, users with a loss)``."""
        code, tie_param, gamma = self._codes()
        bk.predict(self._users, self._items, P, Q, b, self._f)
        bk.loss_pass(self._indptr, self._ratings, self._f, code, gamma, tie_param, self.ties == "use",
                     listwise_ties_code(self.pl_ties), active, self._G, self._uloss, self._ucount)
        return float(self._uloss.sum()), int(np.count_nonzero(self._ucount))

    def _penalty(self) -> float:
        lam, lam_b = float(self.reg), float(self.reg_bias)
        sq = sum(dense.dot(a.ravel(), a.ravel()) for a in (self.U_, self.V_, self.W_, self.H_))
        return 0.5 * lam * sq + 0.5 * lam_b * (dense.dot(self.c_, self.c_) + dense.dot(self.d_, self.d_))

    def _objective_and_gradient(self) -> tuple[float, int, dict[str, np.ndarray]]:
        P, Q, b = self._projected()
        active = np.ones(len(self._indptr) - 1, dtype=np.bool_)
        data, n_active = self._data_term(P, Q, b, active)
        gP, gQ, gb = np.empty_like(P), np.empty_like(Q), np.empty_like(b)
        bk.factor_grads(self._indptr, self._items, self._users, self._iptr, self._ipos, self._G, P, Q, gP, gQ, gb)
        lam, lam_b = float(self.reg), float(self.reg_bias)
        sides = self.sides_
        grads = {"U": gP + lam * self.U_ if sides["user_latent"] else np.zeros_like(self.U_),
                 "V": gQ + lam * self.V_ if sides["item_latent"] else np.zeros_like(self.V_),
                 "W": dense.matmul(self.X_.T, gP) + lam * self.W_,
                 "H": dense.matmul(self.Z_.T, gQ) + lam * self.H_,
                 "c": gb + lam_b * self.c_ if (self.item_bias and sides["item_latent"]) else np.zeros_like(self.c_),
                 "d": dense.matvec(self.Z_.T, gb) + lam_b * self.d_ if self.item_bias else np.zeros_like(self.d_)}
        return data + self._penalty(), n_active, grads

    def _step(self, iteration: int) -> float:
        t0 = time.perf_counter()
        objective, n_active, grads = self._objective_and_gradient()
        if n_active == 0:
            raise DataError(f"Bilinear: no user has two training ratings the {self.loss!r} loss can use "
                            "(two different ratings, or two ratings when ties are used; smoothed_rank also "
                            "needs a rating above 0)")
        lr = float(self.lr)
        for key, arr in self._params().items():
            g = np.ascontiguousarray(grads[key])
            if arr.size == 0:
                continue
            if self.solver == "adagrad":
                apply_adagrad(arr, g, self._acc[key], lr, 1e-8)
            else:
                arr -= lr * g
        value = objective / n_active
        self._objective.append(value)
        self.train_log_.append({"iteration": iteration, "objective": value, "seconds": time.perf_counter() - t0})
        return value

    def _converged(self, iteration: int) -> bool:
        k = self.tol_window
        if self.tol <= 0 or len(self._objective) <= k:
            return False
        return (self._objective[-1 - k] - self._objective[-1]) / k < self.tol

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        P, Q, b = self._projected()
        out = np.empty(len(users))
        bk.predict(users, items, P, Q, b, out)
        return out

    def _state(self) -> dict[str, np.ndarray]:
        state = {**self._params(), "X": self.X_, "Z": self.Z_}
        if self.item_prior != 0.0:
            state["prior"] = self.prior_
        return state

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        arr = {k: np.ascontiguousarray(state[k], dtype=np.float64) for k in ("U", "V", "W", "H", "c", "d", "X", "Z")}
        U, V, W, H, X, Z = (arr[k] for k in ("U", "V", "W", "H", "X", "Z"))
        if not (U.ndim == V.ndim == W.ndim == H.ndim == X.ndim == Z.ndim == 2) or U.shape[1] != V.shape[1] \
                or W.shape != (X.shape[1], U.shape[1]) or H.shape != (Z.shape[1], U.shape[1]) \
                or X.shape[0] != U.shape[0] or Z.shape[0] != V.shape[0] or arr["c"].shape != (V.shape[0],) \
                or arr["d"].shape != (Z.shape[1],):
            raise DataError("Bilinear state has inconsistent shapes: " +
                            ", ".join(f"{k} {v.shape}" for k, v in arr.items()))
        self.U_, self.V_, self.W_, self.H_, self.c_, self.d_, self.X_, self.Z_ = (
            arr[k] for k in ("U", "V", "W", "H", "c", "d", "X", "Z"))
        self.prior_ = (np.ascontiguousarray(state["prior"], dtype=np.float64) if self.item_prior != 0.0
                       else np.zeros(V.shape[0]))
        self.sides_ = self._sides()

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        # the numbers of user and item features (None) are checked against X and Z by _set_state
        r = int(self.rank)
        spec = {"U": (n_users, r), "V": (n_items, r), "W": (None, r), "H": (None, r), "c": (n_items,), "d": (None,),
                "X": (n_users, None), "Z": (n_items, None)}
        if self.item_prior != 0.0:
            spec["prior"] = (n_items,)
        return spec

    def _extra_meta(self) -> dict:
        return {"user_feature_names": list(getattr(self, "user_feature_names_", [])),
                "item_feature_names": list(getattr(self, "item_feature_names_", []))}

    def _set_extra_meta(self, extra: dict) -> None:
        self.user_feature_names_ = list(extra.get("user_feature_names", []))
        self.item_feature_names_ = list(extra.get("item_feature_names", []))

    # ------------------------------------------------------------------ for checks and teaching
    def objective(self) -> float:
        """The training objective (sum of the users' normalised losses plus the penalties) at the current state."""
        self._require_fitted()
        self._bind(self.train_)
        return self._objective_and_gradient()[0]

    def gradient(self) -> dict[str, np.ndarray]:
        """The gradient of :meth:`objective` in ``U``, ``V``, ``W``, ``H``, ``c``, ``d`` (zeros for unused parts)."""
        self._require_fitted()
        self._bind(self.train_)
        return self._objective_and_gradient()[2]

    # ------------------------------------------------------------------ strong generalization
    def fold_in(self, given: Ratings, seed: int | None = None) -> "Bilinear":
        """Fit the latent part of the users in ``given`` with the item side and projections frozen.

        Each user with ratings in ``given`` starts from ``U_u = 0`` — the score is then the feature-only
        prediction ``(Wᵀ x_u) · q_i + b_i`` (the id part alone: the item offsets) — and takes
        ``fold_in_iter`` AdaGrad steps on the training loss of the given ratings plus ``(λ/2)‖U_u‖²``
        (λ = ``fold_in_reg``, default ``reg``).
        Other users are untouched. With ``features="given"`` and user features there is no latent user
        part: the new users are scored from their features alone. This is what
        :func:`cofiviz.evaluate` calls for a split with a ``given`` part (strong generalization).

        Parameters
        ----------
        given : Ratings
            The new users' known ratings in the model's index space (``split.given``).
        seed : int, optional
            Unused (the fold-in is deterministic); accepted for the common signature.

        Returns
        -------
        self
        """
        self._check_given(given)
        self._check_gains(given, "given")
        active = given.user_counts() > 0
        rows = np.flatnonzero(active).astype(np.int64)
        self.folded_in_ = {"n_users": int(len(rows)), "steps": 0}
        if not len(rows) or not self.sides_["user_latent"]:
            return self
        U = np.array(self.U_, copy=True)
        U[rows] = 0.0
        acc = np.zeros_like(U)
        _, Q, b = self._projected()
        XW = dense.matmul(self.X_, self.W_)
        self._bind(given)
        gP, gQ, gb = np.empty_like(U), np.empty_like(Q), np.empty_like(b)
        lam = float(self.reg if self.fold_in_reg is None else self.fold_in_reg)
        for _ in range(int(self.fold_in_iter)):
            P = np.ascontiguousarray(U + XW)
            self._data_term(P, Q, b, active)
            bk.factor_grads(self._indptr, self._items, self._users, self._iptr, self._ipos, self._G, P, Q, gP, gQ, gb)
            gP += lam * U
            bk.adagrad_rows(U, gP, acc, rows, float(self.lr), 1e-8)
        if not np.all(np.isfinite(U[rows])):
            raise ModelFitError("Bilinear.fold_in: the new users' factors became non-finite; lower lr")
        self.U_ = U
        self._bind(self.train_)
        self.folded_in_["steps"] = int(self.fold_in_iter)
        return self


def warmup() -> None:
    """Compile (or load from cache) the bilinear kernels: a 2-iteration fit per loss family on the tiny table (:func:`cofiviz.datasets.tiny`)."""
    bk.warmup()
    train = tiny()
    for loss, extra in (("plackett_luce", {}), ("plackett_luce", {"pl_ties": "partition"}), ("smoothed_rank", {}),
                        ("rao_kupper", {}), ("davidson", {}), ("log_m", {})):
        m = Bilinear(rank=2, max_iter=2, loss=loss, **extra).fit(train)
        m.score([0, 1], [1, 2])
    m.fold_in(train.take(train.users >= 2))
