"""The window gate: which windows are decoded with drafts, and which go to plain ``generate``.

A map from the wrong domain must cost what plain decoding costs, after a window. :class:`WindowGate` keeps
an account of what the drafts of the windows decoded so far saved on the cost curve
(:class:`tokenmap.decode.cost.CostModel`), weighed by a clock of what those windows and plain ``generate``
really took, and sends whole windows to plain ``generate`` while it is negative or no source of drafts
pays; a closed gate still lets every ``probe_windows``-th window through.
"""

from __future__ import annotations

from tokenmap.decode.control import AcceptanceController, DraftTally


class WindowGate:
    """The gate (module docstring) of the windows decoded with the same maps: it weighs the sources' controllers
    (``members``), the map tallies (``tallies``), each learning on its own, and the account.

    The account is a decayed mean (``window_decay`` a window) of
    :meth:`tokenmap.decode.cost.CostModel.window_saving`. One losing window may close the gate; the windows
    it then sends to plain ``generate`` are replayed into the account, which opens it again where the drafts
    would have paid. The clock re-weighs the account (:attr:`saving_ms`) at the ratios of what the loop's
    windows and plain ``generate``'s took to what the curve expects of them.
    """

    def __init__(self, cost, probe_windows: int = 8, margin_ms: float = 0.5, window_decay: float = 0.9,
                 min_windows: int = 3):
        self.cost = cost
        self.probe_windows = probe_windows
        self.margin_ms = margin_ms
        self.window_decay = window_decay
        self.min_windows = min_windows
        self.members: list = []  # controllers of the chain's controlled sources
        self.tallies: list = []  # tallies of the maps' drafters
        self._closed = 0  # windows sent to plain generate since the gate last let one through
        self._saved = self._plain_ms = self._windows = 0.0  # decayed sums: savings, plain's expected ms, windows
        self.loop_windows = 0  # windows the loop decoded
        self.timed = {"loop": [0.0, 0.0, 0], "plain": [0.0, 0.0, 0]}  # decayed ms, expected ms; windows
        self._explored = False  # a plain window was asked for, to time it
        self.replayed = 0  # plain windows replayed into the account (:meth:`record_replay`)

    controller = AcceptanceController  # what :meth:`member` makes for each source (a bench records drafts)

    def member(self, index: int) -> AcceptanceController:
        """The controller of the ``index``-th source of the chain (created on first use)."""
        while len(self.members) <= index:
            self.members.append(self.controller(self.cost))
        return self.members[index]

    def tally(self, index: int) -> DraftTally:
        """The tally of the drafter of the ``index``-th map (0: a single map; created on first use)."""
        while len(self.tallies) <= index:
            self.tallies.append(DraftTally())
        return self.tallies[index]

    @property
    def window_saving_ms(self) -> float | None:
        """Decayed mean saving of the windows decoded with drafts or replayed (None before any)."""
        return self._saved / self._windows if self._windows else None

    def record_window(self, stats) -> None:
        """Account for a window the loop decoded (``stats``: its :class:`DecodeStats`); time it if timed."""
        saved, plain_ms = self._account(stats)
        self.loop_windows += 1
        if stats.decoder_seconds > 0 and self.loop_windows > 1:  # timed, and not the first: see time_ratio
            self._time("loop", stats.decoder_seconds, plain_ms - saved)

    def record_replay(self, stats) -> None:
        """Account for a window plain ``generate`` decoded, as the loop would have decoded it with the
        same drafts (``stats``: :func:`tokenmap.decode.speculative.replay_generated` on its tokens)."""
        self._account(stats)
        self.replayed += 1

    def _account(self, stats) -> tuple[float, float]:
        """Add a window's modelled saving to the account; returns it and plain ``generate``'s expected ms."""
        saved = self.cost.window_saving(stats.tokens, stats.passes, stats.drafts, stats.drafted)
        plain_ms = self.cost.plain_window_ms(stats.tokens)
        self._saved = self.window_decay * self._saved + saved
        self._plain_ms = self.window_decay * self._plain_ms + plain_ms
        self._windows = self.window_decay * self._windows + 1.0
        return saved, plain_ms

    def record_plain(self, seconds: float, tokens: int) -> None:
        """Time a window of ``tokens`` (EOT included) that plain ``generate`` decoded in ``seconds``."""
        self._time("plain", seconds, self.cost.plain_window_ms(tokens))

    def _time(self, kind: str, seconds: float, expected_ms: float) -> None:
        entry = self.timed[kind]
        entry[0] = self.window_decay * entry[0] + seconds * 1000.0
        entry[1] = self.window_decay * entry[1] + expected_ms
        entry[2] += 1

    def time_ratio(self, kind: str) -> float | None:
        """The ``"loop"``'s or ``"plain"`` ``generate``'s windows' wall time over what the cost curve expects
        of them (decayed). None before ``min_windows`` timed loop windows, or before one plain window where
        the calibration did not time plain ``generate`` (1.0 where it did).

        The curve expects a loop window to take plain ``generate``'s time less the window's saving. The
        first loop window with these maps is not timed: it pays once for what the next ones find warm (the
        map's pages, the loop's first allocations).
        """
        ms, expected, windows = self.timed[kind]
        if kind == "plain" and not windows:
            return 1.0 if self.cost.plain_step_ms > 0 else None
        return ms / expected if expected and windows >= (self.min_windows if kind == "loop" else 1) else None

    @property
    def saving_ms(self) -> float | None:
        """The account (:attr:`window_saving_ms`) at the clock's ratios: a window the curve expects plain
        ``generate`` to take ``P`` ms and the loop ``P - W`` takes ``plain * P`` and ``loop * (P - W)``, so the
        loop saves ``loop * W - (loop - plain) * P`` (decayed means; the bare account while a ratio is
        unknown). Ratios, not ms: a machine busier than when it was calibrated slows long and short windows
        alike. Example: drafts that save 10 ms of a window of 150 on the curve save 4.5 ms where the loop
        runs 5 % over the curve and plain ``generate`` 1 % over it::

            >>> from tokenmap.decode.cost import CostModel
            >>> gate = WindowGate(CostModel(10.0, (10.0, 12.0), prefill_ms=50.0, plain_step_ms=10.0))
            >>> gate._saved, gate._plain_ms, gate._windows = 10.0, 150.0, 1.0
            >>> gate.timed = {"loop": [147.0, 140.0, 3], "plain": [151.5, 150.0, 1]}
            >>> round(gate.saving_ms, 6)
            4.5
        """
        return self._weighed()[0]

    def _weighed(self) -> tuple[float | None, bool | None]:
        """(:attr:`saving_ms`, :meth:`loop_slower`): one weighing for both."""
        saving = self.window_saving_ms
        loop, plain = self.time_ratio("loop"), self.time_ratio("plain")
        if saving is None or loop is None or plain is None:
            return saving, None
        weighed = loop * saving - (loop - plain) * self._plain_ms / self._windows
        return weighed, weighed <= 0

    def loop_slower(self) -> bool | None:
        """Whether the loop's windows lose time against plain ``generate`` at the clock's ratios (None: unknown)."""
        return self._weighed()[1]

    def use_speculation(self) -> bool:
        """Open when a controlled source that has drafted pays, or none has drafted yet; or when a map's
        drafter saved time with its verified drafts (its tally's ``saving_ms``: a failing prompt lookup must
        not close windows a map pays in). Closed, whatever the sources, while the windows lose time against
        ``generate`` at the clock's ratios (:attr:`saving_ms`), unless a controlled source that has drafted
        pays (then only while :meth:`loop_slower`). A closed gate lets every ``probe_windows``-th window
        through to learn again, but none while the replayed plain windows say drafts do not pay."""
        tried = [m for m in self.members if m.verified]
        pays = any(m.best()[1] > m.margin_ms for m in tried)
        maps_pay = any(t.drafts > 0 and t.saving_ms > self.margin_ms for t in self.tallies)
        windows, slower = self._weighed()
        if self.time_ratio("plain") is None and self.timed["loop"][2] >= self.min_windows and not self._explored:
            self._explored = True  # plain generate untimed by the calibration and not yet here
            return False  # one window of plain generate, to time it
        drafts_pay = (not tried or pays or maps_pay) and (windows is None or windows > 0 or pays)
        if not drafts_pay and self.replayed:
            return False
        if drafts_pay and not slower:
            self._closed = 0
            return True
        self._closed += 1
        if self._closed >= self.probe_windows:
            self._closed = 0
            return True
        return False
