"""Closed-form theory of the mixed (per-group) estimators and of the PDP Sample mechanism.

Ferrando, Gillenwater and Kulesza, "Combining Public and Private Data" (PriML workshop at
NeurIPS 2021), Sec. 2: users are grouped by privacy level epsilon_i (``np.inf`` = public);
each group's mean gets its own Laplace noise and the group estimates are mixed with
inverse-variance weights (Rubin and Weisberg 1975). Their baseline is the Sample mechanism
of Jorgensen, Yu and Cormode (ICDE 2015), called SM by Chaudhuri and Courtade (Sec. IV-A):
keep user i with probability min(1, (exp(epsilon_i) - 1) / (exp(t) - 1)) and release the
kept users' mean with t-DP Laplace noise.

Conventions shared by every function here:

- Neighbouring relation: replace one user's value, group sizes public (Ferrando's "swap
  model"). A group mean of n values in [lower, upper] then has sensitivity
  ``data_range / n`` with ``data_range = upper - lower``. Ferrando et al. write the sum's
  sensitivity as r = max(|a|, |b|), which is the add/remove sensitivity; under replacement
  it is b - a (up to twice r for bounds symmetric about 0). Pass ``data_range=r`` to
  reproduce the paper's numbers literally.
- ``variance`` is the variance sigma^2 of one user's (clipped) value, known or the worst
  case ``data_range**2 / 4``. Variances and mean squared errors are about the population
  mean, as in Ferrando's Figure 1; :func:`mse_about_empirical_mean` converts them to the
  error about the empirical mean of the data.
- Noise is continuous Laplace, variance 2 b^2 for scale b; its formula lives in
  :func:`skhybrid.mechanisms._noise.laplace_variance`.
- Arrays broadcast with numpy's rules; group arrays (sizes, epsilons) lie along the last
  axis. For per-feature values pass ``data_range`` / ``variance`` of shape
  ``(n_features, 1)``.
"""

import numpy as np
from scipy.optimize import minimize_scalar

from ..mechanisms._noise import laplace_variance
from ..utils._level_index import LevelIndex
from ..utils._validation import check_epsilon

__all__ = [
    "group_mean_noise_scale",
    "group_mean_variance",
    "inverse_variance_weights",
    "mixed_mean_variance",
    "mixed_mean_weights",
    "mixed_quantile_weights",
    "mse_about_empirical_mean",
    "optimal_sample_threshold",
    "sample_mechanism_mse",
    "sample_mechanism_probabilities",
    "sample_mechanism_thresholds",
]

# Grid points per interval between consecutive distinct epsilons in the threshold search,
# fewer when there are many intervals (then each is narrow, and the refinement between the
# best point's neighbours finds the minimum): at most about _MAX_GRID_POINTS in all.
_GRID_POINTS_PER_INTERVAL = 16
_MAX_GRID_POINTS = 2**16


def _check_array(values, name, *, allow_zero=False, allow_inf=False):
    """Float array of ``values``, each > 0 (or >= 0), finite unless ``allow_inf``."""
    array = np.asarray(values, dtype=np.float64)
    bad = ~(array >= 0) if allow_zero else ~(array > 0)
    if not allow_inf:
        bad |= np.isinf(array)
    if bad.any():
        index = tuple(int(i) for i in np.unravel_index(np.argmax(bad), array.shape))
        expected = (">= 0" if allow_zero else "> 0") + ("" if allow_inf else " and finite")
        where = f" at index {index[0] if array.ndim == 1 else index}" if array.ndim else ""
        raise ValueError(f"{name} must be {expected}; got {float(array[index])!r}{where}")
    return array


def _check_user_epsilon(epsilon):
    """Per-user privacy levels as a 1-d float array (``np.inf`` = public user)."""
    return np.atleast_1d(check_epsilon(epsilon, allow_inf=True))


