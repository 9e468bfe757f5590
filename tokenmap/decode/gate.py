"""The window gate: which windows are decoded with drafts, and which go to plain ``generate``.

A map from the wrong domain must cost what plain decoding costs, after a window: :class:`WindowGate` keeps
an account of what the drafts of the windows decoded so far saved on the cost curve
(:class:`tokenmap.decode.cost.CostModel`), weighed by a clock of what those windows and plain ``generate``
really took, and sends whole windows to plain ``generate`` while it is negative or no source of drafts
pays; a closed gate still lets every ``probe_windows``-th window through (:class:`Probe`).
:class:`tokenmap.decode.control.ControllerSet` is the gate with the sources' controllers it weighs.
"""

from __future__ import annotations


class Probe:
    """Lets a window through when drafting pays, else only every ``probe_windows``-th one."""

    def __init__(self, probe_windows: int):
        self.probe_windows = probe_windows
        self._plain = 0

    def decide(self, pays: bool) -> bool:
        if pays:
            self._plain = 0
            return True
        self._plain += 1
        if self._plain >= self.probe_windows:
            self._plain = 0
            return True
        return False


class WindowGate:
    """Whether a whole window is decoded with drafts or goes to plain ``generate``, weighing the sources'
    controllers (``members``) and map tallies (``tallies``) and an account of the windows decoded so far.

    A window is decoded speculatively when any source pays (or as a
    periodic probe), and the windows so decoded or replayed have not lost time against plain
    ``generate`` on the whole (a decayed mean, ``window_decay`` a window, of
    :meth:`tokenmap.decode.cost.CostModel.window_saving`: the loop's own cost a step is paid on every
    window it decodes). One losing window may close the gate: the windows it then sends to plain
    ``generate`` are replayed into the account, which opens it again where the drafts would have paid.
    The account is the cost curve's view; the clock re-weighs it (:attr:`saving_ms`) at the ratios of
    what the loop's windows and plain ``generate``'s took to what the curve expects of them (the loop's
    Python on cold caches, a prefill after the encoder's worker, a machine busier than when calibrated).
    """

    def __init__(self, cost, probe_windows: int = 8, margin_ms: float = 0.5, window_decay: float = 0.9,
                 min_windows: int = 3, account_windows: int = 1):
        self.cost = cost
        self.margin_ms = margin_ms
        self.window_decay = window_decay
        self.min_windows = min_windows
        self.account_windows = account_windows
        self.members: list = []  # controllers of the chain's controlled sources
        self.tallies: list = []  # tallies of the maps' drafters
        self._gate = Probe(probe_windows)
        self._saved = self._plain_ms = self._windows = 0.0  # decayed sums: savings, plain's expected ms, windows
        self._recorded = 0  # windows accounted for
        self.loop_windows = 0  # windows the loop decoded
        self.timed = {"loop": [0.0, 0.0, 0], "plain": [0.0, 0.0, 0]}  # decayed ms, expected ms; windows
        self._explored = False  # a plain window was asked for, to time it
        self.replayed = 0  # plain windows replayed into the account (:meth:`record_replay`)

    @property
    def window_saving_ms(self) -> float | None:
        """Decayed mean saving of the windows decoded with drafts or replayed (None before
        ``account_windows`` of them)."""
        return self._saved / self._windows if self._recorded >= self.account_windows else None

    def record_window(self, stats) -> None:
        """Account for a window the loop decoded (``stats``: its :class:`DecodeStats`); time it if timed."""
        saved, plain_ms = self._account(stats)
        self.loop_windows += 1
        if stats.decoder_seconds > 0 and self.loop_windows > 1:  # timed, and not the first: see time_ratio
            self._time("loop", stats.decoder_seconds, plain_ms - saved)

    def record_replay(self, stats) -> None:
        """Account for a window plain ``generate`` decoded, as the loop would have decoded it with the
        same drafts (``stats``: :func:`tokenmap.decode.replay.replay_generated` on its tokens, whose
        drafters taught their controllers and tallies as verified drafts do). The clock is left alone."""
        self._account(stats)
        self.replayed += 1

    def _account(self, stats) -> tuple[float, float]:
        """Add a window's modelled saving to the account; returns it and plain ``generate``'s expected ms."""
        saved = self.cost.window_saving(stats.tokens, stats.passes, stats.drafts, stats.drafted)
        plain_ms = self.cost.plain_window_ms(stats.tokens)
        self._saved = self.window_decay * self._saved + saved
        self._plain_ms = self.window_decay * self._plain_ms + plain_ms
        self._windows = self.window_decay * self._windows + 1.0
        self._recorded += 1
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

        The curve expects a loop window to take plain ``generate``'s time (``CostModel.plain_window_ms``)
        less the window's saving (``CostModel.window_saving``). The first loop window with these maps is
        not timed: it pays once for what the next ones find warm (the map's pages, the loop's first
        allocations), 20-60 ms on a prompt of 8 tokens.
        """
        ms, expected, windows = self.timed[kind]
        if kind == "plain" and not windows:
            return 1.0 if self.cost.plain_timed else None
        return ms / expected if expected and windows >= (self.min_windows if kind == "loop" else 1) else None

    @property
    def saving_ms(self) -> float | None:
        """The account (:attr:`window_saving_ms`) at the clock's ratios: a window the curve expects plain
        ``generate`` to take ``P`` ms and the loop ``P - W`` takes ``plain * P`` and ``loop * (P - W)``, so the
        loop saves ``loop * W - (loop - plain) * P`` (decayed means over the accounted windows; the bare
        account while a ratio is unknown). Ratios, not ms a window or a token: a machine busier than
        when it was calibrated slows long and short windows alike, and a window's prompt weighs as much
        as many of its tokens. Example: drafts that save 10 ms of a window of 150 on the curve save 4.5 ms
        where the loop runs 5 % over the curve and plain ``generate`` 1 % over it (0.3 ms at 8 %)::

            >>> from tokenmap.decode.cost import CostModel
            >>> gate = WindowGate(CostModel(10.0, (10.0, 12.0), prefill_ms=50.0, plain_step_ms=10.0))
            >>> gate._saved, gate._plain_ms, gate._windows, gate._recorded = 10.0, 150.0, 1.0, 1
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
        """Whether the loop's windows lose time against plain ``generate`` at the clock's ratios (None: not
        known yet): plain ``generate`` on a faster engine than an uncalibrated curve says, or a loop whose
        Python or prefill costs more than calibrated."""
        return self._weighed()[1]

    def use_speculation(self) -> bool:
        """Open when a controlled source that has drafted pays, or none has drafted yet (prompt lookup
        drafts seldom, and pays where it does); or when a map's drafter saved time with its verified drafts
        (its tally's ``saving_ms``: a failing prompt lookup must not close windows a map pays in). Closed,
        whatever the sources, while the windows lose time against ``generate`` at the clock's ratios
        (:attr:`saving_ms`), unless a controlled source that has drafted pays (then only while the clock
        finds the loop slower, :meth:`loop_slower`). A closed gate lets every ``probe_windows``-th window
        through to learn again, but sends none while the replayed plain windows say drafts do not pay."""
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
        return self._gate.decide(drafts_pay and not slower)
