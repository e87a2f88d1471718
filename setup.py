"""The compiled kernels of skhybrid (the rest of the build is in pyproject.toml).

Every ``skhybrid/**/*.pyx`` is compiled by Cython, as scikit-learn builds its own: the
kernels are part of the package, there is one implementation of each, and an install
without a C compiler fails here with a message that says so (there is no fallback).
Parallel loops use Cython's ``prange`` on OpenMP where the compiler supports it
(``-fopenmp``); elsewhere they run on one thread.

The flags keep the float arithmetic IEEE float64 as written: no fast-math (were it in
the environment's CFLAGS, which come first) and no contraction of a product and a sum
into a fused multiply-add (the fixed-point codes' float operations are part of their
exactness argument, ``skhybrid/_fixed_point.pxd``).
"""

import os
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

_UNIX_FLAGS = ["-O3", "-fno-fast-math", "-ffp-contract=off", "-fno-math-errno"]
_MSVC_FLAGS = ["/O2", "/fp:precise"]


class BuildKernels(build_ext):
    """build_ext with the flags of the compiler in use, OpenMP where it links, and a
    plain message where no C compiler works."""

    def initialize_options(self):
        super().initialize_options()
        self.force = True  # never reuse an object file of another source from build/

    def build_extensions(self):
        msvc = self.compiler.compiler_type == "msvc"
        openmp = (["/openmp"], []) if msvc else (["-fopenmp"], ["-fopenmp"])
        if sys.platform == "darwin":  # Apple's clang has no OpenMP: one thread
            openmp = ([], [])
        for extension in self.extensions:
            extension.extra_compile_args = (_MSVC_FLAGS if msvc else _UNIX_FLAGS) + openmp[0]
            extension.extra_link_args = openmp[1]
        try:
            super().build_extensions()
        except Exception as error:
            raise SystemExit(
                f"skhybrid's kernels could not be compiled ({error}). Installing skhybrid "
                "from source needs a C compiler (gcc or clang; MSVC on Windows): on "
                "Debian or Ubuntu, 'apt-get install gcc python3-dev'.") from error


def _extensions():
    from Cython.Build import cythonize

    sources = sorted(Path("skhybrid").rglob("*.pyx"))
    modules = [Extension(".".join(source.with_suffix("").parts), [str(source)])
               for source in sources]
    return cythonize(modules, language_level=3, compiler_directives={
        "boundscheck": False, "wraparound": False, "cdivision": True,
        "initializedcheck": False})


os.chdir(Path(__file__).resolve().parent)
setup(ext_modules=_extensions(), cmdclass={"build_ext": BuildKernels})
