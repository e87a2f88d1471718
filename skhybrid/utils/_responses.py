"""k-ary randomized response from its draws, in plain numpy (no numba).

Shared by the mechanism (:mod:`skhybrid.mechanisms._randomized_response`, on arrays) and
the compiled K-means pass (:mod:`skhybrid.utils._kernels` compiles it inline), so that
both give the same report from the same draws; kept apart from the kernels so that
importing the mechanism does not import numba.
"""


def respond(category, uniform, shift, change, n_categories):
    """k-ary randomized response of a category (or of arrays of them), from its draws.

    The category moves by ``shift`` (uniform in ``1 .. k - 1``), modulo ``k``, when
    ``uniform`` (uniform in [0, 1)) is below ``change``, the probability of reporting
    another category: each other category is then equally likely
    (:class:`~skhybrid.mechanisms._randomized_response.RandomizedResponse`, whose
    ``privatize`` calls this on arrays; the compiled
    :func:`~skhybrid.utils._kernels.nearest_centre_sums` on each user).
    The sum is below ``2 k - 1``: one conditional subtraction is the modulo (a division
    would cost more than the rest of a user's response).
    """
    moved = category + shift * (uniform < change)
    return moved - n_categories * (moved >= n_categories)
