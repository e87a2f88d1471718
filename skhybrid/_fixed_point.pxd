# The fixed-point code of one value, shared by the compiled kernels that sum codes
# (skhybrid/mean/ and skhybrid/cluster/). Inline: every kernel computes the same floats.
#
# A value's integer code on the grid of [lower, upper], as a float:
# rint((clip(value, lower, upper) - lower) * scale), scale = 2**B / (upper - lower)
# (B = FIXED_POINT_BITS), an integer in [0, 2**B]: the proof is in the docstring of
# skhybrid/utils/_fixed_point_sums.pyx. Infinite values are clipped to the bounds and
# NaN to ``upper``, so no NaN is ever converted to an integer; callers count non-finite
# values and refuse such sums. Compiled without contraction (setup.py:
# -ffp-contract=off): no fused multiply-add may change the rounding the proof relies on.

from libc.math cimport rint


cdef inline double fixed_point_code(double value, double lower, double upper,
                                    double scale) noexcept nogil:
    # NaN: (value < lower) and (value > upper) are both False; `not (value <= upper)`
    # sends it to ``upper``, a legal code, never converted from NaN.
    if value < lower:
        value = lower
    elif not (value <= upper):
        value = upper
    return rint((value - lower) * scale)
