"""Dot products in eight lanes for numba kernels, written as SIMD vector operations in a fixed order.

``dot8(x, y, n)`` is ``x[:n]·y[:n]`` summed as follows: with ``n8 = n − n mod 8``, entry ``c < n8`` is added to lane
``c mod 8`` and the entries ``n8 … n−1`` to lane 0, each lane in order of ``c``; the lanes are then added pairwise,
``((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))``. The products and sums are in the precision of the arrays
(float32 or float64).

numba's loop vectoriser keeps a sum's order when it may not reassociate, so it leaves eight scalar accumulators
scalar; here the eight lanes are one LLVM vector (``<8 x float>``, ``<8 x double>``), multiplied and added
elementwise without fused multiply-adds. LLVM maps that vector onto whatever registers the CPU has (two SSE
registers, one AVX2 register, ...), and elementwise IEEE operations round the same way in every width: the same
bits on every CPU, several times faster than the scalar lanes.

Both arrays are 1-D, C-contiguous and of one float type (a row ``A[i]`` of a C-contiguous matrix is); ``n`` is at
most their length (not checked: the kernels pass their own sizes). Usable only inside ``@njit`` code.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["dot8", "LANES"]

#: the lanes of :func:`dot8`
LANES = 8


@intrinsic
def dot8(typingctx, x, y, n):
    """``dot8(x, y, n)``: ``x[:n]·y[:n]`` in :data:`LANES` lanes added pairwise (see the module docstring)."""
    ok = (isinstance(x, types.Array) and isinstance(y, types.Array) and x.ndim == 1 and y.ndim == 1
          and x.layout == "C" and y.layout == "C" and x.dtype == y.dtype
          and x.dtype in (types.float32, types.float64) and isinstance(n, types.Integer))
    if not ok:
        return None
    sig = x.dtype(x, y, n)

    def codegen(context, builder, signature, args):
        xt, yt, nt = signature.args
        fty = context.get_value_type(xt.dtype)
        vty = ir.VectorType(fty, LANES)
        size = ir.Constant(ir.IntType(64), context.get_abi_sizeof(fty))
        xa = context.make_array(xt)(context, builder, args[0])
        ya = context.make_array(yt)(context, builder, args[1])
        i64 = ir.IntType(64)
        count = context.cast(builder, args[2], nt, types.int64)
        n8 = builder.sub(count, builder.srem(count, ir.Constant(i64, LANES)))
        acc = cgutils.alloca_once_value(builder, ir.Constant(vty, None))   # zeroinitializer
        align = int(size.constant)
        with cgutils.for_range_slice(builder, ir.Constant(i64, 0), n8, ir.Constant(i64, LANES), i64) as (c, _):
            vx = builder.load(builder.bitcast(builder.gep(xa.data, [c]), vty.as_pointer()), align=align)
            vy = builder.load(builder.bitcast(builder.gep(ya.data, [c]), vty.as_pointer()), align=align)
            builder.store(builder.fadd(builder.load(acc), builder.fmul(vx, vy)), acc)
        v = builder.load(acc)
        lanes = [builder.extract_element(v, ir.Constant(ir.IntType(32), k)) for k in range(LANES)]
        s0 = cgutils.alloca_once_value(builder, lanes[0])
        with cgutils.for_range_slice(builder, n8, count, ir.Constant(i64, 1), i64) as (c, _):
            prod = builder.fmul(builder.load(builder.gep(xa.data, [c])), builder.load(builder.gep(ya.data, [c])))
            builder.store(builder.fadd(builder.load(s0), prod), s0)
        lanes[0] = builder.load(s0)
        add = builder.fadd
        return add(add(add(lanes[0], lanes[1]), add(lanes[2], lanes[3])),
                   add(add(lanes[4], lanes[5]), add(lanes[6], lanes[7])))

    return sig, codegen
