"""Sphinx configuration of the skhybrid documentation.

Build (as CI does): ``python -m sphinx -W --keep-going -b html docs docs/_build/html``.
The build needs no network: the intersphinx inventories of Python, numpy, scipy and
scikit-learn are files in ``docs/_intersphinx/``, generated from the installed packages
by ``docs/_intersphinx/make_inventories.py``; nothing is fetched.
"""

import os
import re
import sys
from pathlib import Path

# Examples and autodoc run without a display.
os.environ.setdefault("MPLBACKEND", "Agg")

# Document the working tree, even if an older skhybrid is installed.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import skhybrid  # noqa: E402

project = "skhybrid"
author = "skhybrid developers"
copyright = "skhybrid developers"
release = skhybrid.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
root_doc = "index"
default_role = "literal"
nitpicky = False

# -- intersphinx: links to the projects skhybrid builds on, from shipped inventories -------

_INVENTORIES = Path(__file__).resolve().parent / "_intersphinx"
intersphinx_mapping = {
    name: (url, str(_INVENTORIES / f"{name}.inv"))
    for name, url in [
        ("python", "https://docs.python.org/3/"),
        ("numpy", "https://numpy.org/doc/stable/"),
        ("scipy", "https://docs.scipy.org/doc/scipy/"),
        ("sklearn", "https://scikit-learn.org/stable/"),
    ]
}
intersphinx_disabled_reftypes = ["std:doc"]
intersphinx_timeout = 1  # never reached: the inventories are local files

# -- autodoc / autosummary / numpydoc ------------------------------------------------

autosummary_generate = True
autosummary_imported_members = True
autodoc_typehints = "none"

# As scikit-learn: the class template lists the methods; numpydoc does not add a
# second members table.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- sphinx-gallery ------------------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    # Execute every example, not only plot_*.py.
    "filename_pattern": r".*\.py",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "FileNameSortKey",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "download_all_examples": False,
    "show_signature": False,
    "remove_config_comments": True,
    # Link estimator names in the examples to the API pages (local, no network).
    "doc_module": ("skhybrid",),
    "backreferences_dir": "generated/backreferences",
    "reference_url": {"skhybrid": None},
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
}

# -- HTML ----------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skhybrid {release}"
html_static_path = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
html_show_sourcelink = False

# -- docstring fixes -----------------------------------------------------------------

# numpydoc copies a parameter's type verbatim into reST, where a name ending in "_"
# is a hyperlink reference: ``ndarray of shape (n_features_in_,)`` or
# ``default="mean_"`` would be "Unknown target name" errors. Escape those underscores
# in the "name : type" lines of a numpydoc section (unindented lines) before numpydoc
# parses the docstring.
_TYPE_LINE = re.compile(r"^(\*{0,2}[A-Za-z_][\w, *]*) : (.+)$")
_TRAILING_UNDERSCORE = re.compile(r"\b([A-Za-z]\w*?)_(?=[\s,)\]}\"'.:;]|$)")


def _escape_type_references(app, what, name, obj, options, lines):
    for index, line in enumerate(lines):
        match = _TYPE_LINE.match(line)
        if match:
            escaped = _TRAILING_UNDERSCORE.sub(r"\1\\_", match[2])
            lines[index] = f"{match[1]} : {escaped}"


# Inherited scikit-learn methods are documented with their scikit-learn docstrings,
# except ``set_output``, whose docstring links into scikit-learn's own user guide
# (which cannot be resolved without intersphinx). ``:term:`meta-estimator``` in the
# ``set_*_request`` docstrings resolves to the glossary in user_guide/metadata_routing.
_SKIPPED_SKLEARN_MEMBERS = {"set_output"}


def _skip_member(app, what, name, obj, skip, options):
    if name in _SKIPPED_SKLEARN_MEMBERS and getattr(obj, "__module__", "").startswith("sklearn"):
        return True
    return None


# Docstrings name the documentation's pages by their path in the repository
# ("docs/privacy.rst"), which reads well in help() and a terminal; in the HTML the path
# becomes a link to the page.
_DOCS_PATH = re.compile(r"(?<![`/\w])docs/([\w/]+)\.rst\b(?!`)")


def _link_docs_paths(app, what, name, obj, options, lines):
    for index, line in enumerate(lines):
        lines[index] = _DOCS_PATH.sub(r":doc:`docs/\1.rst </\1>`", line)


def setup(app):
    # numpydoc's own handler runs at the default priority 500; these first.
    app.connect("autodoc-process-docstring", _escape_type_references, priority=100)
    app.connect("autodoc-process-docstring", _link_docs_paths, priority=100)
    app.connect("autodoc-skip-member", _skip_member)
