"""Draft control: whether to draft, how far, and whether a window is worth drafting at all.

Every decision weighs the calibrated cost curve (:class:`tokenmap.decode.cost.CostModel`)
against the acceptance a source has shown so far. A draft of ``L`` tokens
whose expected number of kept tokens is ``E`` saves
``E * step_ms - (batch_ms(L + 1) - step_ms)`` milliseconds (may be negative).

* :class:`AcceptanceController` models a source's acceptance as geometric
  (each drafted token kept with probability ``p``), learned from its verified drafts.
* :class:`ControlledDrafter` wraps a drafter: its controller sets how far it
  drafts and learns from every draft of it the model verified.
* :class:`ControllerSet` keeps one controller per source of a
  :class:`tokenmap.decode.drafters.ChainDrafter` and a :class:`WindowGate` that sends
  whole windows to plain ``generate`` while no source pays, or while the windows
  decoded with drafts lost time against ``generate`` (:meth:`ControllerSet.record_window`).

Example::

    >>> from tokenmap.decode.cost import CostModel
    >>> c = AcceptanceController(CostModel(10.0, (10.0, 18.0, 16.0, 16.0, 15.0)))
    >>> c.limit()                    # optimistic prior p = 2/3: a 5-token draft pays most
    5
    >>> for _ in range(20):
    ...     c.update(4, 0)           # every draft rejected at its first token
    >>> c.limit(), round(c.p, 2)
    (0, 0.06)
"""

from __future__ import annotations

from typing import Sequence

from tokenmap.decode.follow import Calibration


class WindowGate:
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


class AcceptanceController:
    """Decides whether and how far to draft, from the cost curve and the running acceptance.

    Acceptance is modelled as geometric: each drafted token is kept with
    probability ``p`` given that the previous ones were. ``p`` is a decayed
    count of kept tokens over kept tokens plus first rejections, carried
    across windows. The draft length L maximizes the expected saving
    ``step_ms * sum_{i<=L} p**i - (batch_ms(L + 1) - step_ms)``.

    Two levels of restraint keep a map from the wrong domain from slowing
    decoding down: inside a window, no draft is verified when no L pays
    (but a short probe every ``probe_every`` passes); and :meth:`use_speculation`
    sends whole windows to plain ``generate`` while drafting does not pay by
    at least ``margin_ms`` a pass (but every ``probe_windows``-th window, to
    keep ``p`` current).
    """

    def __init__(self, cost, max_len: int = 24, prior=(2.0, 1.0), decay: float = 0.97,
                 probe_every: int = 16, probe_windows: int = 8, margin_ms: float = 0.5):
        self.cost = cost
        self.max_len = max_len
        self.decay = decay
        self.probe_every = probe_every
        self.margin_ms = margin_ms
        self.kept, self.rejected = prior
        self.verified = 0  # drafts verified so far
        self._best = None  # (p, best()) cache
        self._since_draft = 0
        self._gate = WindowGate(probe_windows)

    @property
    def p(self) -> float:
        return self.kept / (self.kept + self.rejected)

    def best(self) -> tuple[int, float]:
        """(draft length, expected saving in ms) of the best draft at the current ``p``.

        Asked at every decoder pass but changed only by :meth:`update`, so cached per ``p``.
        """
        p = self.p
        if self._best is None or self._best[0] != p:
            best, best_gain, expected = 0, 0.0, 0.0
            for length in range(1, self.max_len + 1):
                expected += p ** length
                gain = self.cost.saving(expected, length)
                if gain > best_gain:
                    best, best_gain = length, gain
            self._best = (p, (best, best_gain))
        return self._best[1]

    def limit(self) -> int:
        """How many tokens to draft at the next pass (0: none)."""
        best, _ = self.best()
        if best == 0:
            self._since_draft += 1
            if self._since_draft >= self.probe_every:
                return 2
        return best

    def use_speculation(self) -> bool:
        """Whether the next window should be decoded speculatively at all."""
        return self._gate.decide(self.best()[1] > self.margin_ms)

    def update(self, drafted: int, accepted: int) -> None:
        if drafted == 0:
            return
        self.verified += 1
        self._since_draft = 0
        self.kept = self.decay * self.kept + accepted
        self.rejected = self.decay * self.rejected + (1.0 if accepted < drafted else 0.0)