def _levels_and_counts(epsilon, counts):
    """Sorted distinct privacy levels and their numbers of users.

    Without ``counts`` each entry of ``epsilon`` is one user; with them, entry i stands
    for ``counts[i]`` users (the level form: nothing per-user is needed).
    """
    epsilon = _check_user_epsilon(epsilon)
    if counts is None:
        return np.unique(epsilon, return_counts=True)
    counts = _check_array(counts, "counts")
    if counts.shape != epsilon.shape:
        raise ValueError(
            f"counts must have one entry per entry of epsilon ({epsilon.shape}); got "
            f"shape {counts.shape}"
        )
    if np.all(epsilon[1:] > epsilon[:-1]):  # already distinct and sorted (the estimators')
        return epsilon, counts
    levels, inverse = np.unique(epsilon, return_inverse=True)
    return levels, np.bincount(inverse.ravel(), weights=counts, minlength=levels.size)


def _as_result(array):
    """A float for 0-d results, else the array."""
    return float(array) if np.ndim(array) == 0 else array


def _group_mean_variance(group_size, epsilon, data_range, variance):
    # Unvalidated core of group_mean_variance; an empty group has infinite variance.
    with np.errstate(divide="ignore", invalid="ignore"):
        sensitivity = data_range / group_size
        result = variance / group_size + laplace_variance(
            sensitivity, epsilon, n_coordinates=1, secure=False
        )
    return np.where(group_size > 0, result, np.inf)


def _log_expm1(x):
    # log(e^x - 1), without overflow for large x; inf at x = inf.
    with np.errstate(over="ignore", divide="ignore"):
        return np.where(x > 1.0, x + np.log1p(-np.exp(-x)), np.log(np.expm1(x)))


def _expected_kept_count(epsilon_values, counts):
    """Function t -> (sum_i counts_i p_i(t), sum_i counts_i p_i(t)**2): the Sample
    mechanism's expected kept count and the sum of squared keep probabilities.

    ``epsilon_values`` are sorted distinct levels (``np.unique``). Users with
    epsilon >= t count fully; the rest contribute sum n_i (e^eps_i - 1) / (e^t - 1)
    (and its square), from prefix sums kept in log space. Each threshold then costs
    O(log k) for k distinct levels instead of O(k), which keeps the search for t_opt
    fast when every user has their own epsilon.
    """
    finite = np.isfinite(epsilon_values)
    log_counts, log_gaps = np.log(counts[finite]), _log_expm1(epsilon_values[finite])
    log_prefix = np.concatenate([[-np.inf], np.logaddexp.accumulate(log_counts + log_gaps)])
    log_square_prefix = np.concatenate(
        [[-np.inf], np.logaddexp.accumulate(log_counts + 2.0 * log_gaps)])
    count_at_or_above = np.concatenate([np.cumsum(counts[::-1])[::-1], [0]])

    def expected_count(threshold):
        # Levels below a threshold are finite, so ``below`` indexes the prefixes.
        below = np.searchsorted(epsilon_values, threshold, side="left")
        log_denominator = _log_expm1(threshold)
        full = count_at_or_above[below]
        return (full + np.exp(log_prefix[below] - log_denominator),
                full + np.exp(log_square_prefix[below] - 2.0 * log_denominator))

    return expected_count


def _sample_mse(expected_count, threshold, data_range, variance, mean_offset=0.0):
    # The Sample mechanism's error: a group of the expected kept size D at epsilon = t,
    # plus the spread of the kept count about D, (mu - c)**2 sum_i p_i (1 - p_i) / D**2.
    threshold = np.asarray(threshold, dtype=np.float64)
    kept, squares = expected_count(threshold)
    with np.errstate(divide="ignore", invalid="ignore"):
        count_spread = np.where(kept > 0, (kept - squares) / (kept * kept), 0.0)
    return (_group_mean_variance(kept, threshold, data_range, variance)
            + np.square(mean_offset) * count_spread)


