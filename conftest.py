"""Test-suite options: the statistical tests marked ``slow`` run with ``--slow``.

``python -m pytest`` runs the fast suite (a couple of minutes); ``python -m pytest
--slow`` adds the slow Monte Carlo checks of the papers' formulas and the privacy
audits; ``python -m pytest --slow -m slow`` runs only those. CI runs both.
"""

import pytest

try:
    from hypothesis import settings
except ImportError:  # pragma: no cover - hypothesis comes with the test extras
    settings = None
else:
    # No per-example deadline: an example that is the first call of a compiled kernel
    # includes its compilation (about a second, once per process), and speed is
    # measured in benchmarks/, not asserted in tests.
    settings.register_profile("skhybrid", deadline=None)
    settings.load_profile("skhybrid")


def pytest_addoption(parser):
    parser.addoption(
        "--slow", action="store_true", default=False,
        help="also run the statistical tests marked slow (Monte Carlo checks, audits)",
    )


def pytest_collection_modifyitems(config, items):
    if config.getoption("--slow"):
        return
    # Deselected, not skipped: a skip would read as a hidden failure in the report.
    kept, deselected = [], []
    for item in items:
        (deselected if item.get_closest_marker("slow") else kept).append(item)
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = kept


@pytest.fixture(autouse=True)
def _forget_remembered_plans():
    """Every test starts and ends with empty memories of public computations (the
    central noise's plans, :func:`skhybrid._group_estimates.planned_central_noise`, the
    bounds' widths and their grids): a test double that
    replaces a mechanism (an audit's control with too little noise) must be asked for
    every plan made while it is in place, and none of its plans may outlive its test."""
    from skhybrid import _group_estimates
    from skhybrid.utils import _sums

    memories = (_group_estimates._PLANS, _sums._WIDTHS, _sums._GRIDS)
    for memory in memories:
        memory.clear()
    yield
    for memory in memories:
        memory.clear()