class ControllerSet:
    """One :class:`AcceptanceController` per drafter of a chain, and the window gate.

    Sources differ: prompt lookup inside a repetitive window is nearly always
    right while the token map may be from the wrong domain, so each source
    learns its own acceptance and gets its own draft length. A window is
    decoded speculatively when any source pays (or as a periodic probe), and
    the windows so decoded (once there are ``min_windows`` of them) have not
    lost time against plain ``generate`` on the whole (a decayed mean,
    ``window_decay`` a window, of
    :meth:`tokenmap.decode.cost.CostModel.window_saving`): the loop's own cost a
    step is paid on every window it decodes, drafts or not.
    """

    controller = AcceptanceController  # what :meth:`member` makes for each source

    def __init__(self, cost, probe_windows: int = 8, margin_ms: float = 0.5, window_decay: float = 0.9,
                 min_windows: int = 3):
        self.cost = cost
        self.margin_ms = margin_ms
        self.window_decay = window_decay
        self.min_windows = min_windows
        self.calibration = Calibration()  # a suffix map drafter's running calibration
        self.members: list = []
        self._gate = WindowGate(probe_windows)
        self._saved = 0.0  # decayed sum of window savings (ms) ...
        self._windows = 0.0  # ... and of windows
        self._recorded = 0  # windows accounted for

    def member(self, index: int) -> AcceptanceController:
        """The controller of the ``index``-th source (created on first use)."""
        while len(self.members) <= index:
            self.members.append(self.controller(self.cost))
        return self.members[index]

    @property
    def window_saving_ms(self) -> float | None:
        """Decayed mean saving of the windows decoded with drafts (None before ``min_windows`` of them)."""
        return self._saved / self._windows if self._recorded >= self.min_windows else None

    def record_window(self, stats) -> None:
        """Account for a window decoded by the loop (``stats``: its :class:`DecodeStats`)."""
        saved = self.cost.window_saving(stats.tokens, stats.passes, stats.drafts, stats.drafted)
        self._saved = self.window_decay * self._saved + saved
        self._windows = self.window_decay * self._windows + 1.0
        self._recorded += 1

    def use_speculation(self) -> bool:
        """Open when a controlled source that has drafted pays, or when none has drafted yet
        (untried sources cannot close the gate: prompt lookup drafts seldom, and only where a
        window repeats itself, which pays when it happens); or when the suffix map's drafter,
        which sets its own draft lengths, saved time with the drafts it had verified
        (``calibration.saving_ms``): a failing prompt lookup must not close windows the map pays in.
        Closed, whatever the sources, while the windows decoded with drafts lose time against
        ``generate`` on the whole, unless a controlled source that has drafted pays."""
        tried = [m for m in self.members if m.verified]
        pays = any(m.best()[1] > m.margin_ms for m in tried)
        suffix_map = self.calibration.drafts > 0 and self.calibration.saving_ms > self.margin_ms
        windows = self.window_saving_ms
        return self._gate.decide((not tried or pays or suffix_map) and (windows is None or windows > 0 or pays))


class ControlledDrafter:
    """A drafter whose draft length an :class:`AcceptanceController` sets.

    At most ``controller.limit()`` tokens are asked of ``drafter`` (none when
    that is 0), and every verified draft teaches the controller and the drafter.
    """

    def __init__(self, drafter, controller: AcceptanceController):
        self.drafter = drafter
        self.controller = controller

    def reset(self, history: Sequence[int] = ()) -> None:
        self.drafter.reset(history)

    def draft(self, tokens: Sequence[int], limit: int) -> list[int]:
        n = min(limit, self.controller.limit())
        return self.drafter.draft(tokens, n) if n > 0 else []

    def update(self, drafted: int, accepted: int) -> None:
        self.controller.update(drafted, accepted)
        self.drafter.update(drafted, accepted)
