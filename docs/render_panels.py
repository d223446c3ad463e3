"""Render the main panels of grafana/squall.json to a PNG, from a Prometheus' data.

Grafana cannot be had everywhere (not on the machines Squall is built on); this draws the
same PromQL with matplotlib, so a README can show what a healthy and a failing pipeline
look like::

    python docs/render_panels.py --prometheus http://127.0.0.1:9090 --topology 'wc.*' \\
        --minutes 5 --title "word count, healthy" --out docs/img/healthy.png

Needs ``pip install 'squall[docs]'`` (matplotlib).
"""

from __future__ import annotations

import argparse
import json
import math
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

DASHBOARD = Path(__file__).resolve().parents[1] / "grafana" / "squall.json"
MAIN = (
    "Message ids acked / failed / replayed per second",
    "Complete latency (spout emit to ack)",
    "In flight",
    "Dead-lettered and poison records",
)


def query_range(prometheus: str, expr: str, start: float, end: float, step: float) -> list[dict[str, Any]]:
    params = urllib.parse.urlencode({"query": expr, "start": start, "end": end, "step": step})
    with urllib.request.urlopen(f"{prometheus}/api/v1/query_range?{params}", timeout=30) as r:
        got = json.loads(r.read())
    if got.get("status") != "success":
        raise RuntimeError(f"{expr}: {got}")
    result: list[dict[str, Any]] = got["data"]["result"]
    return result


def legend(fmt: str, labels: dict[str, str]) -> str:
    for k, v in labels.items():
        fmt = fmt.replace("{{" + k + "}}", v)
    return fmt


def render(prometheus: str, topology: str, minutes: float, title: str, out: Path, panels: tuple[str, ...] = MAIN) -> Path:
    """Draw ``panels`` (titles in grafana/squall.json) for topologies matching ``topology``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    dashboard = json.loads(DASHBOARD.read_text())
    chosen = [p for p in dashboard["panels"] if p.get("title") in panels]
    end = time.time()
    start = end - minutes * 60
    step = max(1.0, (end - start) / 300)
    cols = 2
    rows = math.ceil(len(chosen) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(12, 3.2 * rows), squeeze=False)
    for ax, panel in zip(axes.flat, chosen, strict=False):
        for target in panel["targets"]:
            expr = target["expr"].replace("$topology", topology)
            for series in query_range(prometheus, expr, start, end, step):
                xs = [float(t) - end for t, _ in series["values"]]
                ys = [float(v) for _, v in series["values"]]
                ax.plot(xs, ys, label=legend(target.get("legendFormat", ""), series["metric"]))
        ax.set_title(panel["title"], fontsize=10)
        ax.set_xlabel("seconds ago")
        ax.set_ylabel(panel["fieldConfig"]["defaults"].get("unit", ""))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7, loc="upper left")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(chosen) :]:
        ax.set_visible(False)
    fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=90)
    plt.close(fig)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--prometheus", default="http://127.0.0.1:9090")
    ap.add_argument("--topology", default=".*", help="a regex over topology names")
    ap.add_argument("--minutes", type=float, default=5.0)
    ap.add_argument("--title", default="Squall")
    ap.add_argument("--out", type=Path, default=Path("squall-panels.png"))
    args = ap.parse_args()
    print(render(args.prometheus, args.topology, args.minutes, args.title, args.out))


if __name__ == "__main__":
    main()
