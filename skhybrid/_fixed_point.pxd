# The fixed-point code of one value, shared by the compiled kernels that sum codes
# (skhybrid/utils/ and skhybrid/cluster/). Inline: every kernel computes the same floats.
#
# A value's integer code on the grid of [lower, upper]:
# rint((clip(value, lower, upper) - lower) * scale), scale = 2**B / (upper - lower)
# (B = FIXED_POINT_BITS), an integer in [0, 2**B]: the proof is in the docstring of
# skhybrid/utils/_fixed_point_sums.pyx. Infinite values are clipped to the bounds and
# NaN to ``lower``, so no NaN is ever converted to an integer; callers count non-finite
# values and refuse such sums. Compiled without contraction (setup.py:
# -ffp-contract=off): no fused multiply-add may change the rounding the proof relies on.
#
# rint is computed by adding 2**52: the scaled value t is in [0, 2**51), so t + 2**52
# lies in [2**52, 2**53), where float64's spacing is 1: the addition rounds t to the
# nearest integer, ties to even, exactly as rint does. The sum's bits, less those of
# 2**52, are then that integer (integer_code), and subtracting 2**52 gives it as a
# float (fixed_point_code). Unlike rint and a conversion to int64, both vectorize.

from libc.stdint cimport int64_t
from libc.string cimport memcpy

cdef extern from *:
    """
    #define SKHYBRID_TWO_52 4503599627370496.0
    #define SKHYBRID_TWO_52_BITS 0x4330000000000000LL
    """
    const double TWO_52 "SKHYBRID_TWO_52"
    const int64_t TWO_52_BITS "SKHYBRID_TWO_52_BITS"


cdef inline double biased_code(double value, double lower, double upper,
                               double scale) noexcept nogil:
    # The code plus 2**52. A NaN fails `value > lower` and goes to ``lower``, a legal
    # code. Written as the selections a vector max and min make (no blends).
    value = value if value > lower else lower
    value = value if value < upper else upper
    return (value - lower) * scale + TWO_52


cdef inline int64_t integer_of(double biased) noexcept nogil:
    # The integer k of a float k + 2**52 with 0 <= k < 2**52: the difference of bits.
    cdef int64_t bits
    memcpy(&bits, &biased, sizeof(double))
    return bits - TWO_52_BITS


cdef inline int64_t integer_code(double value, double lower, double upper,
                                 double scale) noexcept nogil:
    return integer_of(biased_code(value, lower, upper, scale))


cdef inline double fixed_point_code(double value, double lower, double upper,
                                    double scale) noexcept nogil:
    return biased_code(value, lower, upper, scale) - TWO_52
