"""What the commands share: the estimators ``--estimator`` names, the noise line, errors."""

from dataclasses import dataclass

import numpy as np

_SECURE_NOISE = (
    "noise: the operating system's secure randomness (these are real private releases; "
    "--seed N gives a reproducible simulation instead)"
)
_SEEDED_NOISE = (
    "noise: seeded with --seed {seed}: a reproducible simulation, not a private release "
    "(anyone who knows the seed can remove the noise)"
)
_PLOT_HINT = 'for the plot, install matplotlib: python -m pip install "skhybrid[plot]"'


class CommandError(Exception):
    """A mistake in the command's input: printed on stderr, exit status 2, no traceback."""


# -- the estimators the command line knows ------------------------------------------------


@dataclass(frozen=True)
class _Method:
    """One estimator choice of ``--estimator``: how to build it and what it is."""

    family: str
    strategy: str | None
    description: str
    needs_tcm_only: bool = False

    def build(self, *, epsilon, bounds, variance, random_state, clamp=False):
        from ..mean import (
            ADPMEstimator,
            HybridMeanEstimator,
            MixedMeanEstimator,
            PDPSampleEstimator,
        )

        # Without a known variance, every mean estimator's default: a private estimate.
        common = {"epsilon": epsilon, "bounds": bounds, "clamp": clamp,
                  "variance": "private" if variance is None else variance,
                  "random_state": random_state}
        if self.family == "hybrid":
            return HybridMeanEstimator(self.strategy, **common)
        if self.family == "adpm":
            return ADPMEstimator(strategy=self.strategy, **common)
        if self.family == "pdp":
            return PDPSampleEstimator(**common)
        return MixedMeanEstimator(**common)


METHODS = {
    "kvh": _Method("hybrid", "kvh", "HybridMean, known-variance hybrid (Avent et al. Def. 4.1)"),
    "pwh": _Method("hybrid", "pwh", "HybridMean, privacy-weighted hybrid (Def. 5.3)"),
    "naive": _Method("hybrid", "naive", "HybridMean, groups weighted by size (w = c)"),
    "tcm_only": _Method("hybrid", "tcm_only", "HybridMean, tcm users only (Def. 3.1)"),
    "full_lm": _Method("hybrid", "full_lm", "HybridMean, everyone local (Def. 3.3)"),
    "lm_only": _Method("hybrid", "lm_only", "HybridMean, lm users only (Def. 3.10)"),
    "adpm": _Method("adpm", "adpm", "ADPM, optimal affine weights (Chaudhuri-Courtade)"),
    "uni": _Method("adpm", "uni", "ADPM baseline: uniform weights", needs_tcm_only=True),
    "propdpm": _Method("adpm", "propdpm", "ADPM baseline: weights ~ epsilon",
                       needs_tcm_only=True),
    "ldpe": _Method("adpm", "ldpe", "ADPM baseline: per-level Laplace means",
                    needs_tcm_only=True),
    "stretching": _Method("adpm", "stretching",
                          "ADPM baseline: stretching (Alaggan et al.), biased",
                          needs_tcm_only=True),
    "pdp_sample": _Method("pdp", None, "PDPSample, the Sample mechanism (Jorgensen et al.)",
                          needs_tcm_only=True),
    "mixed_mean": _Method("mixed", None, "MixedMean, per-epsilon means mixed (Ferrando et al.)",
                          needs_tcm_only=True),
}
# Names are the library's own strategy names (snake_case); "tcm-only", "PDP-Sample"...
# are accepted too. The default, "auto", accepts every input the command does: kvh with
# a private variance (HybridMeanEstimator's default, near the best strategy at any tcm
# share) when each trust group has one finite epsilon, else adpm (any epsilon per user).
DEFAULT_METHOD = "auto"


def _auto_method(trust_group, user_epsilon):
    """``"kvh"`` when each trust group has one finite epsilon, else ``"adpm"``."""
    if user_epsilon is None:
        return "kvh"
    if not np.all(np.isfinite(user_epsilon)):
        return "adpm"
    groups = [np.ones(len(user_epsilon), dtype=bool)] if trust_group is None else [
        trust_group == "tcm", trust_group != "tcm"]
    for rows in groups:
        if rows.any() and np.ptp(user_epsilon[rows]) != 0:
            return "adpm"
    return "kvh"


def _method_name(text):
    """The ``--estimator`` name in the library's spelling (hyphens and case forgiven)."""
    return text.strip().lower().replace("-", "_")

# The demo population has one epsilon and both trust groups. PDPSampleEstimator,
# MixedMeanEstimator and ADPM's uni / propdpm / ldpe / stretching baselines are trusted-curator
# estimators (they reject lm users: their privacy comes from the curator's noise or
# sampling); run on the tcm users alone with one epsilon they all reduce to the Laplace
# mean of those users, which is the tcm_only row. So the demo leaves them out.
_DEMO_METHODS = ("kvh", "pwh", "naive", "tcm_only", "full_lm", "lm_only", "adpm")
# Given the salaries' public variance, ADPMEstimator solves ADPM's program for it: a
# variant of the paper's Algorithm 1 (which uses the worst case). The demo says so.
_DEMO_DESCRIPTIONS = {"adpm": "ADPM variant: weights for the known variance (not Alg. 1)"}


def _noise_line(seed):
    return _SECURE_NOISE if seed is None else _SEEDED_NOISE.format(seed=seed)


def _child_seeds(seed, count):
    """``count`` independent seeds from ``seed`` (None stays None: secure randomness)."""
    if seed is None:
        return [None] * count
    return [int(child.generate_state(1)[0]) for child in np.random.SeedSequence(seed).spawn(count)]


def _use_matplotlib():
    """Whether matplotlib is importable; selects the file-only Agg backend if so."""
    try:
        import matplotlib
    except ImportError:
        return False
    matplotlib.use("Agg")  # the command line only writes files, never opens windows
    return True