def sample_mechanism_probabilities(epsilon, threshold):
    """Probability that the Sample mechanism keeps each user.

    Jorgensen, Yu and Cormode 2015 (the Sample mechanism), as restated by Ferrando et al.
    Sec. 2 ("Comparison with baseline method"): user i is kept independently with
    probability min(1, (exp(epsilon_i) - 1) / (exp(t) - 1)), so users with
    epsilon_i >= t (and public users) are always kept.

    Parameters
    ----------
    epsilon : float or array-like of shape (n_samples,)
        Per-user privacy levels, > 0; ``np.inf`` is a public user.
    threshold : float or array-like
        The threshold t > 0 (``np.inf`` keeps only public users); broadcasts with
        ``epsilon``.

    Returns
    -------
    probabilities : ndarray
        Keep probabilities in [0, 1], of the broadcast shape.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(sample_mechanism_probabilities([0.5, 1.0, 2.0, np.inf], 1.0), 4).tolist()
    [0.3775, 1.0, 1.0, 1.0]
    """
    epsilon = _check_user_epsilon(epsilon)
    threshold = _check_array(threshold, "threshold", allow_inf=True)
    if threshold.ndim == 0 and epsilon.size > 1024 and not np.all(epsilon[1:] > epsilon[:-1]):
        # Millions of users on far fewer levels: one formula per level, then spread
        # (distinct sorted levels, the estimators' per-level form, need no grouping).
        index = LevelIndex(epsilon)
        return index.spread(_keep_probability(index.levels, threshold))
    return _keep_probability(*np.broadcast_arrays(epsilon, threshold))


def _keep_probability(epsilon, threshold):
    # (e^eps - 1) / (e^t - 1) = e^(eps - t) (1 - e^-eps) / (1 - e^-t): no overflow for
    # large eps or t, and 0 for finite eps when t = inf. Only users below t need it.
    probabilities = np.ones(np.broadcast(epsilon, threshold).shape)
    epsilon, threshold = np.broadcast_arrays(epsilon, threshold)
    below = epsilon < threshold
    eps, t = epsilon[below], threshold[below]
    with np.errstate(over="ignore", invalid="ignore"):
        probabilities[below] = np.exp(eps - t) * (-np.expm1(-eps)) / (-np.expm1(-t))
    return probabilities


def sample_mechanism_thresholds(epsilon):
    """The named thresholds t of the Sample mechanism: ``"min"``, ``"mean"`` and ``"max"``.

    Ferrando et al. Sec. 3 ("Means"), following Jorgensen et al. 2015: t is the minimum
    epsilon among the groups or "the average of the epsilon values across groups", or the
    largest epsilon (Chaudhuri and Courtade Sec. IV-A use t = max_i epsilon_i).

    Parameters
    ----------
    epsilon : array-like of shape (n_samples,)
        Per-user privacy levels, > 0; ``np.inf`` is a public user.

    Returns
    -------
    thresholds : dict
        ``{"min": float, "mean": float, "max": float}``.

    Notes
    -----
    A group is a distinct epsilon value. ``"mean"`` is the unweighted mean over the
    distinct *finite* values: Ferrando's Figure 1 reports t_average = 1.76 for groups
    epsilon = [10, 0.05, 0.1, 0.01, 0.25, 0.15] whatever their sizes, which is the
    unweighted group average (a per-user average would move with n). Public users are
    excluded from ``"min"`` and ``"mean"`` (they would make the mean infinite and they
    need no protection); ``"max"`` is ``np.inf`` when any user is public, as in
    Chaudhuri and Courtade's SM, which then "disregards" the private users. With only
    public users all three are ``np.inf``.

    Examples
    --------
    >>> import numpy as np
    >>> thresholds = sample_mechanism_thresholds([0.1, 0.1, 0.5, np.inf])
    >>> thresholds["min"], round(thresholds["mean"], 6), thresholds["max"]
    (0.1, 0.3, inf)
    """
    values = np.unique(_check_user_epsilon(epsilon))
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return {"min": np.inf, "mean": np.inf, "max": np.inf}
    return {"min": float(finite[0]), "mean": float(finite.mean()), "max": float(values[-1])}


