"""Rendering: ``ansi`` (a compact text state) and ``rgb_array`` (a Gantt chart).

The Gantt shows nodes (rows) over time (columns), coloured by the job each node runs; nodes
not lent to the scavenger are shaded grey and idle, unused nodes are white. It is drawn with
matplotlib's Agg backend from a bounded history of steps.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from mtgym.core.instance import Instance
from mtgym.core.types import JobStatus
from mtgym.sim.state import ClusterState

FRAME_W, FRAME_H, DPI = 640, 480, 80


class History:
    """The last ``maxlen`` steps: (t0, t1, node_job, available).

    Args:
        maxlen: the steps kept; older ones are dropped (the Gantt's left edge moves).

    Attributes:
        steps: deque of (t0, t1, (N,) node map, (N,) availability) per recorded step.
    """

    def __init__(self, maxlen: int = 400) -> None:
        self.steps: deque[tuple[float, float, np.ndarray, np.ndarray]] = deque(maxlen=maxlen)

    def clear(self) -> None:
        """Forget everything."""
        self.steps.clear()

    def record(self, t0: float, t1: float, node_job: np.ndarray, available: np.ndarray) -> None:
        """Add one step (arrays are copied).

        Args:
            t0: the step's start, simulated seconds.
            t1: its end; a step that moved no time is not recorded.
            node_job: (N,) each node's job after the step, -1 = none.
            available: (N,) bool, idle and lent after the step.
        """
        if t1 > t0:
            self.steps.append((t0, t1, node_job.copy(), available.copy()))


def render_ansi(state: ClusterState, instance: Instance, slots_job: np.ndarray) -> str:
    """A few lines: time, node use, and one line per slot.

    Args:
        state: the state now.
        instance: its instance (job names and work, the node count).
        slots_job: (S,) the slots' jobs, -1 = empty (empty slots get no line).

    Returns:
        The text, newline-terminated: a summary line, one line per occupied slot (name,
        nodes, rate, a 20-character progress bar), and the first 80 nodes as characters
        (``.`` not lent, ``-`` idle and free, a letter per job index modulo 26).
    """
    n_av = int(state.available.sum())
    n_used = int(state.n_nodes.sum())
    active = int(np.count_nonzero(state.status == JobStatus.ACTIVE))
    done = int(np.count_nonzero(state.status >= JobStatus.COMPLETED))
    lines = [
        f"t={state.time:,.0f}s  idle nodes {n_av}/{instance.num_nodes}  used {n_used}  "
        f"jobs active {active} done {done}/{instance.num_jobs}",
    ]
    jobs = instance.jobs
    for s, j in enumerate(slots_job):
        if j < 0:
            continue
        frac = state.progress[j] / jobs.work[j]
        bar = "#" * round(20 * frac)
        lines.append(
            f"[{s:2d}] {jobs.name[j][:24]:24s} n={int(state.n_nodes[j]):4d} "
            f"rate={state.rate[j]:10.1f}/s |{bar:20s}| {100 * frac:5.1f}%"
        )
    node_row = "".join(
        "." if not a else ("-" if j < 0 else chr(ord("a") + int(j) % 26))
        for a, j in zip(state.available[:80], state.node_job[:80], strict=True)
    )
    lines.append("nodes: " + node_row + (" ..." if instance.num_nodes > 80 else ""))
    return "\n".join(lines) + "\n"


def render_gantt(history: History, instance: Instance, now: float) -> np.ndarray:
    """An (FRAME_H, FRAME_W, 3) uint8 Gantt image of the recorded history.

    Args:
        history: the recorded steps (empty: a blank chart of the nodes).
        instance: the episode's instance (node and job counts, its name for the title).
        now: the time now, seconds: the chart's right edge at least.

    Returns:
        The RGB frame: nodes down, time across in hours over 300 columns, a colour per job
        (``_palette``), grey where a node was not lent, white where it was idle and free.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    N = instance.num_nodes
    cols = 300
    img = np.full((N, cols, 3), 1.0)
    if history.steps:
        t_lo = history.steps[0][0]
        t_hi = max(now, history.steps[-1][1], t_lo + 1.0)
        edges = np.linspace(t_lo, t_hi, cols + 1)
        cmap = _palette(instance.num_jobs)
        for t0, t1, nj, av in history.steps:
            c0 = int(np.searchsorted(edges, t0, side="right")) - 1
            c1 = max(int(np.searchsorted(edges, t1, side="left")), c0 + 1)
            block = np.where(av[:, None], 1.0, 0.8) * np.ones((N, 3))
            on = nj >= 0
            block[on] = cmap[nj[on]]
            img[:, max(c0, 0) : min(c1, cols)] = block[:, None, :]
        extent = (t_lo / 3600.0, t_hi / 3600.0, N, 0)
    else:
        extent = (0.0, 1.0, N, 0)
    fig = Figure(figsize=(FRAME_W / DPI, FRAME_H / DPI), dpi=DPI)
    canvas = FigureCanvasAgg(fig)
    ax = fig.add_subplot(111)
    ax.imshow(img, aspect="auto", interpolation="nearest", extent=extent)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("node")
    ax.set_title(f"{instance.name}: nodes by job (grey = not lent)")
    fig.tight_layout()
    canvas.draw()
    frame = np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
    return frame


def _palette(n: int) -> np.ndarray:
    """Distinct-ish colours for n jobs (golden-angle hues), stable per job index.

    Args:
        n: the number of jobs (at least one colour is made).

    Returns:
        (max(n, 1), 3) float RGB in [0, 1].
    """
    import colorsys

    return np.array(
        [colorsys.hsv_to_rgb((i * 0.618034) % 1.0, 0.65, 0.85) for i in range(max(n, 1))]
    )
