"""Importing this module imports every model module, so that all of them are registered."""

from . import popularity  # noqa: F401
from . import cofirank  # noqa: F401
from . import gcr, lcr, llorma, regsvd  # noqa: F401
from . import bpmf, gapfm, nmf  # noqa: F401
from . import bilinear  # noqa: F401
