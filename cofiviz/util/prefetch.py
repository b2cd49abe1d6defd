"""A software prefetch for numba kernels: ask the processor to start loading an array element now.

A kernel that walks its data in a random order (stochastic gradient descent in a shuffled order, a gather of a
user's items) waits on each cache miss in turn when every step depends on the one before. Knowing the next
positions a few steps ahead, it can call :func:`prefetch` on them: the loads overlap the current work, and nothing
the kernel computes changes (a prefetch reads nothing into a variable and never faults).

``prefetch(a, i)`` is LLVM's ``llvm.prefetch`` on the address of ``a[i]`` (a 1-D array; reshape a C-contiguous
matrix to one dimension and pass ``row * n_columns + column``), for a read, with the highest temporal locality
(keep it in every cache level). It is usable only inside ``@njit`` code.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["prefetch"]

_I32 = ir.IntType(32)
_I8P = ir.IntType(8).as_pointer()


@intrinsic
def prefetch(typingctx, array, index):
    """``prefetch(array, index)``: start loading ``array[index]`` into the caches; returns nothing."""
    if not isinstance(array, types.Array) or array.ndim != 1 or not isinstance(index, types.Integer):
        return None
    sig = types.void(array, index)

    def codegen(context, builder, signature, args):
        array_type = signature.args[0]
        ary = context.make_array(array_type)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, array_type, ary, [args[1]], wraparound=False)
        fnty = ir.FunctionType(ir.VoidType(), [_I8P, _I32, _I32, _I32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        # read (0), highest locality (3), data cache (1)
        builder.call(fn, [builder.bitcast(ptr, _I8P), ir.Constant(_I32, 0), ir.Constant(_I32, 3), ir.Constant(_I32, 1)])
        return context.get_dummy_value()

    return sig, codegen
