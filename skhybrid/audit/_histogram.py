"""Empirical privacy audit by histograms of a mechanism's outputs on neighbouring datasets.

For neighbouring datasets A and B, (epsilon, delta)-DP requires, for every set S of
outputs, P_A(S) <= exp(epsilon) P_B(S) + delta. Binning the outputs is post-processing,
so the binned distributions satisfy the same inequality, and

    delta_hat = sum over bins b of max(0, P_A(b) - exp(epsilon) P_B(b))

is a lower bound on the delta the mechanism actually achieves at epsilon (the method of
Google's statistical tests for differential privacy). The audit estimates delta_hat in
both directions from samples and fails when it exceeds delta by more than sampling noise
can explain.

Tolerance
---------
Write D_b = P_A(b) - exp(epsilon) P_B(b) and D_hat_b for its plug-in estimate from N
samples of each side; Var(D_hat_b) = v_b = (p_A (1 - p_A) + exp(2 epsilon) p_B (1 - p_B)) / N.
As max(0, .) is 1-Lipschitz, delta_hat - delta <= sum over b in C of (D_hat_b - D_b),
where C holds the bins with D_hat_b > 0. We bound that sum over the candidate bins
C' = {b : D_hat_b > -z sd_b} (bins further below zero contribute nothing to delta_hat
and, with overwhelming probability, have D_b < 0) by its mean plus z standard deviations:

    tolerance = sum over C' of sd_b / sqrt(2 pi) + z sqrt(sum over C' of v_b), z = 4,

with v_b estimated from the sample frequencies. This is conservative, so a pass does
not prove privacy; the control tests (the same mechanism with its noise divided by 1.4
must fail) show the audit has power.
"""

from dataclasses import dataclass

import numpy as np

from ..utils._random import check_random_state

_Z = 4.0
_MAX_CATEGORIES = 1000


@dataclass(frozen=True)
class AuditResult:
    """Outcome of a histogram privacy audit.

    Attributes
    ----------
    epsilon, delta : float
        The guarantee audited.
    delta_hat : float
        The larger of the two directions' estimates.
    tolerance : float
        Sampling tolerance for that direction.
    n_samples : int
        Outputs drawn on each dataset.
    n_bins : int
    """

    epsilon: float
    delta: float
    delta_hat: float
    tolerance: float
    n_samples: int
    n_bins: int

    @property
    def passed(self):
        """True when delta_hat <= delta + tolerance."""
        return self.delta_hat <= self.delta + self.tolerance

    def __str__(self):
        verdict = "passed" if self.passed else "FAILED"
        return (
            f"privacy audit {verdict}: delta_hat={self.delta_hat:.4g} vs delta={self.delta:.4g} "
            f"+ tolerance={self.tolerance:.4g} at epsilon={self.epsilon:.4g} "
            f"({self.n_samples} samples per side, {self.n_bins} bins)"
        )


def _bin_edges(pooled, n_bins):
    """Equal-mass bins of the pooled outputs, or one bin per value for discrete outputs."""
    values = np.unique(pooled)
    if values.size <= _MAX_CATEGORIES:
        return values, True
    edges = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, n_bins + 1)[1:-1]))
    return edges, False


def _frequencies(samples, edges, categorical):
    if categorical:
        index = np.searchsorted(edges, samples)
        return np.bincount(index, minlength=edges.size) / samples.size
    index = np.searchsorted(edges, samples, side="right")
    return np.bincount(index, minlength=edges.size + 1) / samples.size


def _one_direction(p_a, p_b, epsilon, n_samples):
    exp_eps = np.exp(epsilon)
    difference = p_a - exp_eps * p_b
    variance = (p_a * (1 - p_a) + exp_eps**2 * p_b * (1 - p_b)) / n_samples
    sd = np.sqrt(variance)
    candidates = difference > -_Z * sd
    delta_hat = float(np.sum(np.maximum(difference, 0.0)))
    tolerance = float(
        np.sum(sd[candidates]) / np.sqrt(2 * np.pi) + _Z * np.sqrt(np.sum(variance[candidates]))
    )
    return delta_hat, tolerance


def audit_samples(samples_a, samples_b, epsilon, delta=0.0, *, n_bins=50):
    """Audit (epsilon, delta)-DP from outputs of a mechanism on two neighbouring datasets.

    Parameters
    ----------
    samples_a, samples_b : array-like of shape (n_samples,)
        Independent scalar outputs on datasets A and B (project vector outputs first).
        Both sides must have the same number of samples.
    epsilon : float
    delta : float, default=0.0
    n_bins : int, default=50
        Equal-mass bins of the pooled outputs; outputs with at most 1000 distinct values
        (discrete mechanisms) get one bin per value instead.

    Returns
    -------
    result : AuditResult
    """
    a = np.asarray(samples_a, dtype=np.float64).ravel()
    b = np.asarray(samples_b, dtype=np.float64).ravel()
    if a.size != b.size or a.size == 0:
        raise ValueError(f"need equally many samples on both sides; got {a.size} and {b.size}")
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError("samples must be finite")
    edges, categorical = _bin_edges(np.concatenate([a, b]), n_bins)
    p_a = _frequencies(a, edges, categorical)
    p_b = _frequencies(b, edges, categorical)
    forward = _one_direction(p_a, p_b, epsilon, a.size)
    backward = _one_direction(p_b, p_a, epsilon, a.size)
    delta_hat, tolerance = max(forward, backward, key=lambda pair: pair[0] - pair[1])
    return AuditResult(
        epsilon=float(epsilon),
        delta=float(delta),
        delta_hat=delta_hat,
        tolerance=tolerance,
        n_samples=int(a.size),
        n_bins=int(p_a.size),
    )


def audit_mechanism(release_a, release_b, epsilon, delta=0.0, *, n_samples=100_000,
                    n_bins=50, random_state=None):
    """Draw outputs on two neighbouring datasets and audit them with :func:`audit_samples`.

    Parameters
    ----------
    release_a, release_b : callable
        ``release(n_samples, rng)`` returns ``n_samples`` independent scalar outputs of
        the mechanism on dataset A (resp. B), drawing noise from ``rng``.
    epsilon, delta : float
    n_samples : int, default=100_000
    n_bins : int, default=50
    random_state : None, int or numpy.random.Generator, default=None

    Returns
    -------
    result : AuditResult
    """
    rng = check_random_state(random_state)
    samples_a = release_a(n_samples, rng)
    samples_b = release_b(n_samples, rng)
    return audit_samples(samples_a, samples_b, epsilon, delta, n_bins=n_bins)


def estimator_release(estimator, X, *, attribute="mean_", project=None, **fit_params):
    """A ``release(n_samples, rng)`` callable that refits ``estimator`` with fresh noise.

    Parameters
    ----------
    estimator : estimator instance
        Must accept ``random_state``; it is cloned for every fit.
    X : array-like
        The dataset.
    attribute : str, default="mean_"
        The fitted attribute that is released.
    project : callable or None, default=None
        Maps the attribute to a scalar; ``None`` takes its first element.
    **fit_params : dict
        Metadata passed to ``fit`` (``trust_group``, ``epsilon``).

    Returns
    -------
    release : callable
    """
    from sklearn.base import clone

    project = project if project is not None else (lambda value: np.ravel(value)[0])

    def release(n_samples, rng):
        seeds = rng.integers(0, 2**32, size=n_samples)
        outputs = np.empty(n_samples)
        for i, seed in enumerate(seeds):
            fitted = clone(estimator).set_params(random_state=int(seed)).fit(X, **fit_params)
            outputs[i] = project(getattr(fitted, attribute))
        return outputs

    return release