def sample_mechanism_mse(epsilon, threshold, *, data_range, variance, counts=None,
                         mean_offset=0.0):
    """Expected squared error of the Sample mechanism's mean, about the population mean.

    Ferrando et al. Sec. 2: with m users kept, the estimate is their mean plus
    Lap(r / t) / m, of variance (m sigma^2 + 2 (r / t)^2) / m^2; like the paper's bound
    (with n_priv * p_hat kept points) we plug in the expected kept count
    m = sum_i p_i(t). This is the "PDP joint variance" minimised for t_optimized.
    skhybrid divides by that public count D instead of the realised one (see
    :class:`~skhybrid.PDPSampleEstimator`), which adds the kept count's spread:
    ``mean_offset**2 sum_i p_i (1 - p_i) / D**2`` (derived here).

    Parameters
    ----------
    epsilon : array-like of shape (n_samples,)
        Per-user privacy levels, > 0; ``np.inf`` is a public user.
    threshold : float or array-like
        The threshold t > 0, or ``np.inf``; an array gives one error per threshold.
    data_range : float or array-like
        upper - lower: one user's largest change to a sum under replacement (r in the
        paper).
    variance : float or array-like
        Variance of one user's clipped value (sigma^2), >= 0.
    counts : array-like of shape (n_samples,), default=None
        Users per entry of ``epsilon`` (the level form); None: one user each.
    mean_offset : float or array-like, default=0.0
        ``|mu - c|``, the distance from the data's mean to the centre of the bounds (the
        origin of the centred sum). 0 gives the paper's formula, which is exact for a
        divisor equal to the realised count.

    Returns
    -------
    mse : float or ndarray
        Of the broadcast shape of ``threshold``, ``data_range``, ``variance`` and
        ``mean_offset``; ``np.inf`` when no user is kept.

    Notes
    -----
    Derived again from the paper's definitions: the kept users' mean has variance
    sigma^2 / m given m, and the t-DP Laplace noise on it has scale
    data_range / (m t) (:func:`group_mean_noise_scale` with the kept set as the group),
    i.e. exactly :func:`group_mean_variance` of a group of m users at epsilon t. The
    plug-in m = E[kept] is a first-order approximation; by Jensen's inequality the exact
    expectation over the random count is slightly larger, by a relative O(1 / m).

    With the public divisor D = sum_i p_i and the release
    ``c + (sum_i B_i (x_i - c) + Z) / D``, B_i ~ Bernoulli(p_i) independent of i.i.d.
    x_i of mean mu: Var(sum_i B_i (x_i - c)) = sum_i p_i (sigma^2 + (mu - c)^2) -
    p_i^2 (mu - c)^2 = sigma^2 D + (mu - c)^2 sum_i p_i (1 - p_i), which is the
    formula with ``mean_offset = |mu - c|`` and m = D, exactly (no plug-in). On data
    near one bound (salaries, most skewed data) this term dominates when users are
    subsampled.

    Examples
    --------
    >>> import numpy as np
    >>> epsilon = np.repeat([1.0, np.inf], [100, 100])
    >>> round(sample_mechanism_mse(epsilon, 1.0, data_range=1.0, variance=0.25), 8)
    0.0013
    """
    epsilon_values, counts = _levels_and_counts(epsilon, counts)
    threshold = _check_array(threshold, "threshold", allow_inf=True)
    data_range = _check_array(data_range, "data_range")
    variance = _check_array(variance, "variance", allow_zero=True)
    mean_offset = _check_array(mean_offset, "mean_offset", allow_zero=True)
    expected_count = _expected_kept_count(epsilon_values, counts)
    return _as_result(_sample_mse(expected_count, threshold, data_range, variance,
                                  mean_offset))


