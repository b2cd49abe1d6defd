"""Collaborative ranking models under one contract (:class:`~cofiviz.models.base.Model`).

Every model registers itself under its lower-case class name (``poprec``, ``itemmean``, ...), the
name the command line and the dashboards use.
"""

from .base import IterationInfo, Model
from .registry import MODEL_REGISTRY, available_models, get_model_class, make_model, ranking_models, baseline_models
from .bilinear import Bilinear
from .bpmf import BPMF
from .cofirank import CofiRank
from .gapfm import GAPfm
from .gcr import GCR
from .gp import CGPOR, CGPR, GPOR, GPR
from .lcr import LCR
from .llorma import LLORMA
from .mmmf import MMMF
from .nmf import NMF
from .popularity import ItemMean, PopRec
from .regsvd import RegSVD
from .svdpp import SVDpp
from .wlt import WLT

__all__ = ["Model", "IterationInfo", "MODEL_REGISTRY", "available_models", "ranking_models", "baseline_models", "get_model_class", "make_model", "PopRec", "ItemMean", "CofiRank", "GCR",
           "LCR", "LLORMA", "RegSVD", "SVDpp", "GAPfm", "NMF", "BPMF", "Bilinear", "MMMF",
           "GPR", "GPOR", "CGPR", "CGPOR", "WLT"]
