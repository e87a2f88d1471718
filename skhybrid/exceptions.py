"""Warnings and errors specific to skhybrid."""


class PrivacyLeakWarning(UserWarning):
    """A computation releases information about the data beyond its stated guarantee.

    Raised, for example, when ``bounds=None`` makes an estimator derive the clipping
    bounds from the data itself: the bounds then depend on the private values, so the
    estimate is no longer differentially private. Give data-independent bounds to
    silence it.
    """


class EmptyGroupWarning(UserWarning):
    """A hybrid strategy fell back to one group's estimate because the other group is empty.

    Also emitted when a hybrid strategy is fit without ``trust_group``: every user is
    then tcm, which is rarely what a hybrid fit means (with metadata routing on, request
    the metadata with ``set_fit_request(trust_group=True)`` and pass it).
    """


class MetadataOverrideWarning(UserWarning):
    """Per-sample ``epsilon`` metadata replaced a non-default ``epsilon`` parameter.

    The metadata wins: the parameter then has no effect on the fit, so a grid search
    over it compares identical fits. Leave the parameter at its default when passing
    per-user privacy levels.
    """


class PrivacyBudgetWarning(UserWarning):
    """A release spends the users' privacy budget again.

    Emitted when an estimator fitted with ``partial_fit`` releases a new estimate after
    more data arrived: every user whose data entered an earlier release has now taken
    part in two releases, so their total privacy loss is the sum of the epsilons spent
    (sequential composition).
    """


__all__ = [
    "EmptyGroupWarning",
    "MetadataOverrideWarning",
    "PrivacyBudgetWarning",
    "PrivacyLeakWarning",
]
