"""The report's PNGs (``docs/bench/``): retrieval quality vs chunk size, build time vs corpus size, and
the scale run's time and memory. Each returns False, writing nothing, when its results are missing;
matplotlib is imported only to draw."""

from __future__ import annotations

from pathlib import Path

from bench.reporting.inputs import by_name, metric
from bench.reporting.targets import PAPER, TARGETS


def _pyplot():
    """matplotlib's pyplot on the Agg backend (files only, no display); ``ImportError`` without the
    bench extra (the report then has no plots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> bool:
    """Lay ``fig`` out, write it to ``path`` (making its folder) and free it."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return True


def plot_quality(data: dict, path: Path) -> bool:
    sets = [(label, by_name(data[key])) for key, label in (("chroma", "Chroma (plain text)"), ("markdown", "markdown set"))
            if data.get(key)]
    if not sets:
        return False
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6), dpi=90)
    colors = {"Chroma (plain text)": "tab:blue", "markdown set": "tab:orange"}
    for label, rs in sets:
        for name, r in rs.items():
            x = r["mean_tokens"]
            ours = name.startswith("ours")
            for ax, m in zip(axes, ("recall", "iou")):
                y = metric(r, m)
                ax.scatter([x], [y], color=colors[label], marker="*" if ours else "o", s=90 if ours else 30,
                           edgecolors="black" if ours else "none", linewidths=0.5, zorder=3)
                if label == sets[0][0]:
                    ax.annotate(name.replace("langchain-", "lc-").replace("-recursive", "-rec"), (x, y), fontsize=6,
                                xytext=(3, 2), textcoords="offset points")
    for ax, m, paper in zip(axes, ("recall@5 (%)", "IoU@5 (%)"), (PAPER["recall"], PAPER["iou"])):
        ax.set_xlabel("mean chunk size (MiniLM pieces incl. specials)")
        ax.set_ylabel(m)
        ax.grid(alpha=0.3)
        if data.get("chroma"):
            ax.scatter([162], [paper], marker="x", color="gray", zorder=2)
    axes[0].axhline(TARGETS["chroma_recall"], color="gray", lw=0.7, ls="--")
    axes[1].axhline(TARGETS["chroma_iou"], color="gray", lw=0.7, ls="--")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", ls="", color=colors[label], label=label) for label, _ in sets]
    handles += [Line2D([], [], marker="*", ls="", color="white", markeredgecolor="black", markersize=10, label="ours"),
                Line2D([], [], marker="x", ls="", color="gray", label="paper, Recursive 250"),
                Line2D([], [], ls="--", color="gray", lw=0.7, label="target (Chroma)")]
    axes[1].legend(handles=handles, fontsize=7, loc="best")
    fig.suptitle("Retrieval quality vs chunk size (k = 5, all-MiniLM-L6-v2)", fontsize=10)
    return _save(fig, path)


def plot_builds(b: dict | None, path: Path) -> bool:
    if not b:
        return False
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 3.8), dpi=90)
    cold = b.get("cold", [])
    noop = b.get("noop", [])
    if cold:
        ax.plot([c["documents"] for c in cold], [c["build_seconds"] for c in cold], "o-", label="cold build (empty cache)")
        ax.plot([c["documents"] for c in cold], [c["raw_encode_seconds"] for c in cold], "o:", color="tab:blue", alpha=0.6,
                label="raw model.encode of the same chunks")
    warm = [n for n in noop if n.get("warm")]
    if warm:
        ax.plot([n["documents"] for n in warm], [n["warm"]["build_seconds"] for n in warm], "s-", color="tab:green",
                label="warm build (empty site, full cache)")
    if noop:
        ax.plot([n["documents"] for n in noop], [n["build_seconds"] for n in noop], "^-", color="tab:red", label="no-op rebuild, build()")
        ax.plot([n["documents"] for n in noop], [n["wall_seconds"] for n in noop], "^:", color="tab:red", alpha=0.6,
                label="no-op rebuild, whole process")
    ax.axhline(TARGETS["noop_seconds"], color="gray", lw=0.7, ls="--", label="1 s (no-op target at 1,000 docs)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("documents (synthetic corpus, ~4 chunks each)")
    ax.set_ylabel("seconds (median)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7)
    ax.set_title("Build time vs corpus size (2 shared cores)", fontsize=10)
    return _save(fig, path)


def plot_scale(scale: dict | None, path: Path) -> bool:
    """The scale run's build seconds and peak RSS against documents, log-log (linear growth is a straight line)."""
    if not scale:
        return False
    rows, plt = scale["rows"], _pyplot()
    docs = [r["documents"] for r in rows]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.5), dpi=90)
    for phase, label in (("cold", "cold build"), ("noop", "no-op rebuild"), ("edit", "one-edit rebuild")):
        left.plot(docs, [r[phase]["build_seconds"] for r in rows], marker="o", label=label)
    left.set(xscale="log", yscale="log", xlabel="documents", ylabel="seconds (hashing embedder)")
    right.plot(docs, [r["cold"]["maxrss_mb"] for r in rows], marker="o", label="cold")
    right.plot(docs, [r["noop"]["maxrss_mb"] for r in rows], marker="o", label="no-op")
    right.set(xscale="log", yscale="log", xlabel="documents", ylabel="peak RSS (MB)")
    left.legend()
    right.legend()
    return _save(fig, path)
