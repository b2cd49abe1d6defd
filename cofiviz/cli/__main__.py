"""``python -m cofiviz.cli``: the ``cofiviz`` command."""

import sys

from . import main

sys.exit(main())
