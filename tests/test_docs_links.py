"""The documentation links to Python, numpy, scipy and scikit-learn without the network.

The intersphinx inventories are files in docs/_intersphinx/ (made from the installed
packages by make_inventories.py); conf.py reads them and fetches nothing. Every
reference of the docs and docstrings to those projects resolves in them, at the page
where that project documents the object.
"""

import re
import runpy
import zlib
from pathlib import Path

import pytest

REPOSITORY = Path(__file__).resolve().parents[1]
INVENTORIES = REPOSITORY / "docs" / "_intersphinx"
PROJECTS = {"python": "https://docs.python.org/3/", "numpy": "https://numpy.org/doc/stable/",
            "scipy": "https://docs.scipy.org/doc/scipy/",
            "sklearn": "https://scikit-learn.org/stable/"}
ROLE = re.compile(r":(class|func|meth|mod|obj|exc|data|attr):`~?([\w.]+)`")


def read_inventory(path):
    """``{(name, role): uri}`` of a Sphinx inventory version 2."""
    data = path.read_bytes()
    header, _, body = data.partition(b"zlib.\n")
    assert header.startswith(b"# Sphinx inventory version 2")
    entries = {}
    for line in zlib.decompress(body).decode().splitlines():
        name, role, _priority, uri, _display = line.split(" ", 4)
        entries[name, role] = uri
    return entries


@pytest.fixture(scope="module")
def inventories():
    return {name: read_inventory(INVENTORIES / f"{name}.inv") for name in PROJECTS}


def test_conf_reads_the_shipped_inventories_and_fetches_nothing():
    conf = runpy.run_path(str(REPOSITORY / "docs" / "conf.py"))
    assert "sphinx.ext.intersphinx" in conf["extensions"]
    mapping = conf["intersphinx_mapping"]
    assert set(mapping) == set(PROJECTS)
    for name, (url, inventory) in mapping.items():
        assert url == PROJECTS[name]
        assert Path(inventory) == INVENTORIES / f"{name}.inv" and Path(inventory).is_file()


@pytest.mark.parametrize("project, name, role, uri", [
    ("sklearn", "sklearn.model_selection.GridSearchCV", "py:class",
     "modules/generated/sklearn.model_selection.GridSearchCV.html"
     "#sklearn.model_selection.GridSearchCV"),
    ("sklearn", "sklearn.base.clone", "py:function",
     "modules/generated/sklearn.base.clone.html#sklearn.base.clone"),
    ("numpy", "numpy.quantile", "py:function",
     "reference/generated/numpy.quantile.html#numpy.quantile"),
    ("numpy", "numpy.random.Generator", "py:class",
     "reference/random/generator.html#numpy.random.Generator"),
    ("scipy", "scipy.optimize.brentq", "py:function",
     "reference/generated/scipy.optimize.brentq.html#scipy.optimize.brentq"),
    ("python", "os.urandom", "py:function", "library/os.html#os.urandom"),
    ("python", "secrets", "py:module", "library/secrets.html#module-secrets"),
    ("python", "float", "py:class", "library/functions.html#float"),
    ("python", "ValueError", "py:exception", "library/exceptions.html#ValueError"),
])
def test_objects_are_at_their_projects_documented_pages(inventories, project, name, role,
                                                        uri):
    assert inventories[project][name, role] == uri


def _references():
    """Every role reference to an object of one of the four projects."""
    roots = {"sklearn": "sklearn", "numpy": "numpy", "scipy": "scipy"}
    files = [*REPOSITORY.glob("docs/**/*.rst"), *REPOSITORY.glob("skhybrid/**/*.py"),
             *REPOSITORY.glob("examples/*.py")]
    found = set()
    for path in files:
        if "_build" in path.parts or "generated" in path.parts:
            continue
        for _, target in ROLE.findall(path.read_text()):
            root = target.split(".")[0]
            if root in roots or root in {"os", "secrets", "sqlite3", "warnings", "math"}:
                found.add(target)
    return sorted(found)


def test_every_reference_to_the_four_projects_resolves(inventories):
    references = _references()
    assert "sklearn.model_selection.GridSearchCV" in references  # the scan finds them
    names = {name for inventory in inventories.values() for name, _ in inventory}
    missing = [target for target in references if target not in names]
    assert not missing, f"not in the shipped inventories: {missing}"
