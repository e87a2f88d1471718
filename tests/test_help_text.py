"""Docstrings read well in a terminal: ``help()`` shows no Sphinx markup a reader must decode.

Pages of the documentation are named by their path (``docs/privacy.rst``), which
conf.py turns into a link in the HTML; ``:doc:``, ``:ref:`` and ``:term:`` roles would
show raw in ``help()``.
"""

import importlib
import inspect
import pydoc
import re

import pytest

import skhybrid

PAGE_ROLES = re.compile(r":(doc|ref|term):`")
ANY_ROLE = re.compile(r":[a-z]+:`")
MODULES = ["skhybrid", "skhybrid.accounting", "skhybrid.mechanisms", "skhybrid.cluster",
           "skhybrid.heavy_hitters", "skhybrid.model_selection", "skhybrid.exceptions"]


def public_objects():
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if callable(value):
                yield f"{module_name}.{name}", value


def own_docstrings(obj):
    """The docstrings of ``obj`` and of its methods that skhybrid wrote (not inherited
    from scikit-learn, whose ``set_*_request`` docstrings are scikit-learn's)."""
    yield obj.__name__, inspect.getdoc(obj) or ""
    if inspect.isclass(obj):
        for name, member in inspect.getmembers(obj):
            function = getattr(member, "fget", member)
            if (getattr(function, "__module__", None) or "").startswith("skhybrid"):
                yield f"{obj.__name__}.{name}", inspect.getdoc(member) or ""


@pytest.mark.parametrize("name, obj", list(public_objects()))
def test_help_shows_no_page_roles(name, obj):
    for where, text in own_docstrings(obj):
        assert not PAGE_ROLES.search(text), f"{where}: {PAGE_ROLES.findall(text)}"


def test_help_of_the_ledger_shows_no_roles_at_all():
    text = pydoc.render_doc(skhybrid.PrivacyLedger, renderer=pydoc.plaintext)
    assert "docs/user_guide/accounting.rst" in text  # the page, by its path
    assert not ANY_ROLE.search(text), ANY_ROLE.findall(text)


def test_the_docs_build_links_the_paths():
    """conf.py turns a docstring's page path into a link (and leaves literals alone)."""
    import runpy
    from pathlib import Path

    conf = runpy.run_path(str(Path(__file__).resolve().parents[1] / "docs" / "conf.py"))
    lines = ["Read more in docs/privacy.rst about it.", "derived in ``docs/adpm_solver.rst``"]
    conf["_link_docs_paths"](None, "class", "x", None, {}, lines)
    assert lines == ["Read more in :doc:`docs/privacy.rst </privacy>` about it.",
                     "derived in ``docs/adpm_solver.rst``"]
