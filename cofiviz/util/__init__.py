"""What knows nothing of cofiviz: the errors, the version, JSON of parameters, the notice of a first compile, and
the numba helpers the kernels share (a software prefetch, dot products in eight lanes, the C library's ``exp``,
``log`` and ``pow``), and where the files the package carries are (``bundled``). The bottom layer
(``ARCHITECTURE.md``): every other package may import it, it imports none of them.
"""
