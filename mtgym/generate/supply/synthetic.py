"""Synthetic idle windows calibrated to Summit.

**Synthetic** (``SyntheticSupply``): each node alternates busy and idle periods (an
alternating renewal process). Idle windows are lognormal with the Summit trace's median
(475 s) and mean (1,192 s); busy gaps are exponential with the mean that gives the target
time-weighted idle fraction (Summit: 8.3 % of 4,734 nodes). Optionally, *drains* add the
correlated releases the trace shows (median 4 nodes per event, p90 50, up to 2,780): a block of
consecutive nodes idles together until a reserved job starts, so its end is known.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np
from pydantic import model_validator

from mtgym.core.errors import ConfigError
from mtgym.core.instance import Supply
from mtgym.core.limits import MAX_DRAINS_PER_HOUR, MAX_HORIZON_S, MAX_NODES
from mtgym.core.spec import Duration, Prob, Strict, desc

#: Summit idle-window statistics (BFTrainer/Replayer trace, 14.9 days, 423,502 windows).
SUMMIT_WINDOW_MEDIAN_S = 475.0
SUMMIT_WINDOW_MEAN_S = 1191.6
SUMMIT_IDLE_FRACTION = 0.083
SUMMIT_MIN_WINDOW_S = 50.0


@dataclass(frozen=True)
class SyntheticSupply:
    """Parameters of the synthetic supply (defaults: the Summit trace's statistics).

    Attributes:
        idle_fraction: time-weighted mean share of nodes idle.
        window_median_s: median idle-window length.
        window_mean_s: mean idle-window length (> median: the lognormal's tail).
        min_window_s: shorter windows are lengthened to this (the trace has none below 50 s).
        end_known_prob: probability that an ordinary window's end is known when it opens.
        drains_per_hour: rate of correlated drains (0 = none).
        drain_nodes_median: median block size of a drain (lognormal, sigma 1).
        drain_median_s: median drain length (lognormal, sigma 0.8); drain ends are known.

    Drains come on top of ``idle_fraction``: a drained node was busy, so the idle share
    grows by the drains' node-time.

    Raises:
        ConfigError: a fraction outside (0, 1), median > mean, a minimum window not below
            the median, a probability outside [0, 1], or a bad drain parameter.
    """

    idle_fraction: float = SUMMIT_IDLE_FRACTION
    window_median_s: float = SUMMIT_WINDOW_MEDIAN_S
    window_mean_s: float = SUMMIT_WINDOW_MEAN_S
    min_window_s: float = SUMMIT_MIN_WINDOW_S
    end_known_prob: float = 0.0
    drains_per_hour: float = 0.0
    drain_nodes_median: float = 8.0
    drain_median_s: float = 1800.0

    #: The scenario-file spec (``kind: synthetic``), defined below from these defaults.
    Spec: ClassVar[type[Strict]]

    @classmethod
    def from_spec(cls, spec: Strict, resolve: Callable[[str], Path]) -> SyntheticSupply:
        """The source a scenario file's spec describes (``resolve`` expands data paths).

        Args:
            spec: the scenario file's ``supply`` section (a ``SyntheticSupplySpec``).
            resolve: unused (no file is read).
        """
        return cls(**spec.model_dump(exclude={"kind"}))

    def __post_init__(self) -> None:
        if not (0 < self.idle_fraction < 1):
            raise ConfigError("idle_fraction", self.idle_fraction, "0 < idle_fraction < 1")
        if not (0 < self.window_median_s <= self.window_mean_s):
            raise ConfigError(
                "window_median_s/window_mean_s",
                (self.window_median_s, self.window_mean_s),
                "0 < median <= mean",
            )
        if not (0 <= self.min_window_s < self.window_median_s):
            raise ConfigError("min_window_s", self.min_window_s, "0 <= min_window_s < median")
        if not (0 <= self.end_known_prob <= 1):
            raise ConfigError("end_known_prob", self.end_known_prob, "a probability in [0, 1]")
        if self.drains_per_hour < 0 or self.drain_nodes_median < 1 or self.drain_median_s <= 0:
            raise ConfigError(
                "drains",
                (self.drains_per_hour, self.drain_nodes_median, self.drain_median_s),
                "rate >= 0, median nodes >= 1, median length > 0",
            )

    @property
    def sigma(self) -> float:
        """Lognormal sigma from mean/median = exp(sigma^2 / 2)."""
        return float(np.sqrt(2.0 * np.log(self.window_mean_s / self.window_median_s)))

    def generate(self, rng: np.random.Generator, num_nodes: int, t0: float, t1: float) -> Supply:
        """Windows of ``num_nodes`` nodes on [t0, t1) (clipped to the span).

        Every node's renewal process is drawn for a fixed number of cycles (1.5 times the
        expected count n, plus 6 sqrt(n) + 8), then the drains.

        Args:
            rng: the "supply" stream.
            num_nodes: nodes of the machine.
            t0: span start, seconds; the process is stationary there (a node may already
                be idle at ``t0``).
            t1: span end.

        Returns:
            The windows; an ordinary window's end is known with ``end_known_prob``, a
            drain's always.

        Raises:
            ConfigError: ``num_nodes`` < 1, an empty span, or a span too long for the
                cycles drawn.
        """
        if num_nodes < 1 or not (t1 > t0):
            raise ConfigError("num_nodes/span", (num_nodes, t0, t1), "num_nodes >= 1, t1 > t0")
        f = self.idle_fraction
        mu, sig = np.log(self.window_median_s), self.sigma
        mean_idle = self.window_mean_s
        mean_busy = mean_idle * (1.0 - f) / f
        span = t1 - t0
        cycles = int(
            np.ceil(
                span / (mean_idle + mean_busy) * 1.5
                + 6 * np.sqrt(span / (mean_idle + mean_busy))
                + 8
            )
        )
        idle = np.maximum(rng.lognormal(mu, sig, size=(num_nodes, cycles)), self.min_window_s)
        busy = rng.exponential(mean_busy, size=(num_nodes, cycles))
        # Stationary start (alternating renewal process observed at t0): a node is idle with
        # probability f; an idle node sits in a length-biased window (lognormal(mu + sig^2,
        # sig)) at a uniform phase; a busy node's residual gap is a fresh exponential
        # (memoryless).
        start_idle = rng.random(num_nodes) < f
        covering = rng.lognormal(mu + sig * sig, sig, size=num_nodes)
        residual = np.maximum(covering * rng.random(num_nodes), 1.0)
        busy[:, 0] = np.where(start_idle, 0.0, busy[:, 0])
        idle[:, 0] = np.where(start_idle, residual, idle[:, 0])
        # Window k starts after busy[0..k] and idle[0..k-1]; computed forward from t0 so no
        # window starts before t0 by a rounding error.
        cycle_end = np.cumsum(busy + idle, axis=1)
        prev_end = np.concatenate([np.zeros((num_nodes, 1)), cycle_end[:, :-1]], axis=1)
        starts = t0 + (prev_end + busy)
        ends = starts + idle
        known = rng.random((num_nodes, cycles)) < self.end_known_prob
        keep = starts < t1
        if np.any(keep[:, -1]):
            raise ConfigError("horizon", span, "a shorter span (too many cycles to sample)")
        node = np.broadcast_to(np.arange(num_nodes)[:, None], keep.shape)[keep]
        s, e, k = starts[keep], np.minimum(ends[keep], t1), known[keep]
        if self.drains_per_hour > 0:
            s, e, k, node = self._add_drains(rng, num_nodes, t0, t1, s, e, k, node)
        ok = e > s
        return Supply.from_windows(node[ok], s[ok], e[ok], k[ok], num_nodes=num_nodes)

    def _add_drains(self, rng, num_nodes, t0, t1, s, e, k, node):
        """Add Poisson-many drains to the windows (s, e, k, node) of [t0, t1).

        A drain picks a block of consecutive nodes (lognormal size, uniform position), a
        uniform start and a lognormal length, and idles every node of the block that has
        no window overlapping it; where two drains meet on a node, the first drawn wins.

        Returns:
            The windows (sorted by node and start once a drain is drawn), followed by the
            drains' windows (ends known).
        """
        n_drains = rng.poisson(self.drains_per_hour * (t1 - t0) / 3600.0)
        if n_drains == 0:
            return s, e, k, node
        order = np.lexsort((s, node))
        s, e, k, node = s[order], e[order], k[order], node[order]
        first = np.searchsorted(node, np.arange(num_nodes + 1))
        new_s, new_e, new_n = [], [], []
        log_median = np.log(self.drain_nodes_median)
        for _ in range(n_drains):
            # (Python's round halves to even as np.round does; scalar np.clip is slow)
            size = min(max(round(float(rng.lognormal(log_median, 1.0))), 1), num_nodes)
            lo = int(rng.integers(0, num_nodes - size + 1))
            ds = t0 + rng.random() * (t1 - t0)
            de = min(t1, ds + rng.lognormal(np.log(self.drain_median_s), 0.8))
            # only where the node is busy for the whole drain (no idle window overlaps it)
            a, b = first[lo], first[lo + size]
            overlaps = (s[a:b] < de) & (e[a:b] > ds)
            busy = np.zeros(size, dtype=bool)
            busy[node[a:b][overlaps] - lo] = True
            hit = (np.flatnonzero(~busy) + lo).tolist()
            new_s += [ds] * len(hit)
            new_e += [de] * len(hit)
            new_n += hit
        # two drains may hit one node: keep the first, drop overlaps (checked per node)
        taken: dict[int, list[tuple[float, float]]] = {}
        keep = []
        for i, (n, a, b) in enumerate(zip(new_n, new_s, new_e, strict=True)):
            spans = taken.setdefault(n, [])
            if any(a < d and c < b for (c, d) in spans):
                continue
            spans.append((a, b))
            keep.append(i)
        if not keep:
            return s, e, k, node
        idx = np.array(keep)
        return (
            np.concatenate([s, np.asarray(new_s)[idx]]),
            np.concatenate([e, np.asarray(new_e)[idx]]),
            np.concatenate([k, np.ones(idx.size, dtype=bool)]),
            np.concatenate([node, np.asarray(new_n, dtype=np.int64)[idx]]),
        )


def _default(name: str) -> float:
    """``SyntheticSupply``'s default of field ``name`` (the spec's defaults are the same)."""
    return SyntheticSupply.__dataclass_fields__[name].default


class SyntheticSupplySpec(Strict):
    """Summit-calibrated synthetic windows (``SyntheticSupply``; its defaults)."""

    kind: Literal["synthetic"] = desc("synthetic idle windows", "synthetic")
    idle_fraction: float = desc(
        "long-run share of time a node is idle", _default("idle_fraction"), gt=0, lt=1
    )
    window_median_s: Duration = desc("median idle-window length, s", _default("window_median_s"))
    window_mean_s: Duration = desc(
        "mean idle-window length, s (>= the median)", _default("window_mean_s")
    )
    min_window_s: float = desc(
        "shortest idle window, s (< the median)", _default("min_window_s"), ge=0, le=MAX_HORIZON_S
    )
    end_known_prob: Prob = desc(
        "probability that a window's end is announced", _default("end_known_prob")
    )
    drains_per_hour: float = desc(
        f"rate of correlated drains (0 = none; at most {MAX_DRAINS_PER_HOUR:g})",
        _default("drains_per_hour"),
        ge=0,
        le=MAX_DRAINS_PER_HOUR,
    )
    drain_nodes_median: float = desc(
        "median nodes per drain", _default("drain_nodes_median"), ge=1, le=MAX_NODES
    )
    drain_median_s: Duration = desc("median drain length, s", _default("drain_median_s"))

    @model_validator(mode="after")
    def _order(self) -> SyntheticSupplySpec:
        """The lognormal's median <= mean, and the minimum window below the median."""
        if self.window_median_s > self.window_mean_s:
            raise ValueError("window_median_s must be <= window_mean_s (lognormal tail)")
        if self.min_window_s >= self.window_median_s:
            raise ValueError("min_window_s must be < window_median_s")
        return self


SyntheticSupply.Spec = SyntheticSupplySpec
