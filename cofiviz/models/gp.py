"""Per-user Gaussian processes on item features and their collaborative forms: GPR, GPOR, CGPR, CGPOR.

CofiRank's Table 3 (Weimer et al., NIPS 2007) holds these four against CofiRank, with the numbers of Yu, Yu, Tresp &
Kriegel, "Collaborative ordinal regression", ICML 2006. Each user's preference over the items is a latent function
``f_u ~ N(c_u + μ, K)``, ``c_u`` the mean of the user's ratings:

``GPR``    Gaussian-process regression of each user's ratings on the items' features: ``μ = 0``, ``K = K0`` the
           feature kernel, Gaussian noise ``σ²``.
``GPOR``   the same prior with the ordinal probit likelihood of Chu & Ghahramani (JMLR 2005, §2) and Laplace's
           approximation per user (§3.1).
``CGPR``   the collaborative form: ``μ`` and ``K`` learned from every training user by EM under a prior centred
           at ``(0, K0)`` (Yu et al. 2006, after Yu, Tresp & Schwaighofer, ICML 2005, §3), then each user, training
           or folded in, is a GP regression with them.
``CGPOR``  likewise with the ordinal likelihood (the E-step uses each user's Laplace approximation).

A user's items are ranked by the posterior mean of ``f_u`` (the latent mean for the ordinal models). The formulas,
their sources and the EM update are in :mod:`cofiviz.models._gp`. The posterior means are kept as each user's
coefficients on the items it rated (``c_u + μ + K_{·I_u} a_u``) and scored pair by pair; GPR's and GPOR's kernel is
read entry by entry from the items' features (:class:`~cofiviz.models._gp.ItemKernel`), so that neither a users ×
items nor an items × items matrix is kept (the collaborative models keep their learned ``K``).

Hyper-parameters (``hyperparameters``): ``"evidence"`` learns them as Chu & Ghahramani do, by maximising the
evidence (:mod:`cofiviz.models._gp_evidence`): one ``κ_ς`` per feature of ``K0 = signal·exp(−½ Σ_ς κ_ς (x_ς −
x'_ς)²)``, the noise, and for the ordinal models the thresholds, with unit signal and a zero prior mean (no user
offset: the thresholds place the levels); the regression models learn the signal and keep the user offset.
``"fixed"`` uses ``lengthscale`` (``κ = 1/ℓ²`` for every feature), ``signal`` and ``noise`` as set, thresholds
halfway between consecutive rating values and the user offset ``c_u`` for each user's level. Each model's default
is the form that ranked better on validation: held-out training users of MovieLens 100K folded in from N = 10, 20,
50 ratings (``cofirank-table3``'s protocol applied to its training users), seeds 0-2. There GPOR ranked better with
the learned hyper-parameters (default ``"evidence"``), GPR, CGPR and CGPOR with the fixed ones (default
``"fixed"``); ``cofirank-table3`` shows both forms of each model.

What is a choice made here rather than taken from the papers: the features (below); the hyper-parameters are
shared by all users and learned on the summed evidence of a seeded subset of the training users (the papers fit
one task at a time); the collaborative models learn ``K0``'s hyper-parameters by the per-user model's evidence and
then run EM with them fixed; Yu et al. 2006's paper itself was not at hand, so the collaborative EM follows their
2005 multi-task paper.

Item features (``features="item_info"``): the indicator columns of ``Ratings.item_info`` (its boolean columns, in
their order, as 0/1: the genres of :func:`cofiviz.datasets.movielens_100k` and :func:`~cofiviz.datasets.movielens_1m`)
and, when it has ``release_year``, the release year standardised over the items (missing years at the mean).
``features="one_hot"`` gives every item its own indicator (``K0 = signal·(e^{−1/ℓ²} + (1 − e^{−1/ℓ²}) I)``): the
collaborative models then learn ``K`` from the ratings alone, while GPR and GPOR have nothing to tell unrated items
apart. ``"auto"`` (the default) takes ``item_info``'s features when it has any and one-hot ids otherwise.
"""

from __future__ import annotations

from functools import partial
from typing import ClassVar

import numpy as np
import pandas as pd
import param

from ..util import elementary
from ..datasets import tiny
from ..util.errors import DataError, ModelFitError
from ..ratings import Ratings
from ..solvers import dense
from . import _gp
from . import _gp_evidence as ge
from . import _gp_kernels as gk
from .base import Model
from .scale import Scale
from ..search.space import LogUniform

