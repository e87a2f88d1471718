"""Noise samplers shared by the central and the local mechanisms.

Floating-point safety
---------------------
Adding continuous Laplace or Gaussian noise in floating point leaks the input through
the low-order bits of the output (Mironov 2012; Haney et al. 2022, "precision-based
attacks"). With ``secure=True`` the statistic is first rounded to a grid whose step is a
power of two about ``2**-40`` times the noise scale, and the noise is an integer number of
grid steps drawn from the discrete Laplace (two-sided geometric) or discrete Gaussian
distribution (Canonne, Kamath and Steinke 2020), as Google's and OpenDP's libraries do.
Every released value is then an exact multiple of the step, a function of the discrete
mechanism's output only. The rounding can move each coordinate by half a step, so the
sensitivity is inflated by one step per coordinate (L1) or ``sqrt(d)`` steps (L2) before
calibration: the guarantee holds for the rounded statistic.

``secure=False`` adds numpy's continuous noise: faster, and fine for simulations, not for
releases.
"""

import math

import numpy as np

from ..utils._random import random_words

#: The grid step is the smallest power of two >= scale * 2**-GRID_BITS.
GRID_BITS = 40
#: The largest noise scale, in grid steps, whose geometric draws stay exact in int64
#: (draws of a few hundred times the scale stay below 2**63).
MAX_NOISE_UNITS = 2.0**52


def check_noise_units(units, epsilon=None):
    """Refuse a noise scale too large to sample exactly, naming the privacy level.

    With a tiny epsilon, the rounding slack of one grid step per coordinate alone needs
    a discrete noise scale of about ``1 / epsilon`` steps; past 2**52 steps numpy's
    geometric draws saturate at the int64 maximum and cancel, which would release the
    statistic without noise. Such an epsilon (below about 1e-15) protects nothing
    measurable anyway: the floor is about ``d * 2**-52`` for a release of d coordinates.

    Parameters
    ----------
    units : float or ndarray
        The discrete noise scale in grid steps.
    epsilon : float or ndarray, default=None
        The privacy level(s) the scale was computed for (named in the error).
    """
    units = np.asarray(units, dtype=np.float64)
    if np.all(np.isfinite(units) & (units <= MAX_NOISE_UNITS)):
        return
    level = "the privacy level"
    if epsilon is not None and np.size(epsilon):
        level = f"epsilon={float(np.min(np.asarray(epsilon, dtype=np.float64))):g}"
    raise ValueError(
        f"{level} is too small to draw the noise exactly: its scale exceeds "
        f"2**52 grid steps, where the sampler would saturate and release no noise. Use "
        "a larger epsilon (the floor is about 2e-16 per released coordinate; smaller "
        "privacy levels protect nothing measurable)"
    )


def _is_scalar(value):
    """Whether ``value`` is one number (a Python or numpy scalar, or a 0-d array)."""
    return isinstance(value, (float, int)) or np.ndim(value) == 0


def grid_step(scale):
    """The power-of-two grid step used to release a value with noise of the given scale.

    It depends on the noise scale only (a public quantity), never on the data.

    Parameters
    ----------
    scale : float or ndarray
        Noise scale (Laplace scale or Gaussian standard deviation), > 0.

    Returns
    -------
    step : float or ndarray
        ``2 ** (e - GRID_BITS)`` where ``2 ** e`` is the smallest power of two above
        ``scale``.
    """
    if isinstance(scale, float):  # one scale: the same operations on a Python float
        return math.ldexp(1.0, math.frexp(scale)[1] - GRID_BITS)
    _, exponent = np.frexp(scale)
    return np.ldexp(1.0, exponent - GRID_BITS)


def sample_discrete_laplace(rng, scale, size):
    """Two-sided geometric integers with P(k) proportional to exp(-|k| / scale).

    Sampled by inversion from one 64-bit word per draw (:func:`_add_discrete_laplace`).

    Parameters
    ----------
    rng : numpy.random.Generator
    scale : float or ndarray broadcastable to ``size``
        The scale in grid units (> 0).
    size : tuple of int

    Returns
    -------
    noise : ndarray of int64
    """
    noise = np.zeros(size, dtype=np.int64)
    _add_discrete_laplace(noise.reshape(-1), rng, _flat_scale(scale, size))
    return noise


