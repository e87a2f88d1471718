"""The additive noise mechanisms an estimator's ``mechanism`` parameter names.

A :class:`NoiseFamily` is everything an estimator needs of one kind of noise: its
central release of a group's mean (calibrated from a stated sensitivity, with its noise
variance), the local randomizer lm users run, how a release of several features shares
the noise, and what a release costs each user on a ledger. Estimators resolve their
``mechanism`` string once per fit with :func:`get_noise_family`; an unknown name raises.
Adding a mechanism touches three files: a module with its noise and its central and
local classes, a family here, and the exports of :mod:`skhybrid.mechanisms`.
"""

import numpy as np

from ..accounting import ReleaseCost
from ._calibration import gaussian_noise_multiplier
from ._central import GaussianMechanism, LaplaceMechanism
from ._feature_weights import l1_common_width, l2_common_width
from ._local import LocalGaussianRandomizer, LocalLaplaceRandomizer


class NoiseFamily:
    """One kind of additive noise, central and local (see the module docstring).

    Each family implements:

    - ``check_delta(delta)``: refuse a ``delta`` it cannot use;
    - ``mean_sensitivity(ranges, group_size)``: the sensitivity (in its norm) of a
      group's mean of values within ``ranges``, replacing one user;
    - ``common_width(ranges)``: the scaled features' common range
      (:func:`~skhybrid.mechanisms._feature_weights.feature_noise_weights`);
    - ``central(epsilon=, delta=, sensitivity=)``: the central mechanism for a
      statistic of that sensitivity, which draws the noise (``randomise``) and states
      its ``variance``;
    - ``local_randomizer(epsilon=, delta=, lower=, upper=)``: what lm users' devices run;
    - ``release_cost(epsilon, delta=, n_users=, charged=None)``: each user's
      :class:`~skhybrid.accounting.ReleaseCost` of one release at their level
      (``inf``: public, not charged), for the ``charged`` users (None: everyone).

    Attributes
    ----------
    name : str
        The value of the estimators' ``mechanism`` parameter.
    pure : bool
        Pure epsilon-DP (its cost is an epsilon that composes by addition); otherwise
        (epsilon, delta)-DP, charged by its noise multiplier.
    """

    name = None
    pure = True

    def __repr__(self):
        return f"<{self.name} noise>"


class LaplaceFamily(NoiseFamily):
    """Laplace noise: pure epsilon-DP, calibrated to the L1 sensitivity."""

    name = "laplace"

    def check_delta(self, delta):
        if delta != 0:
            raise ValueError(
                f"delta={delta!r} is only used by mechanism='gaussian'; the Laplace "
                "mechanism is pure epsilon-DP, so leave delta=0"
            )

    def mean_sensitivity(self, ranges, group_size):
        return np.asarray(ranges).sum(axis=-1) / group_size

    common_width = staticmethod(l1_common_width)

    def central(self, *, epsilon, delta, sensitivity):
        return LaplaceMechanism(epsilon=epsilon, sensitivity=sensitivity)

    def local_randomizer(self, *, epsilon, delta, lower, upper):
        return LocalLaplaceRandomizer(bounds=(lower, upper), epsilon=epsilon)

    def release_cost(self, epsilon, *, delta, n_users, charged=None):
        return ReleaseCost.at_levels(epsilon, charged=charged, mechanism=self.name)


class GaussianFamily(NoiseFamily):
    """Gaussian noise: (epsilon, delta)-DP, calibrated to the L2 sensitivity (analytic)."""

    name = "gaussian"
    pure = False

    def check_delta(self, delta):
        if not 0 < delta < 1:
            raise ValueError(f"the Gaussian mechanism needs delta in (0, 1); got delta={delta!r}")

    def mean_sensitivity(self, ranges, group_size):
        return np.sqrt(np.sum(ranges**2)) / group_size

    common_width = staticmethod(l2_common_width)

    def central(self, *, epsilon, delta, sensitivity):
        return GaussianMechanism(epsilon=epsilon, delta=delta, sensitivity=sensitivity)

    def local_randomizer(self, *, epsilon, delta, lower, upper):
        return LocalGaussianRandomizer(bounds=(lower, upper), epsilon=epsilon, delta=delta)

    def release_cost(self, epsilon, *, delta, n_users, charged=None):
        # Charged by its noise multiplier: the ledger composes Gaussian releases exactly.
        levels = np.broadcast_to(ReleaseCost.at_levels(epsilon).epsilon, (n_users,))
        # Public users (level 0 here) are not charged: their data are public.
        charged = levels > 0 if charged is None else charged & (levels > 0)
        multiplier = np.full(n_users, np.inf)
        distinct, inverse = np.unique(levels[charged], return_inverse=True)
        multiplier[charged] = np.array([
            gaussian_noise_multiplier(level, delta) for level in distinct
        ])[inverse]
        return ReleaseCost(np.zeros(n_users), noise_multiplier=multiplier, mechanism=self.name)


LAPLACE = LaplaceFamily()
GAUSSIAN = GaussianFamily()

#: Every mechanism an estimator's ``mechanism`` parameter may name.
NOISE_FAMILIES = {family.name: family for family in (LAPLACE, GAUSSIAN)}


def get_noise_family(name):
    """The :class:`NoiseFamily` called ``name``; raises ValueError for any other name."""
    try:
        return NOISE_FAMILIES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"mechanism must be one of {sorted(NOISE_FAMILIES)}; got {name!r}"
        ) from None
