"""The README's test command runs the fast suite; ``--slow`` adds the statistical tests."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = "skhybrid/mean/tests/test_float_safety.py"


def _collected(*options):
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         *options, SAMPLE],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )
    return [line for line in result.stdout.splitlines() if "::" in line]


def test_default_run_leaves_out_slow_tests_and_the_flag_brings_them_back():
    fast = _collected()
    everything = _collected("--slow")
    only_slow = _collected("--slow", "-m", "slow")
    assert fast and only_slow
    assert not any("audit" in name for name in fast)
    assert sorted(everything) == sorted(fast + only_slow)
