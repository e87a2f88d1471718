"""BLENDER: the most popular search records from opt-in users and clients (Avent et al. 2017).

The curator's estimator (the class docstring says how). Opt-in users' noise is added by
:func:`_create_head_list` and :func:`_estimate_optin_probabilities` (Laplace on count
vectors, :mod:`._optin`); clients' noise by :meth:`BlenderClient.privatize`
(:mod:`._client`). Everything else is post-processing; every formula is in
:mod:`skhybrid.theory`. Records and head-list cells are in :mod:`._records`, the fit on
chunks of a Dask input in :mod:`._blender_chunks`.

Neighbouring relation: replace one user's record, with the group sizes public.
"""

from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from ..accounting import ReleaseCost, charge_dask_release, charge_release, check_user_id
from ..base import (
    RANDOM_STATE_CONSTRAINT,
    check_fit_metadata,
    warn_score_leak,
)
from ..exceptions import EmptyGroupWarning, warn_user
from ..theory import (
    blend_estimates,
    blending_weights,
    list_of_lists_ndcg,
    project_onto_simplex,
)
from ..utils._chunks import merge_chunk_summaries, summarise_chunk
from ..utils._dask import (
    check_dask_features,
    chunk_generators,
    is_dask_collection,
    map_chunks,
)
from ..utils._random import check_random_state
from ..utils._validation import check_epsilon, check_group_epsilons, check_trust_group
from ._blender_chunks import (
    _client_statistics,
    _HeadListSplit,
    _merged_records,
    _optin_statistics,
    _records,
)
from ._client import BlenderClient, _estimate_client_probabilities
from ._optin import _check_count_noise, _create_head_list, _estimate_optin_probabilities
from ._records import (
    _as_id_pairs,
    _check_labels,
    _distinct_records,
    _factorized_records,
    _label_records,
    _RecordCodec,
)

#: The scikit-learn checks BlenderHeavyHitters fails only because they fit on more than
#: two columns of generic data: its ``X`` holds one (query, url) record per user, and
#: reading only two of the columns would make them pass and silently mean something else.
_WIDTH_CHECKS = (
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
    "check_estimators_dtypes", "check_estimators_nan_inf", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1sample", "check_fit2d_predict1d",
    "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_n_features_in_after_fitting",
    "check_pipeline_consistency", "check_positive_only_tag_during_fit",
)
_TWO_COLUMNS = (
    "X must have exactly two columns, (query, url); this check fits on 3 to 10 columns "
    "of generic data, which BlenderHeavyHitters refuses"
)


def _headlist_group_size(n_optin, headlist_fraction):
    """``|S| = round(headlist_fraction |O|)``, leaving at least two users in T.

    Theorem 4's variance estimate needs ``|D_T| >= 2``.
    """
    return max(0, min(int(round(headlist_fraction * n_optin)), n_optin - 2))


