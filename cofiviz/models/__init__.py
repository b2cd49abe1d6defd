"""Collaborative ranking models under one contract (:class:`~cofiviz.models.base.Model`).

Every model registers itself under its lower-case class name (``poprec``, ``itemmean``, ...), the
name the command line and the dashboards use.
"""

from .base import IterationInfo, Model, available_models, get_model_class, make_model
from .cofirank import CofiRank
from .popularity import ItemMean, PopRec

__all__ = ["Model", "IterationInfo", "available_models", "get_model_class", "make_model", "PopRec", "ItemMean", "CofiRank"]
