"""HybridStandardScaler and BoundsScaler: private and public preprocessing in pipelines."""

import pickle
import warnings

import numpy as np
import pytest
from sklearn import config_context
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from skhybrid.accounting import PrivacyLedger
from skhybrid.audit import audit_samples
from skhybrid.cluster import HybridKMeans
from skhybrid.exceptions import BudgetExceededError, PrivacyLeakWarning
from skhybrid.preprocessing import BoundsScaler, HybridStandardScaler

BOUNDS = ([0.0, 18.0], [500_000.0, 80.0])


def _salaries_and_ages(n=60_000, seed=0):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.lognormal(11.0, 0.5, n), rng.uniform(20, 70, n)])
    trust = np.where(rng.random(n) < 0.2, "tcm", "lm")
    return X, trust


# -- BoundsScaler -------------------------------------------------------------------------


def test_bounds_scaler_maps_the_bounds_to_the_unit_box_and_back():
    X, _ = _salaries_and_ages(100)
    scaler = BoundsScaler(BOUNDS).fit(X)
    np.testing.assert_allclose(scaler.transform([[0.0, 18.0], [500_000.0, 80.0]]),
                               [[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X)), X, rtol=1e-12)
    assert scaler.transform([[-5.0, 200.0]]).tolist() == [[0.0, 1.0]]  # clipped


def test_bounds_scaler_reads_no_value():
    a = BoundsScaler(BOUNDS).fit(np.zeros((3, 2)))
    b = BoundsScaler(BOUNDS).fit(np.full((3, 2), 1e9))
    np.testing.assert_array_equal(a.transform([[1.0, 30.0]]), b.transform([[1.0, 30.0]]))


# -- HybridStandardScaler -----------------------------------------------------------------


def test_scaler_releases_means_and_deviations_near_the_data_and_clips_its_output():
    X, trust = _salaries_and_ages()
    scaler = HybridStandardScaler(epsilon=2.0, bounds=BOUNDS, random_state=0)
    Z = scaler.fit(X, trust_group=trust).transform(X)
    np.testing.assert_allclose(scaler.mean_, X.mean(axis=0), rtol=0.05)
    np.testing.assert_allclose(scaler.scale_, X.std(axis=0), rtol=0.15)
    np.testing.assert_allclose(scaler.scale_**2, scaler.var_)
    assert np.abs(Z).max() <= 3.0 and np.abs(Z).max() == 3.0  # clipped, and reached
    np.testing.assert_allclose(scaler.inverse_transform(scaler.transform(X[:5])), X[:5],
                               rtol=1e-9)
    assert scaler.n_tcm_ + scaler.n_lm_ == X.shape[0]


def test_scaler_names_its_features_and_outputs_pandas():
    pd = pytest.importorskip("pandas")
    X, trust = _salaries_and_ages(2_000)
    frame = pd.DataFrame(X, columns=["salary", "age"])
    scaler = HybridStandardScaler(bounds=BOUNDS, random_state=0).set_output(transform="pandas")
    out = scaler.fit(frame, trust_group=trust).transform(frame)
    assert list(out.columns) == ["salary", "age"]
    assert list(scaler.get_feature_names_out()) == ["salary", "age"]


def test_scaler_without_bounds_warns_of_the_leak():
    X, trust = _salaries_and_ages(500)
    with pytest.warns(PrivacyLeakWarning):
        HybridStandardScaler(random_state=0).fit(X, trust_group=trust)


def test_scaler_charges_each_user_their_epsilon_and_refuses_over_budget():
    X, trust = _salaries_and_ages(1_000)
    ids = np.arange(X.shape[0])
    ledger = PrivacyLedger(default_budget=1.0)
    levels = np.where(trust == "tcm", 0.5, 1.0)
    scaler = HybridStandardScaler(bounds=BOUNDS, ledger=ledger, random_state=0)
    scaler.fit(X, trust_group=trust, epsilon=levels, user_id=ids)
    np.testing.assert_allclose(ledger.spent(ids), levels)
    refit = clone(scaler)
    with pytest.raises(BudgetExceededError):
        refit.fit(X, trust_group=trust, epsilon=levels, user_id=ids)
    assert not hasattr(refit, "mean_")
    np.testing.assert_allclose(ledger.spent(ids), levels)  # nothing more charged
    assert ledger.history()[-1]["estimator"] == "HybridStandardScaler"


def test_a_dask_input_is_refused_with_the_way_out():
    da = pytest.importorskip("dask.array")
    X, trust = _salaries_and_ages(500)
    with pytest.raises(TypeError, match=r"X.compute\(\)"):
        HybridStandardScaler(bounds=BOUNDS, random_state=0).fit(da.from_array(X),
                                                                 trust_group=trust)