def _flat_scale(scale, size):
    """One float when every draw has the same scale, else one scale per draw, flat."""
    scale = np.asarray(scale, dtype=np.float64)
    flat = scale.ravel()
    if flat.size and np.all(flat == flat[0]):
        return flat[0]
    return np.broadcast_to(scale, size).reshape(-1)


def _add_discrete_laplace(target, rng, scale):
    """``target += K`` for i.i.d. discrete Laplace ``K``, P(k) proportional to q**|k|.

    With ``q = exp(-1 / scale)``, the magnitude has ``P(|K| >= k) = 2 q**k / (1 + q)``
    for k >= 1 (and 1 for k = 0), and the sign is fair (Inusah and Kozubowski 2006, the
    law of the difference of two i.i.d. geometric variables). Inverting that tail at
    a uniform ``U`` gives ``|K| = floor(log((1 - U)(1 + q) / 2) / log q)``:
    ``|K| >= k`` exactly when ``1 - U <= 2 q**k / (1 + q)``. Written as
    ``floor(scale * (E + g))`` with ``E = -log(1 - U)`` and ``g = -log((1 + q) / 2)``
    (computed as ``-log1p(expm1(-1 / scale) / 2)``, accurate for large scales).

    Each draw takes one 64-bit word of the generator: its top 53 bits give ``U`` (as
    numpy's ``random`` does) and its lowest bit the sign; ``|K| = 0`` gets either sign.
    ``U`` has 53 bits, so the tail is cut past about 36.7 scales (probability 2**-53), as
    any float inversion is.

    ``target`` is a flat array (int64 noise, or float64 grid units holding integers,
    exact while they stay below 2**53). The draws are made in blocks of
    ``_DRAW_BLOCK``: no n-long array of draws.
    """
    if target.shape[0] <= _FEW_DRAWS and _is_scalar(scale):
        few = _few_discrete_laplace(rng, float(scale), target.shape[0])
        target += np.asarray(few, dtype=target.dtype)
        return
    scale = np.asarray(scale, dtype=np.float64)
    offset = _tail_offset(scale)
    per_draw = scale.ndim > 0
    for start in range(0, target.shape[0], _DRAW_BLOCK):
        block = slice(start, start + _DRAW_BLOCK)
        words = random_words(rng, target[block].shape[0])
        # 1 - U, exactly: U = k 2**-53 for the word's top 53 bits k, and 1 - U =
        # (2**53 - k) 2**-53 is a float64 in (0, 1]. Its log (SIMD in numpy) is E.
        magnitude = (words >> np.uint64(11)).astype(np.float64)
        magnitude *= -(2.0**-53)
        magnitude += 1.0
        np.log(magnitude, out=magnitude)  # log(1 - U) = -E <= 0
        np.subtract(offset[block] if per_draw else offset, magnitude, out=magnitude)
        magnitude *= scale[block] if per_draw else scale
        np.floor(magnitude, out=magnitude)
        # The word's lowest bit becomes the float's sign bit (magnitude >= 0).
        np.left_shift(words, np.uint64(63), out=words)
        bits = magnitude.view(np.uint64)
        np.bitwise_xor(bits, words, out=bits)
        if target.dtype.kind == "f":
            target[block] += magnitude
        else:
            target[block] += magnitude.astype(target.dtype)


#: Discrete Laplace draws made at once by :func:`_add_discrete_laplace`.
_DRAW_BLOCK = 2**16
#: Up to this many draws of one scale are made in Python floats
#: (:func:`_few_discrete_laplace`); a central release draws one per coordinate.
_FEW_DRAWS = 32


def _few_discrete_laplace(rng, scale, size):
    """``size`` draws of :func:`_add_discrete_laplace` of one scale, as Python ints.

    The same words and the same float64 operations, in the same order, as the
    vectorized form (``math.log`` is the C library's ``log``, which numpy calls too
    where it has no SIMD loop); a dozen numpy calls on a few elements cost more than
    the arithmetic.
    """
    offset = _tail_offset(scale)
    noise = []
    for word in random_words(rng, size).tolist():
        # 1 - U = (2**53 - k) 2**-53 exactly, for the word's top 53 bits k.
        magnitude = math.floor((offset - math.log((word >> 11) * -(2.0**-53) + 1.0)) * scale)
        noise.append(-magnitude if word & 1 else magnitude)
    return noise


