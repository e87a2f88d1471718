"""BLENDER's clients (local model): LocalAlg and EstimateClientProbabilities.

:class:`BlenderClient` randomizes a client's record on its device (Avent et al. 2017,
Figure 6): the noise of clients comes from here. The curator denoises the reports
(Figure 5, Observation 1).
"""

import numpy as np

from ..theory import (
    client_variance_estimate,
    denoise_client_reports,
    local_alg_achieved_privacy,
    local_alg_parameters,
    local_alg_transition_matrix,
)
from ..utils._random import check_random_state
from ..utils._validation import check_epsilon
from ._records import (
    _check_labels,
    _check_records,
    _distinct_records,
    _HeadListLayout,
    _label_records,
    _RecordCodec,
    _sample_rows,
)


class BlenderClient:
    """LocalAlg (Figure 6 of BLENDER): a client privatizes its own record against the head list.

    Runs on each client's device, or on many at once in a simulation. The client keeps
    its query with probability ``t`` and otherwise reports a uniformly random other
    head-list query with a uniformly random URL of it; having kept the query, it keeps
    its URL with probability ``t_q`` and otherwise reports another URL of that query. A
    record outside the head list is first replaced by its wildcard: ``(q, *)`` when
    ``q`` is a head-list query, ``(*, *)`` otherwise. The report is one categorical draw
    from the row of :attr:`transition_matrix` of the client's cell.

    The budget is split between the two stages, ``epsilon_Q = query_budget_fraction *
    epsilon`` for the query and the rest for the URL (and ``delta`` likewise); by
    Theorem 3 each report is (epsilon, delta)-differentially private for its client in
    the local model, whatever the other clients or the curator do.

    Parameters
    ----------
    head_list : array-like of shape (n_records, 2) or list of (query, url) tuples
        The head list published by the curator (``BlenderHeavyHitters.head_list_``):
        distinct records, at least one: integer ids >= 0, or labels (strings or any
        hashable values). Only the set of records matters to the reports'
        distribution. With labels, records and reports are labels too, and ``None``
        stands for the wildcard ``*`` in reports.
    epsilon : float
        The client's privacy level, > 0.
    delta : float
        In (0, 1).
    query_budget_fraction : float, default=0.85
        ``f_C``, the share of the budget spent on the query, in (0, 1) (the paper's
        0.85, Section 4.2.1).

    Attributes
    ----------
    head_list : list of tuple
        The head list's records as (query, url) tuples of ints.
    report_records : ndarray of int64, shape (n_cells, 2)
        Every possible report: the head-list records and the wildcards (:data:`WILDCARD`
        for ``*``), query by query, the wildcard query last.
    urls_per_query : ndarray of int64, shape (n_queries + 1,)
        ``k_q`` per head-list query, wildcard URL included, and 1 for the wildcard query.
    parameters : LocalAlgParameters
        The keep probabilities ``t``, ``t_q`` and the stage budgets.

    See Also
    --------
    BlenderHeavyHitters : the curator's side; ``fit_reports`` consumes these reports.

    Examples
    --------
    >>> from skhybrid.heavy_hitters import BlenderClient
    >>> client = BlenderClient([(0, 0), (0, 1), (3, 0)], epsilon=4.0, delta=1e-5)
    >>> reports = client.privatize([[0, 1], [3, 7], [9, 9]], random_state=0)
    >>> reports.shape
    (3, 2)
    >>> client.report_records.tolist()
    [[0, 0], [0, 1], [0, -1], [3, 0], [3, -1], [-1, -1]]
    """

    def __init__(self, head_list, *, epsilon, delta, query_budget_fraction=0.85):
        if len(head_list) == 0:
            raise ValueError("head_list must hold at least one (query, url) record; got none")
        labels = _label_records(head_list)
        self._codec = None
        if labels is not None:
            self._codec = _RecordCodec(_check_labels(labels, name="head_list").tolist())
            records = self._codec.records
        else:
            records = _check_records(head_list, name="head_list", whom="BlenderClient")
        distinct, counts = _distinct_records(records)
        if np.any(counts > 1):
            raise ValueError(
                f"head_list records must be distinct; {tuple(distinct[counts > 1][0].tolist())} "
                "appears more than once"
            )
        self.epsilon = check_epsilon(epsilon)
        self.delta = float(delta)
        self.query_budget_fraction = float(query_budget_fraction)
        self._layout = _HeadListLayout(records)
        self.head_list = self._labels(records)
        self.report_records = self._layout.cell_records.copy()
        if self._codec is not None:
            self.report_records = np.array(self._labels(self.report_records) or [],
                                           dtype=object).reshape(-1, 2)
        self.urls_per_query = self._layout.urls_per_query.copy()
        self.parameters = local_alg_parameters(
            self.epsilon, self.delta, self.urls_per_query,
            query_budget_fraction=self.query_budget_fraction,
        )
        self._cumulative = np.cumsum(self.transition_matrix, axis=1)

    @property
    def transition_matrix(self):
        """``P(report y | true cell x)`` over :attr:`report_records`, shape (n_cells, n_cells)."""
        return local_alg_transition_matrix(
            self.parameters.query_keep_probability,
            self.parameters.url_keep_probability,
            self.urls_per_query,
        )

    def achieved_privacy(self):
        """The (epsilon, delta) that Theorem 3's proof certifies for these keep probabilities.

        Returns
        -------
        epsilon, delta : float
        """
        return local_alg_achieved_privacy(
            self.parameters.query_keep_probability,
            self.parameters.url_keep_probability,
            self.urls_per_query,
            epsilon_query=self.parameters.epsilon_query,
            epsilon_url=self.parameters.epsilon_url,
        )

    def privatize(self, records, *, random_state=None):
        """Privatize each client's record: the report its device sends.

        Parameters
        ----------
        records : array-like of shape (n_clients, 2) or (2,)
            Each client's true (query, url) record, integer ids >= 0.
        random_state : None, int or numpy.random.Generator, default=None
            ``None`` uses the operating system's secure randomness (for real devices);
            an int gives reproducible reports (simulations only).

        Returns
        -------
        reports : ndarray of int64, shape (n_clients, 2) or (2,)
            Rows of :attr:`report_records`; :data:`WILDCARD` marks ``*``.
        """
        true_records = self._ids(records, name="records", whom="BlenderClient.privatize")
        cells = self._privatize_cells(self._layout.cells_of_records(true_records),
                                      check_random_state(random_state))
        reports = self.report_records[cells]
        return reports[0] if np.ndim(records) == 1 else reports

    def _labels(self, ids):
        """Records as the user's tuples: labels (None for ``*``) or ints."""
        if self._codec is None:
            return [tuple(pair) for pair in ids.tolist()]
        return self._codec.decode(ids)

    def _ids(self, records, *, name, whom, wildcard=False):
        """Records (labels or ids) as int64 ids of this client's head list."""
        if self._codec is None:
            return _check_records(records, name=name, whom=whom, allow_wildcard=wildcard)
        labels = np.empty((1, 2), dtype=object) if np.ndim(records) == 1 else None
        if labels is not None:
            labels[0] = list(records)
        else:
            labels = np.asarray(records, dtype=object)
            if labels.ndim != 2:
                labels = labels.reshape(-1, 2) if labels.size % 2 == 0 else labels
        if not wildcard:
            _check_labels(labels, name=name)
        return self._codec.encode(labels.tolist(), wildcard=wildcard)

    def _privatize_cells(self, cells, rng):
        """LocalAlg on cells: a categorical draw from each client's transition row."""
        return _sample_rows(self._cumulative, cells, rng)


def _estimate_client_probabilities(report_counts, client):
    """EstimateClientProbabilities (Figure 5): the curator denoises the clients' reports.

    Observation 1's unbiased estimates and Theorem 5's (corrected) variance estimates
    per cell of ``client``'s head list. The variance estimates are never negative (each
    is the plug-in variance of a linear function of multinomial frequencies); the clip
    only absorbs rounding.
    """
    randomizer = {
        "query_keep_probability": client.parameters.query_keep_probability,
        "url_keep_probability": client.parameters.url_keep_probability,
        "urls_per_query": client.urls_per_query,
    }
    _, probabilities = denoise_client_reports(report_counts, **randomizer)
    _, variances = client_variance_estimate(report_counts, **randomizer)
    return probabilities, np.maximum(variances, 0.0)
