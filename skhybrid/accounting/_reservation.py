"""Budget set aside ahead of a run of releases: :meth:`PrivacyLedger.reserve`.

A reservation is charged in one go before anything runs, so a search that some user
cannot afford is refused before its first fit. The ledger's charges made while it is
open draw on it: what a user has left in the reservation is given back (a refund row)
and the release is charged as usual (its own history row), so each release stays in
the history with what it cost. On exit, what is left is refunded.
"""

import numpy as np

from ._accounts import _check_ids


class Reservation:
    """An open reservation on a ledger (returned by :meth:`PrivacyLedger.reserve`).

    Attributes
    ----------
    user_ids : ndarray of shape (n_users,)
    epsilon_left, delta_left : ndarray of shape (n_users,)
        What each user still has in the reservation.
    """

    def __init__(self, ledger, user_ids, epsilon, delta):
        self._ledger = ledger
        self.user_ids = np.asarray(user_ids)
        n = self.user_ids.shape[0]
        self.epsilon_left = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (n,)).copy()
        self.delta_left = np.broadcast_to(np.asarray(delta, dtype=np.float64), (n,)).copy()
        self._order = np.argsort(self.user_ids, kind="stable")

    def _rows(self, user_ids):
        """Each id's row in the reservation, or -1 for ids outside it."""
        ids = np.asarray(user_ids)
        if ids.ndim == 0:
            ids = ids.reshape(1)
        if ids.dtype.kind != self.user_ids.dtype.kind and not (
                ids.dtype.kind in "iu" and self.user_ids.dtype.kind in "iu"):
            return np.full(ids.shape[0], -1)
        sorted_ids = self.user_ids[self._order]
        position = np.searchsorted(sorted_ids, ids)
        position = np.minimum(position, max(sorted_ids.shape[0] - 1, 0))
        found = sorted_ids.shape[0] > 0
        rows = self._order[position] if found else np.full(ids.shape[0], -1)
        return np.where(found & (sorted_ids[position] == ids) if found else False, rows, -1)

    def draw(self, user_ids, epsilon, delta):
        """Take up to ``epsilon`` and ``delta`` per user from what is left; returns the draws."""
        rows = self._rows(user_ids)
        n = rows.shape[0]
        epsilon = np.broadcast_to(np.asarray(epsilon, dtype=np.float64), (n,))
        delta = np.broadcast_to(np.asarray(delta, dtype=np.float64), (n,))
        inside = rows >= 0
        drawn_epsilon, drawn_delta = np.zeros(n), np.zeros(n)
        drawn_epsilon[inside] = np.minimum(epsilon[inside], self.epsilon_left[rows[inside]])
        drawn_delta[inside] = np.minimum(delta[inside], self.delta_left[rows[inside]])
        np.subtract.at(self.epsilon_left, rows[inside], drawn_epsilon[inside])
        np.subtract.at(self.delta_left, rows[inside], drawn_delta[inside])
        return drawn_epsilon, drawn_delta

    def keep(self, user_ids, epsilon, delta=0.0):
        """Mark ``epsilon`` (and ``delta``) of the reservation as used by releases that were
        not charged on the ledger (a search's own accounting): it is not refunded."""
        self.draw(user_ids, epsilon, delta)

    def close(self, description="unused reservation"):
        """Refund what is left (a refund row with ``description``), detach from the ledger."""
        self._ledger._reservation = None
        epsilon = np.maximum(self.epsilon_left, 0.0)
        delta = np.maximum(self.delta_left, 0.0)
        self.epsilon_left, self.delta_left = np.zeros_like(epsilon), np.zeros_like(delta)
        if (epsilon > 0).any() or (delta > 0).any():
            self._ledger.refund(self.user_ids, epsilon, delta, description=description)

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        self.close("unused reservation" + ("" if kind is None
                                           else f": stopped by {kind.__name__}"))
        return False


def open_reservation(ledger, epsilon, user_ids, delta, release, description):
    """:meth:`PrivacyLedger.reserve`: charge the reservation, attach it to the ledger."""
    if user_ids is None:
        user_ids = getattr(epsilon, "user_ids", None)
        if user_ids is None:
            raise ValueError("reserve needs user_ids=..., or a search_cost answer (which "
                             "carries them)")
    if getattr(ledger, "_reservation", None) is not None:
        raise ValueError("this ledger already has an open reservation; close it first")
    if description is None:
        reason = getattr(epsilon, "reason", None)
        description = "reservation" + ("" if reason is None else f" of a search: {reason}")
    values, _ = _check_ids(user_ids)
    epsilon = np.asarray(epsilon, dtype=np.float64).view(np.ndarray)
    ledger.charge(values, epsilon, delta, kind="reservation", release=release,
                  description=description)
    ledger._reservation = Reservation(ledger, values, epsilon, delta)
    return ledger._reservation


def charge_within(ledger, user_ids, epsilon, delta, release, description):
    """A release charged while a reservation is open: its draw is refunded, then it is
    charged as usual (its own history row).

    If the charge is refused (the part beyond the reservation is over a budget), the draw
    is put back in the reservation and on the ledger, and the refusal raised.
    """
    reservation = ledger._reservation
    ids, _ = _check_ids(user_ids)
    drawn_epsilon, drawn_delta = reservation.draw(ids, epsilon, delta)
    drawn = (drawn_epsilon > 0) | (drawn_delta > 0)
    ledger._reservation = None
    try:
        if drawn.any():
            ledger.refund(ids[drawn], drawn_epsilon[drawn], drawn_delta[drawn],
                          description="drawn from the open reservation by the next release")
        try:
            return ledger.charge(ids, epsilon, delta, release=release, description=description)
        except BaseException:
            if drawn.any():
                ledger.charge(ids[drawn], drawn_epsilon[drawn], drawn_delta[drawn],
                              kind="reservation",
                              description="the refused release's draw, back in the reservation")
                rows = reservation._rows(ids[drawn])
                np.add.at(reservation.epsilon_left, rows, drawn_epsilon[drawn])
                np.add.at(reservation.delta_left, rows, drawn_delta[drawn])
            raise
    finally:
        ledger._reservation = reservation