def _tail_offset(scale):
    """``g = -log((1 + q) / 2)`` of :func:`_add_discrete_laplace`, with ``q = exp(-1 / scale)``
    (computed as ``-log1p(expm1(-1 / scale) / 2)``, accurate for large scales)."""
    if isinstance(scale, float):  # one scale: the same operations on a Python float
        return -math.log1p(math.expm1(-1.0 / scale) / 2.0)
    return -np.log1p(np.expm1(-1.0 / scale) / 2.0)


def discrete_laplace_variance(scale):
    """Variance of :func:`sample_discrete_laplace`: 2q / (1 - q)^2 with q = exp(-1/scale)."""
    if isinstance(scale, float):  # one scale: the same operations on a Python float
        return 2.0 * math.exp(-1.0 / scale) / math.expm1(-1.0 / scale) ** 2
    scale = np.asarray(scale, dtype=np.float64)
    q = np.exp(-1.0 / scale)
    return 2.0 * q / np.expm1(-1.0 / scale) ** 2


def sample_discrete_gaussian(rng, sigma, size):
    """Discrete Gaussian integers, P(k) proportional to exp(-k^2 / (2 sigma^2)).

    Rejection sampling from a discrete Laplace proposal (Canonne, Kamath and Steinke
    2020, Algorithm 3), vectorised. For sigma >= 1 its variance is below sigma^2 and
    equal to it up to a relative error below 2 exp(-2 pi^2 sigma^2) (their Prop. 19),
    i.e. exactly sigma^2 in double precision for the grid sizes used here.

    Parameters
    ----------
    rng : numpy.random.Generator
    sigma : float or ndarray broadcastable to ``size``
        Standard deviation in grid units (>= 1).
    size : tuple of int

    Returns
    -------
    noise : ndarray of float64 holding integers
    """
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), size).ravel()
    out = np.empty(sigma.shape[0], dtype=np.float64)
    pending = np.arange(sigma.shape[0])
    while pending.size:
        s = sigma[pending]
        t = np.floor(s) + 1.0
        proposal = sample_discrete_laplace(rng, t, pending.shape).astype(np.float64)
        log_accept = -((np.abs(proposal) - s * s / t) ** 2) / (2.0 * s * s)
        accepted = np.log(rng.random(pending.shape[0])) < log_accept
        out[pending[accepted]] = proposal[accepted]
        pending = pending[~accepted]
    return out.reshape(size)


def laplace_release(values, sensitivity, epsilon, rng, secure, *, overwrite=False):
    """Add epsilon-DP Laplace noise to ``values``: the core of every Laplace mechanism.

    Parameters
    ----------
    values : ndarray of shape (..., d)
        The statistic (central) or the users' clipped values (local); each slice along
        the last axis is one release.
    sensitivity : float or ndarray broadcastable to values.shape[:-1]
        L1 sensitivity of one release.
    epsilon : float or ndarray broadcastable to values.shape[:-1]
    rng : numpy.random.Generator
    secure : bool
        Snap to a power-of-two grid and add discrete Laplace noise (see the module notes).
    overwrite : bool, default=False
        Release into ``values`` itself (a float64 array the caller owns and no longer
        needs), sparing a copy of millions of reports.

    Returns
    -------
    released : ndarray of shape values.shape
    """
    if secure and values.size <= _FEW_DRAWS and _is_scalar(sensitivity) and _is_scalar(epsilon):
        released = _few_laplace_release(values, float(sensitivity), float(epsilon), rng,
                                        overwrite=overwrite)
        if released is not None:
            return released
    sensitivity = np.asarray(sensitivity, dtype=np.float64)[..., np.newaxis]
    epsilon = np.asarray(epsilon, dtype=np.float64)[..., np.newaxis]
    scale = sensitivity / epsilon
    if not secure:
        return _add_continuous(values, rng.laplace(scale=np.broadcast_to(scale, values.shape)),
                               overwrite)
    step = grid_step(scale)
    units = _laplace_units(sensitivity, epsilon, step, values.shape[-1])
    check_noise_units(units, epsilon)
    # The draws are added to the grid units block by block (no n-long noise array).
    released = _grid_units(values, step, overwrite=overwrite)
    _add_discrete_laplace(released.reshape(-1), rng, _flat_scale(units, values.shape))
    released *= step
    return released