__all__ = ["GPR", "GPOR", "CGPR", "CGPOR", "item_features", "warmup"]

#: the diagonal of the feature kernel is ``signal · (1 + JITTER)``: items with equal features stay distinguishable
JITTER = 1e-4


def item_features(ratings: Ratings, features: str = "auto") -> tuple[np.ndarray, str]:
    """The item feature matrix (items × features) of ``ratings`` and a description of its columns.

    Raises
    ------
    DataError
        ``features="item_info"`` and ``ratings.item_info`` holds no genre indicator nor ``release_year``.
    """
    if _uses_one_hot(ratings, features):
        return np.eye(ratings.n_items), f"one-hot item ids ({ratings.n_items})"
    info = ratings.item_info
    cols = _indicators(info)
    has_year = info is not None and "release_year" in info.columns
    if not cols and not has_year:
        have = "no item_info" if info is None else f"item_info with columns {list(info.columns)}"
        raise DataError(f"features='item_info' needs item features: Ratings.item_info with boolean indicator columns "
                        f"(genres, say) or a 'release_year' column, as movielens_100k() gives; got "
                        f"{have}. Use features='one_hot' (or 'auto') to fall back to one-hot item ids")
    if len(info) != ratings.n_items:
        raise DataError(f"Ratings.item_info has {len(info)} rows, expected one per item ({ratings.n_items})")
    parts = [info[cols].to_numpy(dtype=np.float64, na_value=np.nan)] if cols else []
    if has_year:
        year = info["release_year"].to_numpy(dtype=np.float64)
        ok = np.isfinite(year)
        z = np.zeros(len(year))
        if ok.any():
            sd = year[ok].std()
            z[ok] = (year[ok] - year[ok].mean()) / (sd if sd > 0 else 1.0)
        parts.append(z[:, None])
    X = np.concatenate(parts, axis=1) if len(parts) > 1 else parts[0]
    if not np.all(np.isfinite(X)):
        raise DataError("Ratings.item_info's indicator columns hold missing values")
    return X, f"{len(cols)} indicator columns" + (" + standardised release year" if has_year else "")


def _uses_one_hot(ratings: Ratings, features: str) -> bool:
    """Whether ``features`` means one-hot item ids for ``ratings`` (asked for, or ``"auto"`` without item features)."""
    if features != "auto":
        return features == "one_hot"
    info = ratings.item_info
    return info is None or not (_indicators(info) or "release_year" in info.columns)


def _indicators(info) -> list[str]:
    """The boolean columns of an ``item_info`` table, in its order (none when there is no table)."""
    return [] if info is None else [c for c in info.columns if pd.api.types.is_bool_dtype(info[c])]


def _newton_param() -> param.Integer:
    return param.Integer(default=30, bounds=(1, 1000), doc="Newton iterations at most in each user's Laplace fit.")


