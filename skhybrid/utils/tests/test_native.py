"""The C extension of the hybrid mean's moment sums: built from this source, and strict
about its arguments.

Its sums are compared with numpy's passes and numba's kernels, bit for bit, by every
test of ``test_sums.py`` and ``skhybrid/mean/tests/test_compiled_paths.py`` (the path
``"native"``); a fresh process's first fits use it (``tests/test_layers.py``).
"""

import hashlib
import re
import shutil
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from skhybrid.utils import _sums

SOURCE = Path(__file__).resolve().parents[3] / "native" / "_skhybrid_native.c"


def _has_c_compiler():
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return shutil.which(compiler) is not None


def test_the_extension_in_use_is_built_from_this_checkouts_source():
    """Where a C compiler is found, the install built the extension, and skhybrid uses
    it: of this source (a stale build after an edit of the C file fails here, not
    silently in the comparisons), of this version and grid."""
    if not SOURCE.exists():
        pytest.skip("an installed skhybrid without its source checkout")
    if not _has_c_compiler():
        pytest.skip("no C compiler: the install could not build _skhybrid_native")
    assert _sums._NATIVE_MOMENTS is not None, (
        "_skhybrid_native is not importable or not this version: reinstall skhybrid "
        "(python -m pip install .) to build it")
    import _skhybrid_native

    text = SOURCE.read_text(encoding="utf-8")
    assert _skhybrid_native.SOURCE_SHA256 == hashlib.sha256(SOURCE.read_bytes()).hexdigest(), (
        "_skhybrid_native was built from another source: reinstall skhybrid")
    version = re.search(r"#define NATIVE_VERSION (\d+)", text).group(1)
    bits = re.search(r"#define FIXED_POINT_BITS (\d+)", text).group(1)
    assert int(version) == _sums._NATIVE_VERSION == _skhybrid_native.VERSION
    assert int(bits) == _sums.FIXED_POINT_BITS == _skhybrid_native.FIXED_POINT_BITS
    assert _sums._tier["native"]  # every process sums its moments by it


@pytest.fixture
def arguments():
    """Valid arguments of moment_sums for 10 rows of 2 features, with a mask."""
    columns = np.random.default_rng(0).uniform(0, 1, (2, 10))
    constants = [np.zeros(2), np.ones(2), np.full(2, 2.0**32), np.full(2, 0.5)]
    return [columns, *constants, np.arange(10) % 2 == 0, np.zeros(2, np.int64),
            np.zeros(2, np.int64), np.zeros(2), np.zeros(2), np.zeros(1, np.int64)]


@pytest.mark.parametrize("index, bad, error, message", [
    (0, lambda a: a.astype(np.float32), TypeError, "columns must be a C-contiguous 2-d"),
    (0, lambda a: a[0], TypeError, "columns must be a C-contiguous 2-d"),
    (0, lambda a: a.astype(a.dtype.newbyteorder()), TypeError, "of float64; got format"),
    (0, lambda a: np.asfortranarray(a), ValueError, "contiguous"),
    (1, lambda a: a[:1], ValueError, "lower has 1 values; expected 2"),
    (5, lambda a: a.astype(np.int8), TypeError, "is_coded must be"),
    (5, lambda a: a[:9], ValueError, "is_coded has 9 values; expected 10"),
    (6, lambda a: a.astype(np.int32), TypeError, "code_sums must be"),
    (6, lambda a: a.view(np.float64), TypeError, "code_sums must be"),
    (7, lambda a: _read_only(a), ValueError, "read-only"),
    (10, lambda a: a[:0], ValueError, "non_finite has 0 values"),
])
def test_moment_sums_refuse_arguments_of_another_kind_or_shape(arguments, index, bad, error,
                                                               message):
    if _sums._NATIVE_MOMENTS is None:
        pytest.skip("the C extension _skhybrid_native is not built (no C compiler)")
    arguments[index] = bad(arguments[index])
    with pytest.raises(error, match=re.escape(message)):
        _sums._NATIVE_MOMENTS(*arguments)


def _read_only(array):
    array = array.copy()
    array.setflags(write=False)
    return array


def test_moment_sums_refuse_a_wrong_count_and_square_sums_without_sums(arguments):
    if _sums._NATIVE_MOMENTS is None:
        pytest.skip("the C extension _skhybrid_native is not built (no C compiler)")
    with pytest.raises(TypeError, match="takes 11 arguments"):
        _sums._NATIVE_MOMENTS(*arguments[:10])
    arguments[8] = None
    with pytest.raises(ValueError, match="float_square_sums needs float_sums"):
        _sums._NATIVE_MOMENTS(*arguments)
    # Nothing was added by a refused call.
    assert not arguments[6].any() and not arguments[10].any()
