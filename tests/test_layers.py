"""The package's layers: utils imports nothing above it, no package reaches into another's privates.

Every ``from ... import`` of every module is read (lazy ones inside functions too), its
relative target resolved to a module of skhybrid. The feature packages (mean, cluster,
heavy_hitters, theory, mechanisms, accounting, ...) and the command line import each
other's public names only; utils, the base layer every package builds on, shares its
private helpers with all of them.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "skhybrid"
#: What utils may import from the rest of skhybrid: the leaf module of warning and error classes.
UTILS_MAY_IMPORT = {"utils", "exceptions"}
#: Packages whose private names any package may import: the base layer.
SHARED_PRIVATES = {"utils"}


def _owner(module):
    """The top-level part of skhybrid a dotted module belongs to (``"cluster"``, ``"_cli"``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _imports(source, module, is_package=False):
    """``(target module, imported names)`` of every ``from ... import`` in ``source``."""
    here = module.split(".") if is_package else module.split(".")[:-1]
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.ImportFrom):
            continue
        if node.level:
            base = here[: len(here) - (node.level - 1)]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module or ""
        if target.split(".")[0] == "skhybrid":
            found.append((target, [alias.name for alias in node.names]))
    return found


def _violations(source, module, is_package=False):
    owner = _owner(module)
    found = []
    for target, names in _imports(source, module, is_package):
        target_owner = _owner(target)
        if owner == "utils" and target_owner not in UTILS_MAY_IMPORT:
            found.append(f"{module} imports {target} (utils imports nothing above it)")
        private = [name for name in names if name.startswith("_")]
        if target_owner and target_owner not in SHARED_PRIVATES | {owner} and private:
            found.append(f"{module} imports {', '.join(private)} from {target}")
    return found


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent)
        if "tests" in relative.parts:
            continue
        is_package = path.name == "__init__.py"
        parts = relative.parent.parts if is_package else relative.with_suffix("").parts
        yield path, ".".join(parts), is_package


def test_the_scanner_finds_an_upward_import_and_a_private_name_across_packages():
    source = "def f():\n    from ..heavy_hitters._blender import _WIDTH_CHECKS\n"
    assert _violations(source, "skhybrid.utils.estimator_checks") == [
        "skhybrid.utils.estimator_checks imports skhybrid.heavy_hitters._blender "
        "(utils imports nothing above it)",
        "skhybrid.utils.estimator_checks imports _WIDTH_CHECKS from "
        "skhybrid.heavy_hitters._blender",
    ]
    # Within one package, private names are the package's own business; utils shares its own.
    assert _violations("from ._k_means_lloyd import _CHUNK_ROWS\n",
                       "skhybrid.cluster._kmeans") == []
    assert _violations("from ..utils._sums import _bounds_and_scale\n",
                       "skhybrid.cluster._k_means_lloyd") == []


MODULES = list(_modules())


@pytest.mark.parametrize("path, module, is_package", MODULES,
                         ids=[module for _, module, _ in MODULES])
def test_imports_respect_the_layers(path, module, is_package):
    assert _violations(path.read_text(encoding="utf-8"), module, is_package) == []


def test_a_fresh_process_sums_by_the_compiled_kernels_without_numba():
    """The fixed-point sums have one implementation, compiled at install: a fresh
    process's first fits sum by that extension module (nothing to compile or choose at
    run time), and neither importing skhybrid nor the means' fits import numba."""
    import subprocess
    import sys

    script = (
        "import sys, warnings; warnings.simplefilter('ignore'); import numpy as np; "
        "import skhybrid; from skhybrid import ADPMEstimator, HybridKMeans, HybridMeanEstimator; "
        "assert 'numba' not in sys.modules, 'import'; "
        "X = np.random.default_rng(0).uniform(size=(1000, 1)); "
        "HybridMeanEstimator(bounds=(0, 1), random_state=0).fit(X, trust_group=X[:, 0] < 0.1); "
        "HybridMeanEstimator('tcm_only', bounds=(0, 1)).fit(np.tile(X, (100, 1))); "
        "ADPMEstimator(bounds=(0, 1), random_state=0).fit(X, epsilon=1 + (X[:, 0] < 0.5)); "
        "assert 'numba' not in sys.modules, 'fit'; "
        "kernels = sys.modules['skhybrid.utils._fixed_point_sums']; "
        "assert not kernels.__file__.endswith('.py'), kernels.__file__; "
        "HybridKMeans(2, bounds=(0, 1), random_state=0).fit(X); "
        "assert 'numba' not in sys.modules, 'K-means runs its Cython pass'"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


def test_the_ledger_imports_without_the_estimators_or_scikit_learn():
    """``skhybrid ledger FILE user ID`` answers a support desk's question in about a
    second: importing the ledger imports no estimator, scikit-learn nor cvxpy (the
    package's names are imported on first use)."""
    import subprocess
    import sys

    script = (
        "import sys; import skhybrid.accounting; "
        "loaded = [name for name in ('sklearn', 'cvxpy', 'skhybrid.mean', 'skhybrid.cluster') "
        "if name in sys.modules]; assert not loaded, loaded; "
        "from skhybrid import HybridMeanEstimator; assert 'sklearn' in sys.modules"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