class BlenderHeavyHitters(BaseEstimator):
    """The most popular search records and their probabilities under the hybrid model (BLENDER).

    Every user holds one (query, url) record. Opt-in users ("tcm") trust the curator,
    which builds a private head list of popular records from some of them and
    estimates the records' probabilities from the others; clients ("lm") privatize
    their record against that head list on their devices (:class:`BlenderClient`).
    The two groups' estimates are blended per record with inverse-variance weights.

    Read more in docs/privacy.rst about the guarantee and its neighbouring relation.

    Parameters
    ----------
    epsilon : float, default=4.0
        Every user's privacy level when no ``epsilon`` metadata is passed (the paper's
        choice, Section 4.2.1).
    delta : float, default=1e-5
        Every user's delta, in (0, 1): spent by the head-list threshold for opt-in
        users and by LocalAlg for clients. Take it well below ``1 / n_users``.
    max_records : int, default=50
        ``M``, the largest number of records in the head list.
    headlist_fraction : float, default=0.95
        ``f_O``, the share of opt-in users (S) that builds the candidate head list; the
        others (T) estimate the candidates' probabilities. At least two opt-in users
        are always left in T.
    query_budget_fraction : float, default=0.85
        ``f_C``, the share of each client's budget spent on reporting the query; the
        rest is spent on the URL.
    project_to_simplex : bool, default=True
        Project the blended estimates of all cells (head-list records and wildcards)
        onto the probability simplex, so that they are non-negative and sum to 1
        (BlendProbabilities, line 5, which the paper's experiments use).
    random_state : None, int or numpy.random.Generator, default=None
        ``None`` draws noise from the operating system's secure randomness; an int
        gives reproducible noise (simulations only). Also drives the split of the
        opt-in users and, in ``fit``, the simulated clients' randomizer.

    ledger : PrivacyLedger, default=None
        Charge every release to this :class:`~skhybrid.accounting.PrivacyLedger`:
        each user pays their own privacy cost (docs/user_guide/accounting.rst) before
        any noise is drawn, or the fit raises
        :class:`~skhybrid.exceptions.BudgetExceededError` and releases nothing. Needs
        ``user_id`` in ``fit``. Shared, never copied, by ``clone`` and model selection.

    Attributes
    ----------
    head_list_ : list of tuple
        The head list: (query, url) tuples, most probable first, in the ids or labels
        of ``X``. The clients randomize against this set of records.
    probabilities_ : ndarray of shape (n_records,)
        The blended probability estimate of each record of ``head_list_`` (projected
        when ``project_to_simplex``).
    variances_ : ndarray of shape (n_records,)
        The variance of the blended (unprojected) estimates, ``w^2 sigma^2_O + (1 - w)^2
        sigma^2_C`` (Theorem 6) with the groups' variance estimates.
    weights_ : ndarray of shape (n_records,)
        ``w``, the weight of the opt-in estimate in each blend.
    optin_probabilities_, optin_variances_ : ndarray of shape (n_records,)
        The opt-in users' estimates (from T) and Theorem 4's variance estimates.
    client_probabilities_, client_variances_ : ndarray of shape (n_records,)
        The clients' denoised estimates (Observation 1) and Theorem 5's variance
        estimates; NaN and inf when fewer than two clients reported.
    other_probability_ : float
        The blended probability of all records outside the head list (the wildcard
        cells).
    n_candidates_ : int
        The size of the candidate head list built from S, before keeping the
        ``max_records`` most probable.
    n_headlist_users_, n_estimation_users_, n_clients_ : int
        ``|S|``, ``|T|`` and the number of clients (public group sizes).
    n_features_in_ : int
        Always 2.
    feature_names_in_ : ndarray of shape (2,)
        Defined when ``X`` has string feature names.

    See Also
    --------
    BlenderClient : LocalAlg, the client-side randomizer.
    skhybrid.theory.list_of_lists_ndcg : the metric of :meth:`score`.

    Notes
    -----
    *Privacy.* Each opt-in user is in S or in T, never both. CreateHeadList is
    (epsilon, delta)-DP for S: it counts the records S holds (the domain comes from
    the data) and keeps those whose count plus ``Laplace(2 / epsilon)`` noise exceeds
    ``tau = 1 + (2 / epsilon) ln(1 / delta)``, so a record held by one user alone
    surfaces with probability ``delta / 2``. EstimateOptinProbabilities is epsilon-DP
    for T (Laplace noise on a count vector over a partition fixed by S's output).
    LocalAlg is (epsilon, delta)-DP for each client in the local model (Theorem 3).
    Denoising, blending and the projection are post-processing. Group membership and
    the sizes of S, T and the clients are public.

    *Two phases.* In a deployment the clients need the head list before they can
    report. Fit the opt-in users alone (``trust_group=None``), publish ``head_list_``,
    let each device run ``make_client().privatize(record)``, then call
    :meth:`fit_reports` with the collected reports: it blends them with the opt-in
    estimates of the first fit and spends no further budget. ``fit`` with clients in
    ``X`` simulates all of this in one call.

    *Records.* ``X`` has exactly two columns, (query, url): integer ids >= 0
    (integer-valued floats are accepted), or labels, such as strings or any hashable
    values (object or string arrays, pandas columns of any dtype). With labels,
    ``head_list_``, :meth:`make_client`'s client and :meth:`fit_reports` speak in
    those labels (``None`` is the wildcard in reports); the fit encodes them once and
    keeps only the head list's own labels, never the set of all labels it saw (that
    would be a non-private statistic). URL ids may be local to a query: the pair
    identifies a record. Dask inputs must hold integer ids.

    *scikit-learn's generic checks.* Those that fit on 3 to 10 columns fail by design;
    :func:`skhybrid.utils.estimator_checks.expected_failed_checks` lists them.

    *Empty head list.* With no opt-in user, the fit warns with
    :class:`~skhybrid.exceptions.EmptyGroupWarning` and the head list is empty; it can
    also be the private outcome of the threshold. Clients then have nothing to report.

    *Head list.* The head list is the ``max_records`` candidates with the highest
    opt-in estimates from T (Figure 4), so those estimates are biased upwards near
    the cut-off (a selection effect the paper shares); the clients' estimates are not.

    *Dask inputs.* ``X`` (and the metadata) may be a Dask array of shape (n_users, 2)
    or a Dask DataFrame of two columns. The fit is two reductions over the chunks: the
    record counts of S and of T (the curator's split is drawn in blocks of opt-in
    users, so it does not depend on the chunking), then, against the head list built
    from them, the counts of the clients' reports, each chunk's clients randomizing
    with that chunk's own generator. Only distinct records and counts travel; ``X`` is
    never collected. With opt-in users only, the fit equals the in-memory one for the
    same seed.

    References
    ----------
    B. Avent, A. Korolova, D. Zeber, T. Hovden and B. Livshits. "BLENDER: Enabling
    Local Search with a Hybrid Differential Privacy Model". USENIX Security 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skhybrid.datasets import make_search_logs
    >>> from skhybrid.heavy_hitters import BlenderHeavyHitters
    >>> X = make_search_logs(200_000, random_state=0)
    >>> trust = np.where(np.random.default_rng(1).random(200_000) < 0.1, "tcm", "lm")
    >>> est = BlenderHeavyHitters(max_records=10, random_state=0)
    >>> est = est.fit(X, trust_group=trust)
    >>> len(est.head_list_), est.head_list_[0]
    (10, (0, 0))
    >>> bool(0 < est.score(X) <= 1)
    True

    Records may be labels; the head list is then in those labels:

    >>> queries = np.array(["weather", "news", "maps"], dtype=object)
    >>> labelled = np.column_stack([queries[X[:, 0] % 3], X[:, 1].astype(str)])
    >>> est = BlenderHeavyHitters(max_records=3, random_state=0)
    >>> est = est.fit(labelled, trust_group=trust)
    >>> est.head_list_[0][0] in {"weather", "news", "maps"}
    True
    """

    _parameter_constraints: dict = {
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "max_records": [Interval(Integral, 1, None, closed="left")],
        "headlist_fraction": [Interval(Real, 0, 1, closed="neither")],
        "query_budget_fraction": [Interval(Real, 0, 1, closed="neither")],
        "project_to_simplex": ["boolean"],
        "random_state": RANDOM_STATE_CONSTRAINT,
        "ledger": [HasMethods(["charge"]), None],
    }

    #: scikit-learn checks failed by design, with the reason; published by
    #: :func:`skhybrid.utils.estimator_checks.expected_failed_checks`.
    _expected_failed_checks = {name: _TWO_COLUMNS for name in _WIDTH_CHECKS}

    def __init__(
        self,
        *,
        epsilon=4.0,
        delta=1e-5,
        max_records=50,
        headlist_fraction=0.95,
        query_budget_fraction=0.85,
        project_to_simplex=True,
        random_state=None,
        ledger=None,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.max_records = max_records
        self.headlist_fraction = headlist_fraction
        self.query_budget_fraction = query_budget_fraction
        self.project_to_simplex = project_to_simplex
        self.random_state = random_state
        self.ledger = ledger

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, trust_group=None, epsilon=None, user_id=None):
        """Build the private head list and estimate its records' probabilities.

        Parameters
        ----------
        X : array-like of shape (n_users, 2), or Dask array or DataFrame
            One (query, url) record of integer ids >= 0 per user. Clients' rows are
            their true records: their randomizer is simulated here with
            :class:`BlenderClient`. A Dask input is read chunk by chunk (see Notes).
        y : ignored
        trust_group : array-like of shape (n_users,), default=None
            ``"tcm"`` (opt-in) / ``"lm"`` (client), case-insensitive, or booleans
            (True = opt-in); ``None`` means every user opts in.
        epsilon : array-like of shape (n_users,), default=None
            Per-user privacy levels, one value for the opt-in users and one for the
            clients. ``None`` uses the ``epsilon`` parameter.

        user_id : array-like of shape (n_samples,), default=None
            One distinct id per row (integers or strings): who the ledger charges.
            Required with ``ledger``, ignored without it.

        Returns
        -------
        self : BlenderHeavyHitters
        """
        check_fit_metadata(self, trust_group, epsilon, hybrid=True)
        check_user_id(self, user_id)
        self.__dict__.pop("_head_labels", None)
        vocabularies = None  # each column's labels, when the records are labels (secret)
        # Two reductions over chunks of users (an in-memory X is one chunk): the record
        # counts of S and T, from which the curator builds the head list; then the
        # counts of the clients' reports against it. A Dask X is never collected.
        if is_dask_collection(X):
            n_optin_per_chunk, n_clients, epsilon_optin, epsilon_client = (
                self._summarise_dask_input(X, trust_group, epsilon)
            )
            _check_count_noise(sum(n_optin_per_chunk), epsilon_optin)
            charge_dask_release(self, user_id, trust_group, epsilon, allow_inf=False)

            def reduce(function, generators):
                return map_chunks(function, X, generators=generators, trust_group=trust_group)
        else:
            X, vocabularies = self._validate_records(X, reset=True)
            is_optin = check_trust_group(trust_group, X.shape[0])
            user_epsilon = check_epsilon(self.epsilon if epsilon is None else epsilon,
                                         None if epsilon is None else X.shape[0])
            epsilon_optin, epsilon_client = check_group_epsilons(
                user_epsilon, is_optin, "BlenderHeavyHitters"
            )
            n_optin_per_chunk = [int(np.count_nonzero(is_optin))]
            n_clients = X.shape[0] - n_optin_per_chunk[0]
            _check_count_noise(n_optin_per_chunk[0], epsilon_optin)
            charge_release(self, user_id, is_optin, user_epsilon)

            def reduce(function, generators):
                return [function(X, is_optin, offset=0, rng=generators[0])]

        rng = check_random_state(self.random_state)
        n_optin = sum(n_optin_per_chunk)
        if n_optin == 0:
            warn_user(
                "every user is a client (lm): the head list is built from opt-in (tcm) "
                "users, so it is empty and no record is estimated",
                EmptyGroupWarning,
            )
        n_headlist = _headlist_group_size(n_optin, self.headlist_fraction)
        split = _HeadListSplit(n_optin, n_headlist, rng)
        rank_starts = np.concatenate([[0], np.cumsum(n_optin_per_chunk)])
        parts = reduce(_optin_statistics, [
            split.part(int(start), int(stop))
            for start, stop in zip(rank_starts[:-1], rank_starts[1:])
        ])
        headlist_records, headlist_counts = _merged_records([part[:2] for part in parts])
        estimation_records, estimation_counts = _merged_records([part[2:] for part in parts])

        candidates = np.zeros((0, 2), dtype=np.int64)
        if n_headlist:
            candidates = _create_head_list(
                headlist_records, counts=headlist_counts, epsilon=epsilon_optin,
                delta=self.delta, rng=rng,
            )
        self.n_headlist_users_ = n_headlist
        self.n_estimation_users_ = n_optin - n_headlist
        self.n_candidates_ = candidates.shape[0]
        if candidates.shape[0] == 0:
            self._set_empty_head_list(n_clients)
            return self
        layout, optin_estimates, optin_variances = _estimate_optin_probabilities(
            estimation_records, candidates, counts=estimation_counts, epsilon=epsilon_optin,
            max_records=self.max_records, rng=rng,
        )
        self._head_records = layout.records
        self._optin_cells = (optin_estimates, optin_variances)

        client = None
        report_counts = None
        if n_clients:
            # The clients' devices randomize their records: each chunk's own generator.
            client = self._client(epsilon_client)
            device_rngs = chunk_generators(rng, len(n_optin_per_chunk))
            report_counts = sum(reduce(partial(_client_statistics, client=client), device_rngs))
        self._blend(layout, client, report_counts)
        if vocabularies is not None:
            self._publish_labels(*vocabularies)
        return self

    @_fit_context(prefer_skip_nested_validation=True)
    def fit_reports(self, reports, *, epsilon=None):
        """Replace the clients' part of the fit by reports privatized on their devices.

        The second phase of a deployment (see Notes of the class): the opt-in users'
        estimates of the last ``fit`` are blended with these reports' denoised
        estimates. No data other than the reports is read and no noise is drawn.

        Parameters
        ----------
        reports : array-like of shape (n_clients, 2)
            The clients' reports, from :meth:`BlenderClient.privatize` with
            :meth:`make_client`'s head list and privacy parameters.
        epsilon : float, default=None
            The clients' privacy level; ``None`` uses the ``epsilon`` parameter.

        Returns
        -------
        self : BlenderHeavyHitters
        """
        client = self.make_client(epsilon)
        reports = client._ids(reports, name="reports", whom="fit_reports", wildcard=True)
        cells = client._layout.cells_of_reports(reports)
        report_counts = np.bincount(cells, minlength=client._layout.n_cells)
        self._blend(client._layout, client, report_counts if cells.size else None)
        return self

    def make_client(self, epsilon=None):
        """The client-side randomizer for the fitted head list (LocalAlg).

        Parameters
        ----------
        epsilon : float, default=None
            The clients' privacy level; ``None`` uses the ``epsilon`` parameter.

        Returns
        -------
        client : BlenderClient
        """
        check_is_fitted(self)
        if not hasattr(self, "_head_records"):
            raise ValueError(
                "the fitted head list is empty, so clients have nothing to report; fit "
                "on more opt-in users or with a larger epsilon or delta"
            )
        return self._client(self.epsilon if epsilon is None else epsilon)

    def score(self, X, y=None):
        """The list-of-lists NDCG of the head list against every record in ``X``.

        Queries are ranked by the sum of their records' ``probabilities_`` and each
        query's URLs by their probabilities, and compared with the frequencies of the
        records in ``X`` (:func:`skhybrid.theory.list_of_lists_ndcg`, Section 4), with
        ideal lists holding *every* query and URL of ``X`` (``ideal="all"``): a
        shorter list never scores higher for being short, so scores of different
        ``max_records`` are comparable in model selection. The paper's own figures
        use the ideal of the head list's length (``ideal="estimated"``).

        Not private (it reads ``X`` exactly, and no ledger charges it): for simulations.
        Select on real data with :class:`~skhybrid.model_selection.PrivateGridSearchCV`
        (docs/user_guide/private_selection.rst).

        Parameters
        ----------
        X : array-like of shape (n_users, 2)
            (query, url) records: integer ids >= 0, or labels as in :meth:`fit`.
        y : ignored

        Returns
        -------
        score : float
            In [0, 1], higher is better; 0 for an empty head list.
        """
        check_is_fitted(self)
        warn_score_leak(self)
        X, vocabularies = self._validate_records(X, reset=False)
        if not self.head_list_:
            return 0.0
        if vocabularies is None and "_head_labels" not in self.__dict__:
            head = np.array(self.head_list_, dtype=np.int64)
        else:  # labels: one encoding of the head list and X's records together
            records = X if vocabularies is None else np.column_stack(
                [np.asarray(vocabularies[j], dtype=object)[X[:, j]] for j in range(2)]
            )
            head = np.empty((len(self.head_list_), 2), dtype=object)
            head[:] = self.head_list_
            ids, _ = _factorized_records(np.concatenate([head, records.astype(object)]))
            head, X = ids[: head.shape[0]], ids[head.shape[0]:]
        distinct, counts = _distinct_records(X)
        return list_of_lists_ndcg((head, self.probabilities_), (distinct, counts), ideal="all")

    # -- private helpers ------------------------------------------------------------------

    def _validate_records(self, X, *, reset):
        """Records as int64 ids, and for label records each column's labels (else None)."""
        labels = _label_records(X)
        if labels is None:
            X = validate_data(self, X, reset=reset, dtype="numeric")
            return _as_id_pairs(X, name="X", whom=type(self).__name__), None
        validate_data(self, X, reset=reset, dtype=None, ensure_all_finite=False)
        return _factorized_records(_check_labels(labels, name="X"))

    def _publish_labels(self, queries, urls):
        """Report the head list in the user's labels; keep only the head list's own labels.

        ``queries`` and ``urls`` list every label of the data (secret): only those of
        head-list records survive, and the clients' ids come from the head list alone.
        """
        def labelled(pairs):
            return [(queries[query], urls[url]) for query, url in pairs]

        self.head_list_ = labelled(self.head_list_)
        self._head_labels = labelled(self._head_records.tolist())
        self._head_records = _RecordCodec(self._head_labels).records

    def _summarise_dask_input(self, X, trust_group, epsilon):
        """Validate a Dask input chunk by chunk (one reduction).

        Returns
        -------
        n_optin_per_chunk : list of int
        n_clients : int
        epsilon_optin, epsilon_client : float or None
        """
        check_dask_features(self, X, reset=True)
        if self.n_features_in_ != 2:
            _as_id_pairs(np.zeros((0, self.n_features_in_)), name="X",
                         whom=type(self).__name__)
        default_epsilon = check_epsilon(self.epsilon) if epsilon is None else None
        summaries = map_chunks(
            partial(summarise_chunk, default_epsilon=default_epsilon,
                    estimator_name=type(self).__name__, check_values=_records),
            X, trust_group=trust_group, epsilon=epsilon,
        )
        if sum(summary.n_tcm + summary.n_lm for summary in summaries) == 0:
            raise ValueError("X has 0 samples; BlenderHeavyHitters needs at least one")
        users = merge_chunk_summaries(summaries, type(self).__name__)
        n_optin_per_chunk = [summary.n_tcm for summary in summaries]
        return n_optin_per_chunk, users.n_lm, users.epsilon_tcm, users.epsilon_lm

    def _release_cost(self, is_tcm, epsilon, **_):
        """``(epsilon, delta)`` for every user: opt-in users by Theorem 1's head list and
        estimates, clients by Theorem 3's local randomizer (Avent et al. 2017)."""
        return ReleaseCost.at_levels(epsilon, delta=float(self.delta),
                                     mechanism="laplace+randomized-response")

    def _client(self, epsilon):
        head = self.__dict__.get("_head_labels", self._head_records)
        return BlenderClient(head, epsilon=epsilon, delta=self.delta,
                             query_budget_fraction=self.query_budget_fraction)

    def _blend(self, layout, client, report_counts):
        """BlendProbabilities (Figure 7) over the layout's cells; sets the fitted attributes."""
        optin_estimates, optin_variances = self._optin_cells
        n_reports = 0 if report_counts is None else int(report_counts.sum())
        if n_reports >= 2:
            client_estimates, client_variances = _estimate_client_probabilities(
                report_counts, client
            )
        else:  # no client estimate: the blend takes the opt-in estimate (weight 1)
            client_estimates = np.full(layout.n_cells, np.nan)
            client_variances = np.full(layout.n_cells, np.inf)
        estimates, variances = blend_estimates(
            optin_estimates, optin_variances, client_estimates, client_variances
        )
        released = project_onto_simplex(estimates) if self.project_to_simplex else estimates

        cells = layout.record_cells
        # Most probable first; the unprojected blend breaks the projection's ties at 0.
        order = cells[np.argsort(-estimates[cells], kind="stable")]
        wildcards = np.ones(layout.n_cells, dtype=bool)
        wildcards[cells] = False
        ordered = layout.cell_records[order]
        labels = self.__dict__.get("_head_labels")  # after a fit on labels
        self.head_list_ = (_RecordCodec(labels).decode(ordered) if labels is not None
                           else [tuple(pair) for pair in ordered.tolist()])
        self.probabilities_ = released[order]
        self.variances_ = variances[order]
        self.weights_ = np.asarray(blending_weights(optin_variances, client_variances))[order]
        self.optin_probabilities_ = optin_estimates[order]
        self.optin_variances_ = optin_variances[order]
        self.client_probabilities_ = client_estimates[order]
        self.client_variances_ = client_variances[order]
        self.other_probability_ = float(released[wildcards].sum())
        self.n_clients_ = n_reports

    def _set_empty_head_list(self, n_clients):
        """No candidate passed the threshold: nothing is estimated, clients have nothing to say."""
        for name in ("_head_records", "_optin_cells"):
            self.__dict__.pop(name, None)
        self.head_list_ = []
        for name in ("probabilities_", "variances_", "weights_", "optin_probabilities_",
                     "optin_variances_", "client_probabilities_", "client_variances_"):
            setattr(self, name, np.zeros(0))
        self.other_probability_ = 1.0
        self.n_clients_ = n_clients

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        tags.input_tags.allow_nan = False
        # Records are non-negative integer ids: scikit-learn's checks then feed such data.
        tags.input_tags.categorical = True
        tags.input_tags.positive_only = True
        return tags
