"""The version of cofiviz (the same as ``pyproject.toml``'s); part of every results-store key."""

__version__ = "0.1.0"