class _ItemGP(Model):
    """A Gaussian process per user over the items (see the module's docstring)."""

    __abstract = True
    iterative = False
    #: True for the ordinal likelihood, False for Gaussian noise
    ordinal: ClassVar[bool] = False
    scale = Scale("Σn³+nnz·I")
    #: the warm-ups of the shared kernels its fit calls, run before its own in a parallel warm-up
    warmup_after = (elementary.warmup, dense.warmup)

    features = param.Selector(default="auto", objects=["auto", "item_info", "one_hot"],
                              doc="Item features of the kernel: item_info's genres and year, one-hot ids, or auto.")
    lengthscale = param.Number(default=2.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                               doc="ℓ of the feature kernel K0 = signal·exp(−‖x − x'‖²/(2ℓ²)).")
    signal = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                          doc="Prior variance of a latent value (the diagonal of K0).")
    noise = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                         doc="σ²: the noise variance (regression) or the probit's variance (ordinal).")

    hyperparameters = param.Selector(
        default="fixed", objects=["fixed", "evidence"],
        doc="fixed: the kernel, noise (and thresholds) as set; evidence: learned by maximising the evidence.")
    evidence_users = param.Integer(default=200, bounds=(1, None),
                                   doc="Training users (a seeded subset) whose summed evidence is maximised.")
    evidence_iter = param.Integer(default=50, bounds=(1, 10_000),
                                  doc="Iterations at most of the evidence's ascent (L-BFGS).")

    search_space = {"lengthscale": LogUniform(0.5, 8.0), "noise": LogUniform(0.1, 4.0)}
    inner_iterations = ("evidence_iter",)

    # ------------------------------------------------------------------ pieces
    def _targets(self, ratings: np.ndarray) -> np.ndarray:
        """What the likelihood sees: the ratings, or their 0-based levels among the training rating values."""
        if not self.ordinal:
            return np.asarray(ratings, dtype=np.float64)
        return np.searchsorted(self.level_edges_, np.asarray(ratings, dtype=np.float64)).astype(np.int64)

    def _solver(self, inverse: bool = True):
        """One user's posterior; with ``inverse`` it also returns ``A_u``, which only the E-step's moments read."""
        if self.ordinal:
            return partial(_gp.ordinal_laplace_user, thresholds=self.thresholds_, sigma=float(np.sqrt(self.noise_)),
                           max_newton=int(self.max_newton), inverse=inverse)
        return partial(_gp.regression_user, noise=float(self.noise_), inverse=inverse)

    def _zero_mean(self) -> bool:
        """Whether the prior mean is zero rather than each user's mean rating: the ordinal models with learned
        thresholds, which place the levels themselves (Chu & Ghahramani's zero-mean prior)."""
        return self.ordinal and self.hyperparameters == "evidence"

    def _offsets(self, ratings: Ratings, fallback: float) -> np.ndarray:
        if self._zero_mean():
            return np.zeros(ratings.n_users)
        counts = ratings.user_counts()
        sums = np.bincount(ratings.users, weights=ratings.ratings, minlength=ratings.n_users)
        return np.where(counts > 0, sums / np.maximum(counts, 1), fallback)

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        one_hot = _uses_one_hot(train, self.features)
        if one_hot:  # the kernel of one-hot ids, without an items × items identity
            X, self.features_used_ = None, f"one-hot item ids ({train.n_items})"
        else:
            X, self.features_used_ = item_features(train, self.features)
        self.mean_rating_ = float(np.mean(train.ratings))
        if self.ordinal:
            values = np.unique(train.ratings).astype(np.float64)
            if len(values) < 2:
                raise DataError(f"{type(self).__name__} needs at least two distinct rating values to place its "
                                f"thresholds, got only {values.tolist()}")
            self.level_edges_ = _gp.thresholds_for(values)
        else:
            self.level_edges_ = np.zeros(0)
        self.thresholds_, self.noise_ = self.level_edges_, float(self.noise)
        items = np.ascontiguousarray(train.items, dtype=np.int64)
        targets, offsets = self._targets(train.ratings), self._offsets(train, self.mean_rating_)
        if self.hyperparameters == "evidence":
            self._learn_hyperparameters(train, X, items, targets, offsets, rng)
            self.K_ = ge.ard_kernel(X, train.n_items, self.kappa_, self.signal_, JITTER)
        elif one_hot:
            self.K_ = _gp.ItemKernel.one_hot_ids(train.n_items, float(self.lengthscale), float(self.signal), JITTER)
        else:
            self.K_ = _gp.ItemKernel.rbf(X, float(self.lengthscale), float(self.signal), JITTER)
        self.mu_ = np.zeros(train.n_items)
        self._data = (train.indptr, items, targets, offsets)
        # the posterior means, kept as each user's coefficients on its rated items (``offset + μ + K_{·I} coef``):
        # scored pair by pair, never as a users × items matrix
        self.indptr_, self.rated_ = np.ascontiguousarray(train.indptr, dtype=np.int64), items
        self.offsets_, self.coef_ = np.ascontiguousarray(offsets, dtype=np.float64), np.zeros(len(items))

    def _learn_hyperparameters(self, train: Ratings, X, items, targets, offsets, rng) -> None:
        """The kernel's ``κ`` (one per feature; one for one-hot ids), the noise and, for the ordinal models, the
        thresholds, by maximising the summed evidence of at most ``evidence_users`` training users drawn with
        ``rng`` (:mod:`._gp_evidence`); the start is the set ``lengthscale`` (``κ = 1/ℓ²``), ``signal`` and
        ``noise``, and thresholds halfway between the rating values less the mean rating. The regression models keep
        each user's mean rating as the prior mean and learn the signal; the ordinal ones have unit signal and zero
        mean, as Chu & Ghahramani."""
        active = np.flatnonzero(train.user_counts() > 0)
        if len(active) > self.evidence_users:
            active = np.sort(rng.choice(active, size=int(self.evidence_users), replace=False))
        users = [(items[train.indptr[u]:train.indptr[u + 1]], targets[train.indptr[u]:train.indptr[u + 1]],
                  float(offsets[u])) for u in active]
        n_kappa = 1 if X is None else X.shape[1]
        kappa0 = 1.0 / float(self.lengthscale) ** 2
        if self.ordinal:
            hyper = ge.Hyper(n_kappa, True, len(self.level_edges_))
            theta0 = hyper.pack(kappa0, 1.0, float(self.noise), self.level_edges_ - self.mean_rating_)
        else:
            hyper = ge.Hyper(n_kappa, False)
            theta0 = hyper.pack(kappa0, float(self.signal), float(self.noise))
        max_newton = int(getattr(self, "max_newton", 30))
        theta, value, iterations = ge.maximise(
            lambda th: ge.total_evidence(th, hyper, X, train.n_items, users, JITTER, max_newton), theta0,
            max_iter=int(self.evidence_iter))
        self.kappa_, self.signal_, self.noise_, thr = hyper.unpack(theta)
        if self.ordinal:
            self.thresholds_ = thr
        self.evidence_ = {"log_evidence": float(value), "iterations": int(iterations), "users": int(len(users))}

    def _e_step(self, stats: bool, moments: bool = True):
        indptr, items, targets, offsets = self._data
        solve = self._solver(inverse=stats and moments)
        return _gp.e_step(self.K_, self.mu_, offsets, indptr, items, targets, solve, stats=stats, moments=moments)

    def _step(self, iteration: int) -> float:
        self.coef_, st = self._e_step(stats=True, moments=False)   # no M-step: the log likelihood is all it needs
        self.logml_ = st.logml
        return -st.logml / max(len(self._data[1]), 1)

    def _scores(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return _gp.pair_scores(self.K_, self.mu_, self.offsets_, self.indptr_, self.rated_, self.coef_, users, items)

    def means(self, users=None) -> np.ndarray:
        """The posterior means of ``users`` (default: every user) on every item, users × items: what the model
        keeps as coefficients and scores pair by pair, made whole (for a few users, or a small table)."""
        self._require_fitted()
        users = np.arange(len(self.offsets_)) if users is None else np.asarray(users, dtype=np.int64)
        n_items = len(self.mu_)
        return self._scores(np.repeat(users, n_items), np.tile(np.arange(n_items), len(users))).reshape(
            len(users), n_items)

    # ------------------------------------------------------------------ strong generalization
    def fold_in(self, given: Ratings, seed: int | None = None) -> "_ItemGP":
        """Score the users with ratings in ``given`` from those ratings alone (strong generalization).

        Each such user's posterior mean is computed with the model's ``μ`` and ``K`` (the feature kernel for GPR and
        GPOR, the learned one for CGPR and CGPOR) and the offset ``c_u`` of the given ratings; nothing learned from
        the training users changes. Other users are untouched. ``seed`` is accepted for the common fold-in
        signature; the fold-in draws nothing. :func:`cofiviz.evaluate` calls this for a split with a ``given`` part.
        """
        self._check_given(given)
        active = given.user_counts() > 0
        if not active.any():
            return self
        offsets = self._offsets(given, self.mean_rating_)
        items = np.ascontiguousarray(given.items, dtype=np.int64)
        coef, _ = _gp.e_step(self.K_, self.mu_, offsets, given.indptr, items, self._targets(given.ratings),
                             self._solver(inverse=False), stats=False)
        if not (np.all(np.isfinite(coef)) and np.all(np.isfinite(offsets[active]))):
            raise ModelFitError(f"{type(self).__name__}.fold_in produced non-finite scores; "
                                + self.divergence_advice())
        self.indptr_, self.rated_, self.coef_ = _merge_rows((self.indptr_, self.rated_, self.coef_),
                                                            (given.indptr, items, coef), active)
        self.offsets_ = np.where(active, offsets, self.offsets_)
        self.folded_in_ = {"n_users": int(active.sum())}
        return self

    # ------------------------------------------------------------------ state
    def _state(self) -> dict[str, np.ndarray]:
        state = {"coef": self.coef_, "indptr": self.indptr_, "rated": self.rated_, "offsets": self.offsets_,
                 "mu": self.mu_, "thresholds": self.thresholds_, "level_edges": self.level_edges_,
                 "noise": np.array([self.noise_]), "mean_rating": np.array([self.mean_rating_])}
        return {**state, **self._kernel_state()}

    def _kernel_state(self) -> dict[str, np.ndarray]:
        """The feature kernel: its (scaled) features and ``divisor, signal, diagonal, one-hot entry, one-hot``."""
        K = self.K_
        return {"X": K.X, "kernel": np.array([K.divisor, K.signal, K.diag, K.off, float(K.one_hot)])}

    def _set_kernel_state(self, state: dict[str, np.ndarray], n_items: int) -> None:
        X = np.asarray(state["X"], dtype=np.float64)
        kernel = np.asarray(state["kernel"], dtype=np.float64)
        if X.ndim != 2 or X.shape[0] != n_items or kernel.shape != (5,) or not np.all(np.isfinite(kernel)) \
                or not kernel[0] > 0 or kernel[4] not in (0.0, 1.0):
            raise DataError(f"{type(self).__name__} state needs X ({n_items}, features) and kernel (divisor > 0, "
                            f"signal, diagonal, one-hot entry, one-hot 0/1), got X {X.shape} and kernel "
                            f"{kernel.tolist()}")
        divisor, signal, diag, off, one_hot = kernel.tolist()
        self.K_ = _gp.ItemKernel(None if one_hot else X, n_items, divisor, signal, off=off, diag=diag)

    def _set_state(self, state: dict[str, np.ndarray]) -> None:
        coef = np.asarray(state["coef"], dtype=np.float64)
        indptr = np.asarray(state["indptr"], dtype=np.int64)
        rated = np.asarray(state["rated"], dtype=np.int64)
        offsets = np.asarray(state["offsets"], dtype=np.float64)
        mu = np.asarray(state["mu"], dtype=np.float64)
        thr = np.asarray(state["thresholds"], dtype=np.float64)
        mean = np.asarray(state["mean_rating"], dtype=np.float64)
        edges = np.asarray(state["level_edges"], dtype=np.float64)
        noise = np.asarray(state["noise"], dtype=np.float64)
        if noise.shape != (1,) or not noise[0] > 0 or edges.shape != thr.shape:
            raise DataError(f"{type(self).__name__} state needs noise (1,) > 0 and level_edges shaped as thresholds "
                            f"{thr.shape}, got noise {noise.tolist()} and level_edges {edges.shape}")
        n_items = len(mu)
        if indptr.ndim != 1 or len(indptr) != len(offsets) + 1 or indptr[0] != 0 or np.any(np.diff(indptr) < 0) \
                or coef.shape != rated.shape or len(rated) != indptr[-1] or mu.ndim != 1 or mean.shape != (1,) \
                or thr.ndim != 1 or (len(rated) and not (0 <= rated.min() and rated.max() < n_items)):
            raise DataError(f"{type(self).__name__} state needs indptr (users + 1,) rising from 0, rated and coef of "
                            f"indptr[-1] entries with items below {n_items}, offsets (users,), mu (items,), "
                            f"thresholds and mean_rating (1,), got indptr {indptr.shape}, rated {rated.shape}, "
                            f"coef {coef.shape}, offsets {offsets.shape}, mu {mu.shape}, mean_rating {mean.shape}")
        if self.ordinal and len(thr) < 1:
            raise DataError(f"{type(self).__name__} state needs at least one threshold")
        self._set_kernel_state(state, n_items)
        self.coef_, self.indptr_, self.rated_ = np.ascontiguousarray(coef), indptr, np.ascontiguousarray(rated)
        self.offsets_, self.mu_ = np.ascontiguousarray(offsets), np.ascontiguousarray(mu)
        self.thresholds_, self.mean_rating_ = np.ascontiguousarray(thr), float(mean[0])
        self.level_edges_, self.noise_ = np.ascontiguousarray(edges), float(noise[0])

    def _state_spec(self, n_users: int, n_items: int) -> dict[str, tuple[int | None, ...]]:
        return {"coef": (None,), "indptr": (n_users + 1,), "rated": (None,), "offsets": (n_users,),
                "mu": (n_items,), "thresholds": (None,), "level_edges": (None,), "noise": (1,),
                "mean_rating": (1,), **self._kernel_spec(n_items)}

    def _kernel_spec(self, n_items: int) -> dict[str, tuple[int | None, ...]]:
        return {"X": (n_items, None), "kernel": (5,)}


def _merge_rows(old: tuple, new: tuple, take: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows of two user-major tables ``(indptr, items, values)`` over the same users: row ``u`` of ``new`` where
    ``take[u]``, of ``old`` elsewhere, each in its own order."""
    parts = []
    for (indptr, items, values), keep in ((old, ~take), (new, take)):
        users = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        mask = keep[users]
        parts.append((users[mask], np.asarray(items)[mask], np.asarray(values)[mask]))
    users = np.concatenate([p[0] for p in parts])
    order = np.argsort(users, kind="stable")
    indptr = np.zeros(len(take) + 1, dtype=np.int64)
    np.cumsum(np.bincount(users, minlength=len(take)), out=indptr[1:])
    items = np.ascontiguousarray(np.concatenate([p[1] for p in parts])[order], dtype=np.int64)
    return indptr, items, np.ascontiguousarray(np.concatenate([p[2] for p in parts])[order], dtype=np.float64)


class _CollaborativeGP(_ItemGP):
    """The item mean ``μ`` and covariance ``K`` learned from every training user by EM (one iteration per step)."""

    __abstract = True
    iterative = True
    divergence_hint = (("noise", "raise"), ("prior_weight", "raise"))
    scale = Scale("Σn³+nnz·I+I³", heavy=True,
                  why="each EM iteration multiplies and factorises items × items matrices")

    prior_weight = param.Number(default=10.0, bounds=(0.0, None),
                                doc="τ: weight of the feature kernel K0 in K's prior, in pseudo-users.")
    mean_weight = param.Number(default=1.0, bounds=(0.0, None), inclusive_bounds=(False, True),
                               doc="π: the prior of the item mean is μ ~ N(0, K/π).")
    tol = param.Number(default=1e-4, bounds=(0.0, None),
                       doc="Stop when an EM iteration raises the log posterior by less than tol per rating (0: never).")
    max_iter = param.Integer(default=20, bounds=(1, 100_000), doc="EM iterations at most.")

    search_space = {**_ItemGP.search_space, "prior_weight": LogUniform(1.0, 300.0)}

    def _setup(self, train: Ratings, rng: np.random.Generator) -> None:
        super()._setup(train, rng)
        self.K0_ = self.K_.dense()                  # the prior's centre, which the M-step and its prior read
        self.K_ = np.array(self.K0_, copy=True)
        self.coef_, self._stats = self._e_step(stats=True)
        self._objective = [self._log_posterior(self._stats)]

    def _log_posterior(self, st) -> float:
        return st.logml + _gp.log_hyperprior(self.K_, self.mu_, self.K0_, float(self.prior_weight),
                                             float(self.mean_weight))

    def _step(self, iteration: int) -> float:
        self.K_, self.mu_ = _gp.m_step(self.K_, self.mu_, self.K0_, self._stats, float(self.prior_weight),
                                       float(self.mean_weight))
        self.coef_, self._stats = self._e_step(stats=True)
        self._objective.append(self._log_posterior(self._stats))
        return -self._objective[-1] / max(len(self._data[1]), 1)

    def _kernel_state(self) -> dict[str, np.ndarray]:
        return {"K": self.K_}

    def _set_kernel_state(self, state: dict[str, np.ndarray], n_items: int) -> None:
        K = np.asarray(state["K"], dtype=np.float64)
        if K.shape != (n_items, n_items):
            raise DataError(f"{type(self).__name__} state needs K ({n_items}, {n_items}), got K {K.shape}")
        self.K_ = np.ascontiguousarray(K)

    def _kernel_spec(self, n_items: int) -> dict[str, tuple[int | None, ...]]:
        return {"K": (n_items, n_items)}

    def _converged(self, iteration: int) -> bool:
        if self.tol <= 0 or len(self._objective) < 2:
            return False
        return abs(self._objective[-1] - self._objective[-2]) <= self.tol * max(len(self._data[1]), 1)


class GPR(_ItemGP):
    """Gaussian-process regression per user on item features (the GPR row of CofiRank's Table 3).

    Parameters
    ----------
    features : {"auto", "item_info", "one_hot"}
        The item features of the kernel (see :mod:`cofiviz.models.gp`).
    lengthscale, signal : float
        ``K0_ij = signal · exp(−‖x_i − x_j‖²/(2 lengthscale²))``.
    noise : float
        σ², the variance of a rating around the latent value.
    hyperparameters : {"fixed", "evidence"}
        ``"fixed"`` (the default): as set; ``"evidence"``: one ``κ`` per feature, the signal and the noise learned
        by maximising the evidence, from the set values (see :mod:`cofiviz.models.gp`).
    evidence_users, evidence_iter : int
        With learned hyper-parameters: the training users (a seeded subset) whose evidence is summed; the ascent's
        iterations at most.

    Notes
    -----
    ``fit`` computes each training user's posterior mean (one pass, no iteration); ``fold_in`` does the same for new
    users from their given ratings. The reported loss is minus the log marginal likelihood per training rating.
    """

    presets = {"paper": {"features": "item_info"}}


class GPOR(_ItemGP):
    """Gaussian-process ordinal regression per user on item features (Chu & Ghahramani 2005; the GPOR row).

    Parameters
    ----------
    hyperparameters : {"evidence", "fixed"}
        ``"evidence"`` (the default): one ``κ`` per feature, σ and the thresholds ``b`` learned by maximising the
        evidence of Laplace's approximation, unit signal, zero prior mean; ``"fixed"``: as set, thresholds halfway
        between consecutive rating values, each user's mean rating as the prior mean.
    features, lengthscale, signal
        As :class:`GPR` (with learned hyper-parameters, ``lengthscale`` is the ascent's start and ``signal`` unused).
    noise : float
        σ² of the probit ``P(y = r | f) = Φ((b_r − f)/σ) − Φ((b_{r−1} − f)/σ)`` (with learned ones, the start).
    evidence_users, evidence_iter : int
        The training users (a seeded subset) whose evidence is summed; the ascent's iterations at most.
    max_newton : int
        Newton iterations at most per user.
    """

    ordinal = True
    max_newton = _newton_param()
    hyperparameters = param.Selector(
        default="evidence", objects=["evidence", "fixed"],
        doc="evidence: κ per feature, σ and thresholds learned by maximising the evidence; fixed: as set.")
    #: the search space's lengthscale and noise are the fixed form's; the learned form only starts from them
    search_holds = {"hyperparameters": "fixed"}
    presets = {"paper": {"features": "item_info"}}


class CGPR(_CollaborativeGP):
    """Collaborative GP regression (Yu et al. 2006): an item mean and covariance learned by EM from all users.

    Parameters
    ----------
    features, lengthscale, signal, noise
        As :class:`GPR`; the feature kernel ``K0`` is the prior's centre and EM's start.
    prior_weight : float
        τ, the weight of ``K0`` in the update ``K = (τ K0 + π μμᵀ + Σ_u E[(f_u − μ)(f_u − μ)ᵀ]) / (n + τ + 1)``.
    mean_weight : float
        π, the prior ``μ ~ N(0, K/π)``.
    max_iter, tol
        EM iterations at most; stop when one raises the log posterior by less than ``tol`` per rating.
    """

    presets = {"paper": {"features": "item_info"}}


class CGPOR(_CollaborativeGP):
    """Collaborative GP ordinal regression (Yu et al. 2006): :class:`CGPR`'s EM with :class:`GPOR`'s likelihood.

    The E-step uses each user's Laplace approximation, so EM's log posterior is itself approximate and need not
    rise at every iteration as it does for :class:`CGPR`.
    """

    ordinal = True
    max_newton = _newton_param()
    presets = {"paper": {"features": "item_info"}}


def warmup() -> None:
    """Fit each of the four models on the tiny table (:func:`cofiviz.datasets.tiny`, no item features: one-hot)."""
    train = tiny()
    for klass in (GPR, GPOR, CGPR, CGPOR):
        model = klass(max_iter=2).fit(train)
        model.score(np.arange(2), np.arange(2))
        model.fold_in(train.take(train.users >= 2))
    gk.cho_solve(np.eye(2), np.ones((2, gk._SOLVE_COLS + 1)))   # many right-hand sides: the parallel solve
