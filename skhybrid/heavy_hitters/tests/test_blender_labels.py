"""BLENDER on string and other hashable records; its score; an all-client fit (issue 14)."""

import warnings

import numpy as np
import pytest

from skhybrid import BlenderHeavyHitters
from skhybrid.datasets import make_search_logs
from skhybrid.exceptions import EmptyGroupWarning

IDS = make_search_logs(60_000, n_queries=30, random_state=0)
TRUST = np.where(np.random.default_rng(1).random(len(IDS)) < 0.3, "tcm", "lm")
QUERIES = np.array([f"query {q}" for q in range(IDS[:, 0].max() + 1)], dtype=object)
URLS = np.array([f"https://example.org/{u}" for u in range(IDS[:, 1].max() + 1)], dtype=object)
LABELS = np.column_stack([QUERIES[IDS[:, 0]], URLS[IDS[:, 1]]])


def _labelled(pairs):
    return [(QUERIES[q], URLS[u]) for q, u in pairs]


def _fit(X, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EmptyGroupWarning)
        return BlenderHeavyHitters(random_state=0, **params).fit(X, trust_group=TRUST)


@pytest.mark.parametrize("container", ["object", "str", "dataframe", "string-dataframe",
                                       "category-dataframe"])
def test_string_records_give_a_head_list_in_the_users_labels(container):
    pd = pytest.importorskip("pandas")
    X = {
        "object": LABELS,
        "str": LABELS.astype(str),
        "dataframe": pd.DataFrame(LABELS, columns=["query", "url"]),
        "string-dataframe": pd.DataFrame(LABELS, columns=["query", "url"]).astype("string"),
        "category-dataframe": pd.DataFrame(LABELS, columns=["q", "u"]).astype("category"),
    }[container]
    by_label = _fit(X, max_records=10)
    by_id = _fit(IDS, max_records=10)
    assert len(by_label.head_list_) == 10
    assert all(isinstance(q, str) and isinstance(u, str) for q, u in by_label.head_list_)
    # The same popular records surface whatever the encoding (the noise differs: the
    # ids differ, so the records are drawn in another order).
    assert set(by_label.head_list_[:3]) <= set(_labelled(by_id.head_list_))
    assert by_label.score(X) == pytest.approx(
        BlenderHeavyHitters.score(by_label, LABELS), abs=1e-12
    )


def test_labelled_fit_keeps_no_vocabulary_of_the_data():
    # The set of all labels is a non-private statistic: only head-list labels survive.
    estimator = _fit(LABELS, max_records=5)
    head = {label for pair in estimator.head_list_ for label in pair}
    found = set()

    def walk(value):
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, (list, tuple, np.ndarray)):
            for item in np.asarray(value, dtype=object).ravel().tolist():
                walk(item)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)

    for key, value in vars(estimator).items():
        walk(value)
    assert head and found <= head


def test_two_phase_deployment_with_labels():
    estimator = _fit(LABELS, max_records=10)
    client = estimator.make_client()
    assert client.head_list[0][0].startswith("query")
    reports = client.privatize(LABELS[TRUST == "lm"], random_state=1)
    assert reports.dtype == object
    listed = set(estimator.head_list_)
    # Every report is a head-list record or a wildcard (None).
    for query, url in reports[:500].tolist():
        assert (query, url) in listed or url is None
    estimator.fit_reports(reports)
    assert all(isinstance(q, str) for q, _ in estimator.head_list_)
    assert estimator.n_clients_ == int(np.count_nonzero(TRUST == "lm"))
    unknown = client.privatize(["no such query", "nowhere"], random_state=0)
    assert tuple(unknown) in {(None, None)} | {(q, None) for q, _ in listed} | listed


def test_score_does_not_reward_a_shorter_list():
    # The paper's NDCG normalises by the head list's own length: a one-record list in
    # the right place scored 1.0, above a good 50-record list.
    one = _fit(IDS, max_records=1)
    fifty = _fit(IDS, max_records=50)
    assert one.score(IDS) < fifty.score(IDS)
    # A truncation of the same list scores lower.
    truncated = _fit(IDS, max_records=50)
    truncated.head_list_ = truncated.head_list_[:5]
    truncated.probabilities_ = truncated.probabilities_[:5]
    assert truncated.score(IDS) < fifty.score(IDS)


def test_every_user_a_client_warns_of_an_empty_head_list():
    with pytest.warns(EmptyGroupWarning, match="every user is a client") as record:
        estimator = BlenderHeavyHitters(random_state=0).fit(IDS, trust_group=np.full(len(IDS), "lm"))
    assert record[0].filename == __file__
    assert estimator.head_list_ == []


def test_missing_labels_are_named():
    X = LABELS[:100].copy()
    X[7, 1] = None
    with pytest.raises(ValueError, match="missing records; got None at row 7, column 1"):
        BlenderHeavyHitters().fit(X, trust_group=np.ones(len(X), dtype=bool))
