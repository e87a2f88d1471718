"""The compiled part of skhybrid: ``_skhybrid_native`` (the rest is in pyproject.toml).

A C extension of the hybrid mean's moment sums (``native/_skhybrid_native.c``), built at
install. It is optional: without a C compiler the install still succeeds (with
setuptools' warning), and skhybrid computes the same sums by numba's kernels and
numpy's passes. It is a top-level module, not part of the ``skhybrid`` package, so that
a checkout run from its own directory (the tests) finds the one installed beside it.
skhybrid uses it when its version is skhybrid's own; the tests also check that it was
built from the checkout's source (its ``SOURCE_SHA256``, compiled in from here).
"""

import hashlib
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

SOURCE = "native/_skhybrid_native.c"

# GCC and Clang: optimized, no fast-math (were it in the environment's CFLAGS, which come
# first) and no contraction of a product and a sum into a fused multiply-add (the codes'
# float operations are part of their exactness argument). Unrolled: measured at 1e7
# values, the codes with the finiteness count 3.3 to 2.3 ms (numba's kernel 2.2 ms),
# the other cases unchanged.
_UNIX_FLAGS = ["-O3", "-fno-fast-math", "-ffp-contract=off", "-fno-math-errno",
               "-fno-strict-aliasing", "-funroll-loops"]
# MSVC: precise floating point (no contraction) and optimized.
_MSVC_FLAGS = ["/O2", "/fp:precise"]


class BuildNative(build_ext):
    """build_ext with the flags of the compiler in use."""

    def build_extensions(self):
        flags = _MSVC_FLAGS if self.compiler.compiler_type == "msvc" else _UNIX_FLAGS
        for extension in self.extensions:
            extension.extra_compile_args = flags
        super().build_extensions()


def _source_digest():
    return hashlib.sha256(Path(__file__).with_name("native").joinpath(
        "_skhybrid_native.c").read_bytes()).hexdigest()


setup(
    ext_modules=[
        Extension(
            "_skhybrid_native",
            [SOURCE],
            define_macros=[("SOURCE_SHA256", f'"{_source_digest()}"')],
            optional=True,
        )
    ],
    cmdclass={"build_ext": BuildNative},
)
