"""The fixed item-mean offset a ranking model may add to its scores: ``score(u, i) = f(u, i) + β·(m̃_i − μ)``.

``m̃_i`` is item ``i``'s training mean damped towards the global mean ``μ`` (:func:`damped_item_mean`,
:class:`cofiviz.models.ItemMean`'s score) and ``β`` the weight of the offset. The offset is learned by no
step and carries no penalty: the model's own factors learn what the user adds to the item's quality,
which helps most where a user has few ratings and the damped item mean is hard to beat. With ``β = 0``
the model is the paper's.
"""

from __future__ import annotations

import numpy as np
import param

from ..ratings import Ratings
from .popularity import damped_item_mean

__all__ = ["ItemPriorParams"]


class ItemPriorParams(param.Parameterized):
    """The parameters of the item-mean offset, mixed into the classes of the models that offer it."""

    item_prior = param.Number(default=0.0, bounds=(0.0, None),
                              doc="Weight β of a fixed item offset β·(damped item mean − μ) added to every score "
                                  "(0: the paper's model).")
    prior_damping = param.Number(default=10.0, bounds=(0.0, None),
                                 doc="Damping of the item-mean offset (pseudo-ratings at the global mean).")

    def item_prior_offsets(self, train: Ratings) -> np.ndarray:
        """``β · (m̃_i − μ)`` for every item of ``train``'s index space; zeros when ``item_prior`` is 0.

        ``m̃_i = (s_i + d μ) / (n_i + d)`` with ``d = prior_damping``; unrated items get ``μ`` (offset 0).
        """
        beta = float(self.item_prior)
        if beta == 0.0:
            return np.zeros(train.n_items)
        return beta * (damped_item_mean(train, self.prior_damping) - train.global_mean)