def _add_continuous(values, noise, overwrite):
    """``values + noise`` (continuous noise, simulations only), in ``values`` with ``overwrite``."""
    if overwrite:
        values += noise
        return values
    return values + noise


def _few_laplace_release(values, sensitivity, epsilon, rng, *, overwrite=False):
    """:func:`laplace_release` (secure) of a few coordinates with one scalar sensitivity
    and epsilon, in Python floats: the same step, units, draws and float64 operations
    (``round(values / step)``, the draws added, times the step). None, before any
    draw, when a value is not finite.
    """
    step = grid_step(sensitivity / epsilon)
    units = _laplace_units(sensitivity, epsilon, step, values.shape[-1])
    if not units <= MAX_NOISE_UNITS:
        check_noise_units(units, epsilon)
    try:
        # round() is numpy's round half to even, here to an exact int.
        grid = [round(value / step) for value in values.ravel().tolist()]
    except (ValueError, OverflowError):  # NaN or infinity
        return None
    noise = _few_discrete_laplace(rng, units, len(grid))
    # An int sum is exact; its conversion rounds as numpy's float sum of the grid
    # units and the draw does, and the power-of-two step scales exactly.
    released = np.array([(unit + draw) * step for unit, draw in zip(grid, noise)],
                        dtype=np.float64).reshape(values.shape)
    if overwrite:
        values[...] = released
        return values
    return released


def _grid_units(values, step, *, overwrite=False):
    """round(values / step), C-contiguous: in ``values`` itself with ``overwrite`` (when
    it is contiguous), else in one new array."""
    released = np.divide(values, step, out=values if overwrite else None)
    if not released.flags.c_contiguous:
        released = np.ascontiguousarray(released)
    np.round(released, out=released)
    return released


def _add_on_grid(values, step, noise, *, overwrite=False):
    """(round(values / step) + noise) * step: exact multiples of step, computed in place
    on one new array (on ``values`` itself with ``overwrite``)."""
    released = _grid_units(values, step, overwrite=overwrite)
    released += noise
    released *= step
    return released


def _laplace_units(sensitivity, epsilon, step, n_coordinates):
    # Rounding moves each coordinate by at most half a step, so neighbouring rounded
    # statistics differ by at most sensitivity / step + n_coordinates steps in L1.
    return (sensitivity / step + n_coordinates) / epsilon


def laplace_variance(sensitivity, epsilon, n_coordinates, secure):
    """Per-coordinate variance of the noise :func:`laplace_release` adds.

    2 (sensitivity / epsilon)^2 for continuous noise; for secure noise the discrete
    Laplace variance 2q / (1 - q)^2 (in grid steps, q = exp(-1/units)) times step^2.
    """
    if _is_scalar(sensitivity) and _is_scalar(epsilon):
        # Python floats: the same float64 operations below, without numpy calls on
        # scalars (which cost more than the arithmetic).
        return np.float64(_laplace_variance(float(sensitivity), float(epsilon),
                                            n_coordinates, secure))
    return _laplace_variance(np.asarray(sensitivity, dtype=np.float64),
                             np.asarray(epsilon, dtype=np.float64), n_coordinates, secure)


def _laplace_variance(sensitivity, epsilon, n_coordinates, secure):
    scale = sensitivity / epsilon
    if not secure:
        return 2.0 * scale**2
    step = grid_step(scale)
    units = _laplace_units(sensitivity, epsilon, step, n_coordinates)
    # A noise that cannot be drawn has no variance: refused here too, so that a fit
    # computing its noise before charging the ledger refuses before the charge.
    if not (isinstance(units, float) and units <= MAX_NOISE_UNITS):
        check_noise_units(units, epsilon)
    return discrete_laplace_variance(units) * step**2


