"""The bundled salaries: the UC statistics they are calibrated to, and their description."""

import numpy as np

from skhybrid.datasets import load_salaries
from skhybrid.datasets._salaries import UC_SALARY_MAX, UC_SALARY_N, UC_SALARY_STD


def test_the_salaries_have_the_uc_statistics():
    salaries = load_salaries()
    X = salaries.data
    assert X.shape == (UC_SALARY_N, 1)
    assert X.max() == UC_SALARY_MAX and X.min() >= 0
    assert abs(X.std() - UC_SALARY_STD) < 1e-6
    assert salaries.bounds == (0.0, UC_SALARY_MAX)
    assert salaries.feature_names == ["salary"]


def test_descr_describes_the_dataset_not_the_generator():
    """Like scikit-learn's DESCR: the data set's characteristics, its origin and where it
    is used; not the generator's docstring (no Parameters/Returns sections)."""
    descr = load_salaries().DESCR
    for fact in (f"{UC_SALARY_N:,}", f"{UC_SALARY_MAX:,.0f}", f"{UC_SALARY_STD:,.0f}",
                 "Number of Instances", "synthetic", "Avent", "No real person"):
        assert fact in descr, fact
    assert "Parameters" not in descr and "Returns" not in descr
    # the stated mean is the data's
    assert abs(load_salaries().data.mean() - 44_000) < 500
