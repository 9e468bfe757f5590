"""PNG plots of a benchmark run (matplotlib, Agg backend; skipped with a warning without it).

* ``speedup.png``            decoder speed-up per domain × language (map, oracle, distil-spec)
* ``acceptance_length.png``  acceptance rate and count per draft length (token map)
* ``cost_curve.png``         the cost model used: verify-pass ms vs tokens, and one step
* ``oracle_fraction.png``    share of the oracle's saving reached per domain × language
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

log = logging.getLogger("tokenmap")



def _save(plt, fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path

def _plt():
    try:
        import matplotlib
    except ImportError:
        log.warning("matplotlib is not installed (pip install 'tokenmap[bench]'): no plots")
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _nan0(x) -> float:
    return 0.0 if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def plot_speedup(plt, tasks: dict, path: Path, systems=("tokenmap", "oracle", "distil-spec"),
                 title: str = "Speed-up per domain / language") -> Path:
    names = [s for s in systems if any(s in v for v in tasks.values())]
    keys = list(tasks)
    fig, ax = plt.subplots(figsize=(max(6, 0.9 * len(keys) + 2), 4))
    width = 0.8 / max(1, len(names))
    for i, name in enumerate(names):
        ys = [_nan0(tasks[k].get(name, {}).get("S")) for k in keys]
        ax.bar([j + i * width for j in range(len(keys))], ys, width, label=name)
    ax.axhline(1.0, color="black", lw=0.8)
    ax.set_xticks([j + width * (len(names) - 1) / 2 for j in range(len(keys))], keys, rotation=30, ha="right")
    ax.set_ylabel("decoder speed-up vs greedy (×)")
    ax.set_title(title)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")  # beside the bars, never on them
    return _save(plt, fig, path)


def plot_acceptance(plt, by_length: dict, path: Path) -> Path:
    lengths = [int(n) for n in by_length]
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(lengths, [v["A_r"] for v in by_length.values()], "o-", label="A_r (accepted / drafted)")
    ax.set_xlabel("draft length (tokens)")
    ax.set_ylabel("acceptance rate")
    ax.set_ylim(0, 1.05)
    ax2 = ax.twinx()
    ax2.bar(lengths, [v["drafts"] for v in by_length.values()], alpha=0.25, color="grey", label="drafts")
    ax2.set_ylabel("drafts verified")
    ax.set_title("Token map: acceptance vs draft length")
    ax.legend(loc="upper right")
    return _save(plt, fig, path)


def plot_cost(plt, cost: dict, path: Path) -> Path:
    batch = cost["batch_ms"]
    xs = list(range(1, len(batch) + 1))
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.plot(xs, batch, "o-", ms=3, label="forward_batch (n tokens)")
    ax.axhline(cost["step_ms"], color="red", ls="--", label="forward_step (1 token)")
    ax.plot(xs, [cost["step_ms"] * x for x in xs], color="grey", lw=0.8, label="n steps")
    ax.set_ylim(0, max(batch) * 1.3)
    ax.set_xlabel("tokens verified in one pass")
    ax.set_ylabel("ms")
    ax.set_title(f"Cost model: {cost.get('source', '')}"[:70])
    ax.legend()
    return _save(plt, fig, path)


def plot_oracle_fraction(plt, fractions: dict, path: Path) -> Path:
    keys = list(fractions)
    fig, ax = plt.subplots(figsize=(max(6, 0.7 * len(keys) + 2), 4))
    ax.bar(keys, [_nan0(fractions[k]) * 100 for k in keys])
    ax.axhline(0, color="black", lw=0.8)
    ax.set_ylabel("% of the oracle's time saving")
    ax.set_title("(T_greedy - T_map) / (T_greedy - T_oracle)")
    plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
    return _save(plt, fig, path)


def write_plots(result: dict, out: Path) -> list[Path]:
    plt = _plt()
    if plt is None:
        return []
    agg = result["aggregates"]
    paths = [plot_speedup(plt, agg["groups"]["task"], out / "speedup.png"),
             plot_cost(plt, result["cost_model"], out / "cost_curve.png")]
    if len(agg.get("map_modes", {})) > 1:
        paths.append(plot_speedup(plt, agg["groups"]["task"], out / "map_modes.png", tuple(agg["map_modes"]),
                                  "Speed-up per task: per-task maps, multi-task map and map sets"))
    same = agg.get("map_modes_identical") or {}
    if same.get("task"):
        paths.append(plot_speedup(plt, same["task"], out / "map_modes_identical.png", tuple(agg["map_modes"]),
                                  f"Speed-up per task on the {same['utterances']} utterances every map mode "
                                  "decoded as greedy"))
    if agg["acceptance_by_length"]:
        paths.append(plot_acceptance(plt, agg["acceptance_by_length"], out / "acceptance_length.png"))
    if agg["oracle_fraction"]["task"]:
        paths.append(plot_oracle_fraction(plt, agg["oracle_fraction"]["task"], out / "oracle_fraction.png"))
    return paths