def optimal_sample_threshold(epsilon, *, data_range, variance, counts=None, mean_offset=0.0):
    """The threshold t that minimises :func:`sample_mechanism_mse` (Ferrando's t_opt).

    Ferrando et al. Sec. 3 and Figure 1: "t_optimized is the optimal threshold obtained
    by minimizing the PDP joint variance".

    Parameters
    ----------
    epsilon : array-like of shape (n_samples,)
        Per-user privacy levels, > 0; ``np.inf`` is a public user.
    data_range : float or array-like
        upper - lower, as in :func:`sample_mechanism_mse`.
    variance : float or array-like
        Variance of one user's clipped value, >= 0.
    counts : array-like of shape (n_samples,), default=None
        Users per entry of ``epsilon`` (the level form); None: one user each.
    mean_offset : float, default=0.0
        ``|mu - c|``, as in :func:`sample_mechanism_mse`.

    Returns
    -------
    threshold : float or ndarray
        One threshold per broadcast entry of ``data_range`` and ``variance``; ``np.inf``
        when keeping only the public users is best (or every user is public).

    Notes
    -----
    The error is continuous in t with kinks at the distinct epsilon values (where a group
    starts being subsampled), and the minimum can lie at a kink *or* between two of them,
    so searching the distinct epsilons alone is not enough. Below the smallest epsilon
    every user is kept and the error falls as t grows; above the largest finite epsilon,
    without public users, both the kept count and t * count fall, so the error grows. The
    search therefore covers [min epsilon, max finite epsilon], plus (max finite epsilon,
    inf] (parametrised by 1/t) when there are public users: the error is evaluated at
    the kinks and at grid points between them, and the best point is refined by bounded
    Brent minimisation between its grid neighbours.

    Examples
    --------
    >>> import numpy as np
    >>> optimal_sample_threshold(np.full(50, 0.5), data_range=1.0, variance=0.25)
    0.5
    """
    epsilon_values, counts = _levels_and_counts(epsilon, counts)
    data_range = _check_array(data_range, "data_range")
    variance = _check_array(variance, "variance", allow_zero=True)
    shape = np.broadcast_shapes(data_range.shape, variance.shape)
    thresholds = np.empty(shape)
    for index in np.ndindex(shape):
        thresholds[index] = _optimal_threshold_grouped(
            epsilon_values,
            counts,
            float(np.broadcast_to(data_range, shape)[index]),
            float(np.broadcast_to(variance, shape)[index]),
            float(mean_offset),
        )
    return _as_result(thresholds)