def test_a_fit_refused_by_the_means_checks_charges_nobody():
    X, trust = _salaries_and_ages(1_000)
    ids = np.arange(X.shape[0])
    ledger = PrivacyLedger(default_budget=5.0)
    levels = np.where(ids % 2 == 0, 1.0, 2.0)  # two levels within a group: refused
    scaler = HybridStandardScaler(bounds=BOUNDS, ledger=ledger, random_state=0)
    with pytest.raises(ValueError, match="one epsilon per trust group"):
        scaler.fit(X, trust_group=trust, epsilon=levels, user_id=ids)
    np.testing.assert_array_equal(ledger.spent(ids), 0.0)


def test_a_fitted_scaler_pickles_and_clones():
    X, trust = _salaries_and_ages(500)
    scaler = HybridStandardScaler(bounds=BOUNDS, random_state=0).fit(X, trust_group=trust)
    again = pickle.loads(pickle.dumps(scaler))
    np.testing.assert_array_equal(again.transform(X), scaler.transform(X))
    assert not hasattr(clone(scaler), "mean_")


# -- the pipeline of the issue: HybridStandardScaler then HybridKMeans --------------------


def _pipeline(ledger, scaler_epsilon=0.5, kmeans_epsilon=1.0, seed=0):
    return make_pipeline(
        HybridStandardScaler(epsilon=scaler_epsilon, bounds=BOUNDS, ledger=ledger,
                             random_state=seed),
        HybridKMeans(3, epsilon=kmeans_epsilon, bounds=(-3, 3), ledger=ledger,
                     random_state=seed + 1),
    )


def test_pipeline_charges_each_user_the_sum_of_its_steps_with_routing_off():
    X, trust = _salaries_and_ages(5_000)
    ids = np.arange(X.shape[0])
    ledger = PrivacyLedger(default_budget=10.0)
    metadata = {"trust_group": trust, "user_id": ids}
    params = {f"{step}__{key}": value for step in ("hybridstandardscaler", "hybridkmeans")
              for key, value in metadata.items()}
    pipe = _pipeline(ledger).fit(X, **params)
    np.testing.assert_allclose(ledger.spent(ids), 1.5)
    assert [row["estimator"] for row in ledger.history()] == ["HybridStandardScaler",
                                                                "HybridKMeans"]
    assert pipe.predict(X[:10]).shape == (10,)


def test_pipeline_charges_the_same_with_routing_on():
    X, trust = _salaries_and_ages(5_000)
    ids = np.arange(X.shape[0])
    levels = np.where(trust == "tcm", 2.0, 1.0)
    ledger = PrivacyLedger(default_budget=10.0)
    with config_context(enable_metadata_routing=True):
        pipe = _pipeline(ledger, scaler_epsilon=1.0, kmeans_epsilon=1.0)
        for step in pipe.named_steps.values():
            step.set_fit_request(trust_group=True, epsilon=True, user_id=True)
        pipe.fit(X, trust_group=trust, epsilon=levels, user_id=ids)
    np.testing.assert_allclose(ledger.spent(ids), 2 * levels)


def _pipeline_release(X, trust, scaler_epsilon, kmeans_epsilon):
    """Draws of the pipeline's whole release (the scaler's mean and scale, the centres),
    projected on the first feature's mean, which the neighbours move the most."""

    def draw(n, rng):
        outputs = np.empty(n)
        for i, seed in enumerate(rng.integers(0, 2**31, size=n)):
            pipe = _pipeline(None, scaler_epsilon, kmeans_epsilon, seed=int(seed))
            pipe.fit(X, hybridstandardscaler__trust_group=trust,
                     hybridkmeans__trust_group=trust)
            outputs[i] = pipe[0].mean_[0]
        return outputs

    return draw


def _audit_pipeline(claimed_epsilon, scaler_epsilon, kmeans_epsilon, seed):
    # Ten tcm users in [0, 1]^2; user 0 moves from one corner to the other.
    X = np.linspace(0.0, 1.0, 10)[:, None] * np.ones(2)
    X_prime = X.copy()
    X_prime[0] = 1.0
    trust = np.array(["tcm"] * 10)
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = _pipeline_release(X * BOUNDS[1], trust, scaler_epsilon, kmeans_epsilon)(1_000, rng)
        b = _pipeline_release(X_prime * BOUNDS[1], trust, scaler_epsilon,
                              kmeans_epsilon)(1_000, rng)
    return audit_samples(a, b, claimed_epsilon, n_bins=20)


def test_pipeline_passes_the_audit_at_the_sum_of_its_steps_epsilons():
    result = _audit_pipeline(0.1 + 2.0, scaler_epsilon=2.0, kmeans_epsilon=0.1, seed=0)
    assert result.passed, str(result)


def test_pipeline_audit_fails_when_the_scalers_charge_is_forgotten():
    # Control: claiming the K-means step's epsilon alone understates the release's loss.
    result = _audit_pipeline(0.1, scaler_epsilon=2.0, kmeans_epsilon=0.1, seed=1)
    assert not result.passed, str(result)
