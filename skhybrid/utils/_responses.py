"""k-ary randomized response from its draws, on arrays (the K-means pass,
``skhybrid/cluster/_k_means_lloyd.pyx``, has the same arithmetic in C; tests compare them)."""

import numpy as np

#: Bits of one response's draw: a uniform integer in ``[0, 2**32)``, two per 64-bit word.
#: The grid caps the achieved level at ``32 ln 2`` (see
#: :func:`~skhybrid.mechanisms._randomized_response.randomized_response_widths`).
DRAW_BITS = 32
#: HybridKMeans' responses draw 16 bits where that grid is fine enough (four draws per
#: word; :func:`~skhybrid.mechanisms._randomized_response.response_bits`).
SHORT_DRAW_BITS = 16


def respond(category, draw, width, n_categories):
    """k-ary randomized response of a category (or of arrays of them), from its draw.

    The draw is a uniform integer in ``[0, 2**bits)`` (``bits`` is ``DRAW_BITS`` or
    ``SHORT_DRAW_BITS``, the width on the same grid); its slot
    ``floor(draw / width)`` is ``j`` for exactly the ``width`` draws
    ``j * width .. (j + 1) * width - 1``. A slot ``j < k - 1`` moves the category by
    ``j + 1``, modulo ``k``: each other category then has probability exactly
    ``width / 2**bits``, and the category changes with probability
    ``(k - 1) width / 2**bits`` (the width of
    :func:`~skhybrid.mechanisms._randomized_response.randomized_response_widths`). Any
    other slot keeps it.

    Exactness: ``draw`` and ``width`` are integers below ``2**53``, so both are exact
    float64 and their quotient is rounded correctly, hence monotonically in ``draw``.
    The rounding never crosses an integer: a quotient ``q`` that is not one is at least
    ``1 / width`` from the next, which exceeds half an ulp of ``q`` wherever
    ``q < 2**53 / width``. So ``floor`` of the float quotient is the exact slot, with
    one division (vectorized) instead of an integer division (which is not).
    The sum ``category + j + 1`` is below ``2 k - 1``: one conditional subtraction is
    the modulo.

    Parameters
    ----------
    category : int or ndarray of intp
        In ``[0, n_categories)``.
    draw : numpy.uint32 or uint16, or ndarray of them
        One uniform draw per response
        (:func:`~skhybrid.mechanisms._randomized_response.response_draws`).
    width : float or ndarray of float64
        An integer in ``[1, 2**bits]``.
    n_categories : int

    Returns
    -------
    reported : int or ndarray of intp
    """
    slot = np.intp(np.float64(draw) / width)
    moved = category + (slot + 1) * np.intp(slot < n_categories - 1)
    return moved - n_categories * np.intp(moved >= n_categories)