def _optimal_threshold_grouped(epsilon_values, counts, data_range, variance, mean_offset):
    finite = epsilon_values[np.isfinite(epsilon_values)]
    if finite.size == 0:
        return np.inf
    has_public = finite.size < epsilon_values.size

    expected_count = _expected_kept_count(epsilon_values, counts)

    def mse(threshold):
        return _sample_mse(expected_count, threshold, data_range, variance, mean_offset)

    # Candidates in increasing order: the kinks and log-spaced points between them ...
    points = max(1, min(_GRID_POINTS_PER_INTERVAL, _MAX_GRID_POINTS // max(finite.size - 1, 1)))
    fractions = np.arange(1, points + 1) / (points + 1)
    log_kinks = np.log(finite)
    between = log_kinks[:-1, np.newaxis] + np.diff(log_kinks)[:, np.newaxis] * fractions
    # Each kink, then the points after it (clipped into their interval against the
    # rounding of exp and log): non-decreasing by construction, no sort needed.
    between = np.clip(np.exp(between), finite[:-1, np.newaxis], finite[1:, np.newaxis])
    candidates = np.append(np.column_stack([finite[:-1], between]).ravel(), finite[-1])
    if has_public:
        # ... and beyond the largest finite epsilon, up to t = inf, evenly in 1/t.
        inverse_tail = np.append((1.0 - fractions) / finite[-1], 0.0)
        with np.errstate(divide="ignore"):
            tail = 1.0 / inverse_tail
        candidates = np.concatenate([candidates, tail])
    errors = mse(candidates)
    best = int(np.argmin(errors))
    best_threshold, best_error = candidates[best], errors[best]
    if not np.isfinite(best_error):
        return float(best_threshold)
    low = candidates[max(best - 1, 0)]
    high = candidates[min(best + 1, candidates.size - 1)]
    if low == high:
        return float(best_threshold)
    if np.isinf(high):
        # Refine in u = 1/t so that u = 0 (t = inf) is an ordinary bound.
        result = minimize_scalar(
            lambda u: mse(1.0 / u) if u > 0 else mse(np.inf),
            bounds=(0.0, 1.0 / low),
            method="bounded",
            options={"xatol": 1e-12 / low},
        )
        refined = 1.0 / result.x if result.x > 0 else np.inf
    else:
        result = minimize_scalar(
            lambda log_t: mse(np.exp(log_t)),
            bounds=(np.log(low), np.log(high)),
            method="bounded",
            options={"xatol": 1e-12},
        )
        refined = float(np.exp(result.x))
    # Keep the grid point (often an exact kink) unless refinement is clearly better.
    if result.fun < best_error * (1.0 - 1e-12):
        return float(refined)
    return float(best_threshold)


def group_mean_noise_scale(group_size, epsilon, data_range):
    """Laplace scale of one group's epsilon-DP mean: ``data_range / (group_size * epsilon)``.

    Ferrando et al. Sec. 2 ("Means"): group i releases (Sigma_i + z_i) / n_i with
    z_i ~ Lap(r / epsilon_i), i.e. noise of scale r / (n_i epsilon_i) on its mean.

    Under the module's neighbouring relation (replace one user's value, group sizes
    public) the group sum moves by at most ``data_range = upper - lower``. The same
    formula gives the Sample mechanism's scale with the kept count as ``group_size``
    and the threshold t as ``epsilon``.

    Parameters
    ----------
    group_size : float or array-like
        Number of users in the group, > 0.
    epsilon : float or array-like
        The group's privacy level, > 0; ``np.inf`` (public) gives scale 0.
    data_range : float or array-like
        upper - lower, > 0.

    Returns
    -------
    scale : float or ndarray
        Of the broadcast shape.

    Examples
    --------
    >>> import numpy as np
    >>> group_mean_noise_scale([100, 100], [0.5, np.inf], 2.0).tolist()
    [0.04, 0.0]
    """
    group_size = _check_array(group_size, "group_size")
    epsilon = _check_array(epsilon, "epsilon", allow_inf=True)
    data_range = _check_array(data_range, "data_range")
    return _as_result(data_range / group_size / epsilon)


def group_mean_variance(group_size, epsilon, *, data_range, variance):
    """Variance of one group's Laplace mean estimate: sigma^2 / n + 2 (range / (n epsilon))^2.

    Ferrando et al. Sec. 2, the summand of s_joint: Var_i = (n_i sigma^2 + 2 r^2 /
    epsilon_i^2) / n_i^2, sampling variance of the group mean plus the variance of its
    Laplace noise (:func:`group_mean_noise_scale`). A public group (epsilon = inf) has
    sampling variance only.

    Parameters
    ----------
    group_size : float or array-like
        Number of users in the group, > 0 (need not be an integer: an expected count).
    epsilon : float or array-like
        The group's privacy level, > 0; ``np.inf`` for public data.
    data_range : float or array-like
        upper - lower, > 0.
    variance : float or array-like
        Variance of one user's clipped value (sigma^2), >= 0.

    Returns
    -------
    group_variance : float or ndarray
        Of the broadcast shape.

    Examples
    --------
    >>> import numpy as np
    >>> group_mean_variance([100, 100], [1.0, np.inf], data_range=1.0, variance=0.25).tolist()
    [0.0027, 0.0025]
    """
    group_size = _check_array(group_size, "group_size")
    epsilon = _check_array(epsilon, "epsilon", allow_inf=True)
    data_range = _check_array(data_range, "data_range")
    variance = _check_array(variance, "variance", allow_zero=True)
    return _as_result(_group_mean_variance(group_size, epsilon, data_range, variance))


def inverse_variance_weights(variances, *, axis=-1):
    """Convex weights proportional to 1 / variance: the minimum-variance mixture.

    Ferrando et al. Sec. 2, after Rubin and Weisberg 1975 (point 2 of their Theorem):
    among unbiased convex combinations of independent unbiased estimators, the variance
    is smallest with beta_i proportional to 1 / Var_i.

    Parameters
    ----------
    variances : array-like
        Variances of the estimators, >= 0; ``np.inf`` is an estimator without
        information.
    axis : int, default=-1
        The axis that indexes the estimators; the weights sum to 1 along it.

    Returns
    -------
    weights : ndarray
        Same shape as ``variances``.

    Raises
    ------
    ValueError
        For negative or NaN variances, or when every variance along ``axis`` is infinite.

    Notes
    -----
    Zero variances take the limit of 1 / variance: the zero-variance estimators share
    the weight equally (any mixture of them has variance 0) and the others get 0.
    Infinite variances get weight 0.

    Examples
    --------
    >>> inverse_variance_weights([1.0, 3.0]).tolist()
    [0.75, 0.25]
    >>> import numpy as np
    >>> inverse_variance_weights([0.0, 2.0, np.inf]).tolist()
    [1.0, 0.0, 0.0]
    """
    variances = _check_array(variances, "variances", allow_zero=True, allow_inf=True)
    if variances.ndim == 0:
        raise ValueError("variances must have one entry per estimator; got a scalar")
    if np.isinf(variances).all(axis=axis).any():
        raise ValueError(
            "at least one variance along the estimator axis must be finite; got all inf"
        )
    is_zero = variances == 0
    has_zero = is_zero.any(axis=axis, keepdims=True)
    with np.errstate(divide="ignore"):
        precision = np.where(has_zero, is_zero.astype(np.float64), 1.0 / variances)
    return precision / precision.sum(axis=axis, keepdims=True)


def mixed_mean_weights(group_sizes, epsilon, *, data_range, variance):
    """Ferrando's mixing weights beta_i of the group means (inverse-variance weights).

    Ferrando et al. Sec. 2: beta_i proportional to n_i^2 / (n_i sigma^2 + 2 r^2 /
    epsilon_i^2) = 1 / :func:`group_mean_variance`; for a public group this is
    n_i / sigma^2.

    Parameters
    ----------
    group_sizes : array-like of shape (n_groups,)
        Users per group, > 0.
    epsilon : array-like of shape (n_groups,)
        Each group's privacy level, > 0; ``np.inf`` for the public group.
    data_range : float or array-like
        upper - lower, > 0; shape ``(n_features, 1)`` gives weights per feature.
    variance : float or array-like
        Variance of one user's clipped value (sigma^2), >= 0.

    Returns
    -------
    weights : ndarray of shape (..., n_groups)
        Sum to 1 along the last axis.

    Notes
    -----
    With sigma^2 = 0 the public groups' variances vanish; the weights are then the limit
    as sigma^2 -> 0 of beta_i proportional to n_i / sigma^2: proportional to group size
    over the public groups, 0 for the private ones (the pooled public mean).

    Examples
    --------
    >>> import numpy as np
    >>> weights = mixed_mean_weights([100, 100], [1.0, np.inf], data_range=1.0, variance=0.25)
    >>> np.round(weights, 4).tolist()
    [0.4808, 0.5192]
    """
    group_sizes, epsilon = _check_groups(group_sizes, epsilon)
    data_range = _check_array(data_range, "data_range")
    variance = _check_array(variance, "variance", allow_zero=True)
    variances = _group_mean_variance(group_sizes, epsilon, data_range, variance)
    is_public = np.isinf(epsilon)
    if is_public.any():
        variances = np.where(
            variance == 0, np.where(is_public, 1.0 / group_sizes, np.inf), variances
        )
    return inverse_variance_weights(variances)


def _check_groups(group_sizes, epsilon):
    group_sizes = _check_array(group_sizes, "group_sizes")
    epsilon = _check_array(epsilon, "epsilon", allow_inf=True)
    if group_sizes.ndim != 1 or group_sizes.shape != epsilon.shape:
        raise ValueError(
            "group_sizes and epsilon must be 1-d with one entry per group; got shapes "
            f"{group_sizes.shape} and {epsilon.shape}"
        )
    return group_sizes, epsilon


def mixed_mean_variance(group_sizes, epsilon, *, data_range, variance, weights=None):
    """Variance of the mixed mean sum_i beta_i (Sigma_i + z_i) / n_i.

    Ferrando et al. Sec. 2: s_joint = sum_i beta_i^2 (n_i sigma^2 + 2 r^2 / epsilon_i^2)
    / n_i^2, i.e. sum_i beta_i^2 Var_i for independent group estimates; with the optimal
    weights it equals 1 / sum_i (1 / Var_i).

    Parameters
    ----------
    group_sizes : array-like of shape (n_groups,)
        Users per group, > 0.
    epsilon : array-like of shape (n_groups,)
        Each group's privacy level, > 0; ``np.inf`` for the public group.
    data_range : float or array-like
        upper - lower, > 0; shape ``(n_features, 1)`` gives one variance per feature.
    variance : float or array-like
        Variance of one user's clipped value (sigma^2), >= 0.
    weights : array-like of shape (..., n_groups), default=None
        Mixing weights; ``None`` uses :func:`mixed_mean_weights`.

    Returns
    -------
    mixed_variance : float or ndarray
        The variance about the population mean (see :func:`mse_about_empirical_mean`).

    Examples
    --------
    >>> import numpy as np
    >>> round(mixed_mean_variance([100, 100], [1.0, np.inf], data_range=1.0, variance=0.25), 8)
    0.00129808
    """
    group_sizes, epsilon = _check_groups(group_sizes, epsilon)
    data_range = _check_array(data_range, "data_range")
    variance = _check_array(variance, "variance", allow_zero=True)
    if weights is None:
        weights = mixed_mean_weights(
            group_sizes, epsilon, data_range=data_range, variance=variance
        )
    weights = _check_array(weights, "weights", allow_zero=True)
    variances = _group_mean_variance(group_sizes, epsilon, data_range, variance)
    # A group with weight 0 contributes nothing, even if its variance is infinite.
    with np.errstate(invalid="ignore"):
        terms = np.where(weights == 0, 0.0, weights**2 * variances)
    return _as_result(terms.sum(axis=-1))


def mixed_quantile_weights(group_sizes, epsilon, *, data_range, variance):
    """Weights that mix the per-group exponential-mechanism quantiles: the mean's weights.

    Ferrando et al. Sec. 2 ("Quantiles"): one exponential mechanism per group with Smith's
    (2011) utility, then "we re-use the mixing weights derived for the computation of
    means"; a weighting tailored to the exponential mechanism is left to future work
    (Sec. 4). So these are :func:`mixed_mean_weights`, computed from the group sizes,
    epsilons, data range and data variance.

    Parameters
    ----------
    group_sizes : array-like of shape (n_groups,)
        Users per group, > 0.
    epsilon : array-like of shape (n_groups,)
        Each group's privacy level, > 0; ``np.inf`` for the public group.
    data_range : float or array-like
        upper - lower, > 0.
    variance : float or array-like
        Variance of one user's clipped value (sigma^2), >= 0.

    Returns
    -------
    weights : ndarray of shape (..., n_groups)
        Sum to 1 along the last axis.
    """
    return mixed_mean_weights(group_sizes, epsilon, data_range=data_range, variance=variance)


def mse_about_empirical_mean(population_mse, *, n_samples, variance):
    """Convert an expected squared error about the population mean to one about the data's mean.

    Derived here (not in the papers): for an estimate sum_j w_j x_j + noise with weights
    summing to 1, independent zero-mean noise and i.i.d. x_j of variance sigma^2,
    Cov(estimate, x_bar) = sigma^2 / n, so E[(estimate - x_bar)^2] =
    E[(estimate - mu)^2] - sigma^2 / n. It applies to the mixed mean and, given the kept
    set, to the Sample mechanism. With the worst-case sigma^2 the result is still an upper
    bound: it is sigma^2 (sum_j w_j^2 - 1 / n) + noise, increasing in sigma^2.

    Parameters
    ----------
    population_mse : float or array-like
        E[(estimate - mu)^2], e.g. from :func:`mixed_mean_variance` or
        :func:`sample_mechanism_mse`.
    n_samples : int
        Number of users in the data, > 0.
    variance : float or array-like
        The sigma^2 used to compute ``population_mse``, >= 0.

    Returns
    -------
    mse : float or ndarray
        E[(estimate - x_bar)^2].

    Examples
    --------
    >>> round(mse_about_empirical_mean(0.0030, n_samples=200, variance=0.25), 8)
    0.00175
    """
    population_mse = _check_array(
        population_mse, "population_mse", allow_zero=True, allow_inf=True
    )
    n_samples = _check_array(n_samples, "n_samples")
    variance = _check_array(variance, "variance", allow_zero=True)
    return _as_result(population_mse - variance / n_samples)
