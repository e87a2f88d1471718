"""The bundled default dataset: synthetic salaries shaped like the UC-salary data of Avent et al."""

import numpy as np
from sklearn.utils import Bunch

#: Statistics of the University of California 2010 salaries (Avent, Dubey, Korolova 2020,
#: Sec. 4): number of employees, maximum salary and standard deviation.
UC_SALARY_N = 252_540
UC_SALARY_MAX = 2_349_033.0
UC_SALARY_STD = 53_254.0

# Log-normal body: sigma = 0.95 gives a right skew like a salary table; mu is set so
# that the standard deviation is the UC one (mean about 44,000).
_LOG_SIGMA = 0.95
_LOG_MU = np.log(UC_SALARY_STD / np.sqrt(np.expm1(_LOG_SIGMA**2))) - _LOG_SIGMA**2 / 2


def make_salaries(n_samples=UC_SALARY_N, *, random_state=0):
    """Synthetic salaries matching the UC-salary statistics used by Avent et al. (2020).

    Recipe: draw ``n_samples`` log-normal values with log-scale 0.95 and the location
    that gives a standard deviation of 53,254; cap them at 2,349,033 and set the largest
    to exactly that maximum; finally rescale deviations from the mean so the standard
    deviation is exactly 53,254 (the mean is kept). No real person's data is involved.

    Parameters
    ----------
    n_samples : int, default=252_540
    random_state : int, default=0
        Seed of the recipe (this is data generation, not privacy noise).

    Returns
    -------
    salaries : ndarray of shape (n_samples,)
    """
    rng = np.random.default_rng(random_state)
    values = np.minimum(rng.lognormal(_LOG_MU, _LOG_SIGMA, n_samples), UC_SALARY_MAX)
    values[np.argmax(values)] = UC_SALARY_MAX
    mean = values.mean()
    top = np.argmax(values)
    others = np.ones(n_samples, dtype=bool)
    others[top] = False
    # Rescale everyone but the top earner about the mean to hit the target deviation.
    target_ss = UC_SALARY_STD**2 * n_samples - (UC_SALARY_MAX - mean) ** 2
    current_ss = np.sum((values[others] - mean) ** 2)
    values[others] = mean + (values[others] - mean) * np.sqrt(target_ss / current_ss)
    return np.clip(values, 0.0, UC_SALARY_MAX)


def load_salaries():
    """The bundled default dataset of ``skhybrid``: synthetic UC-like salaries.

    It is synthetic (see :func:`make_salaries` for the recipe), not the real UC table,
    so it can be shipped and regenerated exactly.

    Returns
    -------
    data : sklearn.utils.Bunch
        ``data`` (n_samples, 1) salaries, ``feature_names`` ``["salary"]``, ``bounds``
        ``(0, 2_349_033)`` (public knowledge, used as clipping bounds), ``DESCR``.
    """
    return Bunch(
        data=make_salaries().reshape(-1, 1),
        feature_names=["salary"],
        bounds=(0.0, UC_SALARY_MAX),
        DESCR=make_salaries.__doc__,
    )
