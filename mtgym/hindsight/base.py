"""The hindsight bound's settings (LP size, bins, tolerances), its result and its error."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from mtgym.core.errors import MtgymError

if TYPE_CHECKING:
    pass


#: Default size of the LP, about this many nonzeros (bins are chosen to fit it): with one GPU
#: type (``summit-replay-2d``: 11 bins, 1-3 s per solve) and with several, whose LP is slower
#: per nonzero (``default``: 29 bins, 0.1-0.3 s per solve). Finer bins tighten the bound a
#: little (``default``: 1 % from 14 to 29 bins) at a higher cost.
DEFAULT_NNZ = 250_000
DEFAULT_NNZ_TYPES = 24_000
#: Bounds on the number of bins.
MIN_BINS, MAX_BINS = 8, 96
#: Supporting lines kept per job (an outer approximation of the hull: still a bound).
MAX_LINES = 12
#: Lines are added until the outer approximation is within this share of the hull's top.
LINE_TOL = 2e-4
#: Relative gap (of E - t_start) at which the search for the earliest end stops.
END_TOL = 1e-3
#: LPs above this many nonzeros are solved by interior point (no crossover), the others by
#: simplex (whose basis warm-starts the search's re-solves).
IPM_NNZ = 100_000


class HindsightError(MtgymError):
    """``hindsight_bound(strict=True)`` could not prove its LPs optimal (time or solver)."""


@dataclass(frozen=True)
class HindsightBound:
    """The hindsight bound of one episode (``hindsight_bound``).

    ``value`` bounds the headline, ``normalized_throughput``, in best-node equivalents. It
    is always a valid bound: a time-out or a solver failure makes it looser (``status``),
    never wrong.

    Attributes:
        value: The headline bound (best-node equivalents); 0 when the run cannot step.
        form: Which form gave it: ``"horizon"`` (a run that ends at L) or
            ``"makespan"`` (a run that finishes its workload by E_min or later).
        work_bound: maxwork(L), capped at ``total_work``: the normalised samples
            (best-node-seconds) any run can reach by L.
        total_work: Sum of the jobs' work / reference rate, over the jobs submitted
            before L.
        horizon_s: L - t_start: the duration of a run that does not finish, seconds.
        makespan_lb_s: A lower bound of E - t_start for a run that finishes, seconds;
            None when no run can finish before L (or the search was not needed).
        bins: Time bins of the maxwork(L) LP.
        variables: Its columns.
        rows: Its rows.
        nonzeros: Its constraint matrix's nonzeros.
        solves: LPs solved: maxwork(L), then the least-work LPs of the search.
        status: ``"optimal"``, ``"time-limit"`` (a looser certified bound) or
            ``"failed: ..."`` (the first solver failure).
        solver: The solver that ran last: ``"highs"``, or ``"cbc"`` (asked for, or the
            fallback when highspy is missing).
        wall_s: Wall time of the whole computation, seconds.
    """

    value: float
    form: str
    work_bound: float
    total_work: float
    horizon_s: float
    makespan_lb_s: float | None
    bins: int
    variables: int
    rows: int
    nonzeros: int
    solves: int
    status: str
    solver: str
    wall_s: float

    def as_dict(self) -> dict[str, float | int | str | None]:
        """Plain dict (JSON-friendly)."""
        return asdict(self)
