"""Write the intersphinx inventories of Python, numpy, scipy and scikit-learn, offline.

The documentation links to these projects without fetching their ``objects.inv`` over
the network: this script builds equivalent inventories from the installed packages,
mapping each public object to the page where the project's documentation puts it (the
URL layout of each project's API reference, below). The inventories are committed
next to this script; regenerate them after upgrading a package::

    python docs/_intersphinx/make_inventories.py

Only the objects are listed (modules, classes, functions, methods, exceptions, data),
which is what ``:class:``, ``:func:``, ``:meth:``, ``:mod:`` and ``:obj:`` resolve.
"""

import importlib
import inspect
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent

PYTHON_MODULES = [
    "argparse", "collections", "concurrent.futures", "contextlib", "copy", "csv",
    "dataclasses", "datetime", "decimal", "fractions", "functools", "hashlib", "io",
    "itertools", "json", "logging", "math", "multiprocessing", "numbers", "operator", "os",
    "os.path", "pathlib", "pickle", "random", "re", "secrets", "shutil", "sqlite3",
    "statistics", "struct", "subprocess", "sys", "tempfile", "threading", "time", "typing",
    "warnings", "weakref", "zlib",
]
NUMPY_MODULES = ["numpy", "numpy.linalg", "numpy.random", "numpy.testing", "numpy.fft"]
SCIPY_MODULES = ["scipy.optimize", "scipy.stats", "scipy.special", "scipy.integrate",
                 "scipy.linalg", "scipy.sparse", "scipy.spatial", "scipy.interpolate",
                 "scipy.fft", "scipy.signal"]


def _public(module):
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in dir(module) if not name.startswith("_")]
    for name in names:
        try:
            value = getattr(module, name)
        except (AttributeError, ImportError):  # e.g. scikit-learn's experimental names
            continue
        yield name, value


def _role(value):
    if inspect.ismodule(value):
        return "py:module"
    if inspect.isclass(value):
        return "py:exception" if issubclass(value, BaseException) else "py:class"
    if callable(value):
        return "py:function"
    return "py:data"


def _methods(cls):
    for name, value in vars(cls).items():
        if not name.startswith("_") and (callable(value) or isinstance(
                value, (classmethod, staticmethod, property))):
            yield name, "py:attribute" if isinstance(value, property) else "py:method"


def _write(path, project, version, entries):
    """An objects.inv (Sphinx inventory version 2) with ``(name, role, uri)`` entries."""
    lines = sorted({f"{name} {role} 1 {uri} -" for name, role, uri in entries})
    header = (f"# Sphinx inventory version 2\n# Project: {project}\n# Version: {version}\n"
              "# The remainder of this file is compressed using zlib.\n")
    path.write_bytes(header.encode() + zlib.compress(("\n".join(lines) + "\n").encode(), 9))
    return len(lines)


def python_entries():
    import builtins

    for name, value in vars(builtins).items():
        if name.startswith("_"):
            continue
        if inspect.isclass(value) and issubclass(value, BaseException):
            yield name, "py:exception", f"library/exceptions.html#{name}"
        elif inspect.isclass(value):
            yield name, "py:class", f"library/functions.html#{name}"
            for method, role in _methods(value):
                yield f"{name}.{method}", role, f"library/stdtypes.html#{name}.{method}"
        elif callable(value):
            yield name, "py:function", f"library/functions.html#{name}"
    for module_name in PYTHON_MODULES:
        module = importlib.import_module(module_name)
        page = f"library/{module_name}.html"
        yield module_name, "py:module", f"{page}#module-{module_name}"
        for name, value in _public(module):
            if inspect.ismodule(value):
                continue
            full = f"{module_name}.{name}"
            yield full, _role(value), f"{page}#{full}"
            if inspect.isclass(value):
                for method, role in _methods(value):
                    yield f"{full}.{method}", role, f"{page}#{full}.{method}"


def numpy_entries():
    import numpy as np

    for module_name in NUMPY_MODULES:
        module = importlib.import_module(module_name)
        if module_name != "numpy":
            page = {"numpy.random": "reference/random/index.html"}.get(
                module_name, f"reference/routines.{module_name.split('.')[1]}.html")
            yield module_name, "py:module", f"{page}#module-{module_name}"
        for name, value in _public(module):
            if inspect.ismodule(value):
                continue
            full = f"{module_name}.{name}"
            if full in ("numpy.random.Generator", "numpy.random.default_rng"):
                yield full, _role(value), f"reference/random/generator.html#{full}"
            elif module_name == "numpy.random" and inspect.isclass(value):
                yield full, _role(value), (
                    f"reference/random/bit_generators/generated/{full}.html#{full}")
            elif module_name == "numpy.random":
                yield full, _role(value), f"reference/random/generated/{full}.html#{full}"
            elif _role(value) == "py:data":
                yield full, "py:data", f"reference/constants.html#{full}"
            else:
                yield full, _role(value), f"reference/generated/{full}.html#{full}"
    yield "numpy", "py:module", "reference/index.html#module-numpy"
    for name, role in _methods(np.ndarray):
        full = f"numpy.ndarray.{name}"
        yield full, role, f"reference/generated/{full}.html#{full}"
    for name, role in _methods(np.random.Generator):
        full = f"numpy.random.Generator.{name}"
        yield full, role, f"reference/random/generated/{full}.html#{full}"


def scipy_entries():
    for module_name in SCIPY_MODULES:
        module = importlib.import_module(module_name)
        yield module_name, "py:module", f"reference/{module_name[6:]}.html#module-{module_name}"
        for name, value in _public(module):
            if inspect.ismodule(value):
                continue
            full = f"{module_name}.{name}"
            yield full, _role(value), f"reference/generated/{full}.html#{full}"


def _sklearn_modules():
    """scikit-learn's public modules: no part starting with "_", no tests or externals."""
    import pkgutil

    import sklearn

    yield "sklearn"
    for info in pkgutil.walk_packages(sklearn.__path__, "sklearn."):
        parts = info.name.split(".")
        if any(part.startswith("_") or part in ("tests", "externals") for part in parts):
            continue
        yield info.name


def sklearn_entries():
    for module_name in _sklearn_modules():
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # e.g. optional dependencies missing
            continue
        page = "api/index.html" if module_name == "sklearn" else f"api/{module_name}.html"
        yield module_name, "py:module", f"{page}#module-{module_name}"
        for name, value in _public(module):
            # Names a module imports from elsewhere are documented where they live.
            if inspect.ismodule(value) or not getattr(value, "__module__", "").startswith(
                    "sklearn"):
                continue
            full = f"{module_name}.{name}"
            page = f"modules/generated/{full}.html"
            yield full, _role(value), f"{page}#{full}"
            if inspect.isclass(value):
                for method, role in _methods(value):
                    yield f"{full}.{method}", role, f"{page}#{full}.{method}"


def main():
    import numpy
    import scipy
    import sklearn

    for name, project, version, entries in [
        ("python", "Python", f"{sys.version_info.major}.{sys.version_info.minor}",
         python_entries()),
        ("numpy", "NumPy", numpy.__version__, numpy_entries()),
        ("scipy", "SciPy", scipy.__version__, scipy_entries()),
        ("sklearn", "scikit-learn", sklearn.__version__, sklearn_entries()),
    ]:
        count = _write(HERE / f"{name}.inv", project, version, entries)
        print(f"{name}.inv: {count} objects ({project} {version})")


if __name__ == "__main__":
    main()
