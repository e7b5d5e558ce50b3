"""Cost-vs-size plot (log-log) of the benchmarks that measure several sizes.

matplotlib (a dev dependency) is imported inside `write_plot` only, with the Agg backend, so
the benchmarks themselves run without it.
"""

from __future__ import annotations

from pathlib import Path

from .common import Plot, Result, fmt_bytes


def fmt_count(value: float) -> str:
    """Format a count for an axis tick: 1k, 20k, 1M."""
    for unit, scale in (("M", 1e6), ("k", 1e3)):
        if value >= scale:
            return f"{value / scale:g}{unit}"
    return f"{value:g}"


def fmt_tick_s(seconds: float) -> str:
    """Format a time for an axis tick: 100 µs, 10 ms, 1 s."""
    if seconds >= 1:
        return f"{seconds:g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:g} ms"
    return f"{seconds * 1e6:g} µs"


PANEL_ORDER = ("resume", "drift", "search")  # as the issue lists them; any other after


def plots_of(results: list[Result]) -> list[Plot]:
    """Return the plots with at least one point: resume, drift, search, then any other."""
    ranked = sorted(
        results,
        key=lambda r: PANEL_ORDER.index(r.name) if r.name in PANEL_ORDER else len(PANEL_ORDER),
    )
    return [r.plot for r in ranked if r.plot is not None and any(c.points for c in r.plot.curves)]


def write_plot(results: list[Result], path: Path, title: str) -> bool:
    """Draw one log-log panel per plot of `results` into the PNG `path`; False if none.

    Raises ImportError when matplotlib is not installed.
    """
    plots = plots_of(results)
    if not plots:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    fig, axes = plt.subplots(
        1, len(plots), figsize=(5.2 * len(plots), 5.0), squeeze=False, layout="constrained"
    )
    for ax, plot in zip(axes[0], plots, strict=True):
        for curve in plot.curves:
            if not curve.points:
                continue
            xs, ys = zip(*sorted(curve.points), strict=True)
            ax.plot(
                xs,
                ys,
                marker="o",
                markersize=4,
                color=curve.color,
                linestyle=curve.linestyle,
                label=curve.label,
            )
        for value, label in plot.targets:
            ax.axhline(value, color="0.45", linewidth=0.9, linestyle="-.", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({x for curve in plot.curves for x, _ in curve.points})
        ax.set_xticks(sizes)
        ax.xaxis.set_minor_formatter(NullFormatter())
        fmt_x = (lambda v: fmt_bytes(v).replace(".0 ", " ")) if plot.xunit == "bytes" else fmt_count
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _pos, f=fmt_x: f(v)))
        # Label 1-2-5 steps when the times span little more than a decade, else decades.
        values = [y for curve in plot.curves for _, y in curve.points]
        values += [y for y, _ in plot.targets]
        subs = (1.0, 2.0, 5.0) if max(values) / min(values) < 30 else (1.0,)
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=subs))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: fmt_tick_s(v)))
        ax.set_title(plot.title, fontsize=10)
        ax.set_xlabel(plot.xlabel)
        ax.set_ylabel(plot.ylabel)
        ax.grid(True, which="major", linewidth=0.5, alpha=0.5)
        ax.grid(True, which="minor", linewidth=0.3, alpha=0.25)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=7.5, frameon=False)
    fig.suptitle(title, fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    # No "Software" entry: the file changes only when the figures do.
    fig.savefig(path, dpi=100, metadata={"Software": None})
    plt.close(fig)
    return True