def gaussian_release(values, sensitivity, noise_multiplier, rng, secure, *, overwrite=False):
    """Add Gaussian noise calibrated by ``noise_multiplier`` (sigma per unit of L2 sensitivity).

    Parameters
    ----------
    values : ndarray of shape (..., d)
    sensitivity : float or ndarray broadcastable to values.shape[:-1]
        L2 sensitivity of one release.
    noise_multiplier : float or ndarray broadcastable to values.shape[:-1]
        sigma / sensitivity for the target (epsilon, delta), from
        :func:`skhybrid.mechanisms.gaussian_noise_multiplier`.
    rng : numpy.random.Generator
    secure : bool
    overwrite : bool, default=False
        Release into ``values`` itself (see :func:`laplace_release`).

    Returns
    -------
    released : ndarray of shape values.shape
    """
    sensitivity = np.asarray(sensitivity, dtype=np.float64)[..., np.newaxis]
    noise_multiplier = np.asarray(noise_multiplier, dtype=np.float64)[..., np.newaxis]
    sigma = sensitivity * noise_multiplier
    if not secure:
        return _add_continuous(values, rng.normal(scale=np.broadcast_to(sigma, values.shape)),
                               overwrite)
    step = grid_step(sigma)
    units = _gaussian_units(sensitivity, noise_multiplier, step, values.shape[-1])
    check_noise_units(units)
    return _add_on_grid(values, step, sample_discrete_gaussian(rng, units, values.shape),
                        overwrite=overwrite)


def _gaussian_units(sensitivity, noise_multiplier, step, n_coordinates):
    # Rounding adds at most one step per coordinate: sqrt(d) steps in L2.
    return (sensitivity / step + np.sqrt(n_coordinates)) * noise_multiplier


def gaussian_variance(sensitivity, noise_multiplier, n_coordinates, secure):
    """Per-coordinate variance of the noise :func:`gaussian_release` adds (sigma^2)."""
    sensitivity = np.asarray(sensitivity, dtype=np.float64)
    noise_multiplier = np.asarray(noise_multiplier, dtype=np.float64)
    sigma = sensitivity * noise_multiplier
    if not secure:
        return sigma**2
    step = grid_step(sigma)
    units = _gaussian_units(sensitivity, noise_multiplier, step, n_coordinates)
    check_noise_units(units)  # as in _laplace_variance
    return (units * step) ** 2


def personalized_laplace_release(values, user_sensitivity, user_epsilon, rng, secure):
    """Laplace noise that protects user i at their own epsilon_i (heterogeneous DP).

    The statistic (for example a weighted sum ``sum_i w_i x_i``) moves by at most
    ``user_sensitivity[i]`` in L1 when user i's value is replaced; the smallest Laplace
    scale that makes the release epsilon_i-DP for every user i is
    ``max_i user_sensitivity[i] / epsilon_i`` (Chaudhuri and Courtade, Lemma 1). With
    secure noise each user's rounding slack of one step per coordinate is charged too.

    Parameters
    ----------
    values : ndarray of shape (..., d)
    user_sensitivity : ndarray of shape (n_users,)
        Users with 0 sensitivity (weight 0) or infinite epsilon (public) need no noise.
    user_epsilon : ndarray of shape (n_users,)
    rng : numpy.random.Generator
    secure : bool

    Returns
    -------
    released : ndarray of shape values.shape
    scale : float
        The nominal Laplace scale.
    """
    scale, units, step = _personalized_units(user_sensitivity, user_epsilon, values.shape[-1])
    if scale == 0.0:
        return values.copy(), 0.0
    if not secure:
        return values + rng.laplace(scale=scale, size=values.shape), scale
    check_noise_units(units, user_epsilon[(user_sensitivity > 0) & np.isfinite(user_epsilon)])
    return _add_on_grid(values, step, sample_discrete_laplace(rng, units, values.shape)), scale


def _personalized_units(user_sensitivity, user_epsilon, n_coordinates):
    private = (user_sensitivity > 0) & np.isfinite(user_epsilon)
    if not private.any():
        return 0.0, 0.0, 1.0
    sensitivity, epsilon = user_sensitivity[private], user_epsilon[private]
    scale = float(np.max(sensitivity / epsilon))
    step = grid_step(scale)
    units = float(np.max(_laplace_units(sensitivity, epsilon, step, n_coordinates)))
    return scale, units, step


def personalized_laplace_variance(user_sensitivity, user_epsilon, n_coordinates, secure):
    """Per-coordinate variance of the noise :func:`personalized_laplace_release` adds."""
    scale, units, step = _personalized_units(user_sensitivity, user_epsilon, n_coordinates)
    if scale == 0.0:
        return 0.0
    if not secure:
        return 2.0 * scale**2
    check_noise_units(units, user_epsilon[(user_sensitivity > 0) & np.isfinite(user_epsilon)])
    return float(discrete_laplace_variance(units) * step**2)
