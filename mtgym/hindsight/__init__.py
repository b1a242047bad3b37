"""A hindsight upper bound of the headline, per episode: no policy, online or not, beats it.

The headline (``mtgym.metrics``, ``docs/metrics.md``) is ``normalized_throughput``: the sum
over jobs of samples / reference rate (best-node-seconds), divided by the run's duration,
from ``t_start`` to the moment the last job finishes, else to the run's end L (the horizon,
or ``until`` for a prefix run: ``play``'s limit). ``hindsight_bound`` knows the whole episode
in advance (every idle window, every arrival, each job's true curve, variability and work)
and bounds that number with linear programmes. The proof is in ``docs/metrics.md``
("Hindsight bound"); in short:

**Rate envelope** (``envelope``). A job on a node set S of n nodes runs at ``formula(n,
slow, level)`` (``mtgym.model.throughput``), where ``slow``, the largest ``sf / type_rate``
over S, is at least the n-th smallest over the nodes ever idle in the run, and S's spread is
a level one of whose groups holds n of those nodes. Both forms of the formula decrease in
``slow``, so ``h_j(n)``, the best rate over those levels at that slowness over the reference
rate, bounds the job's normalised rate on any n nodes; n is 0 or in min..max. Its concave
majorant from (0, 0), ``g_j(n) = sum_s a_s fill_s(n)`` (segments of slope a_s and length
len_s), bounds it too. A node of GPU type t in S also caps the rate at ``kappa_jt`` (<= 1)
times ``h_j(n)``.

**The LP** (``Layout``). ``[t_start, E]`` is cut into bins. For job j and bin k,
``delta_jks`` = the integral of ``fill_s(n_j(t))`` over the bin after the job's release
(arrival plus its first start-up pause) is at most ``len_s`` x the time with an idle node;
their sum over s is at most the integral of ``min(max_nodes, idle nodes)``; over jobs, at
most the bin's idle node-seconds (per type). ``sum a_s delta`` bounds the job's normalised
work there, and its own work caps it. Rescale and pre-emption costs are relaxed. Every run
maps to a feasible point (its jobs' deltas scaled down to their work), so the optimum
``maxwork(E)`` bounds any run's normalised samples by E, for any bins: bins only trade
tightness for size.

**The duration.** A run that does not finish its workload ends at L: headline <=
maxwork(L) / (L - t_start). A run that finishes at E < L has seen every arrival and done
each job's least work (``minimum_work``: all of it, or a campaign's first rung), so the
least-work LP (each job's work counted up to its least work) reaches the total least work
by E. The search on E finds E_min, the latest end it proves too early: headline <=
min(total work, maxwork(L)) / (E_min - t_start). The bound is the larger of the forms
that can apply.

**Certified.** The LPs are solved with HiGHS (``highspy``, the library ``pulp.HiGHS``
drives; through PuLP with CBC when highspy is missing). Every LP value used is a weak-duality
bound computed here from the solver's row duals (any y >= 0 bounds a maximisation with
``<=`` rows and boxed variables: ``b.y + sum ub (c - A'y)+``; ``LP.certificate``), so
solver tolerances, a time-out or a failure make the bound looser, never wrong.

The package, one module per seam: ``base`` (settings, result, error), ``envelope``,
``supply``, ``layout`` (the LP), ``solve`` and ``bound``; the names below are re-exported
here.
"""

from __future__ import annotations

from mtgym.hindsight.base import (
    DEFAULT_NNZ,
    DEFAULT_NNZ_TYPES,
    END_TOL,
    IPM_NNZ,
    LINE_TOL,
    MAX_BINS,
    MAX_LINES,
    MIN_BINS,
    HindsightBound,
    HindsightError,
)
from mtgym.hindsight.bound import hindsight_bound, run_end
from mtgym.hindsight.envelope import Curves, envelope, majorant, upper_hull
from mtgym.hindsight.layout import LP, Layout, Sparse
from mtgym.hindsight.solve import Session, Solved
from mtgym.hindsight.supply import StepSupply, candidate_nodes, minimum_work

__all__ = [
    "DEFAULT_NNZ",
    "DEFAULT_NNZ_TYPES",
    "END_TOL",
    "IPM_NNZ",
    "LINE_TOL",
    "LP",
    "MAX_BINS",
    "MAX_LINES",
    "MIN_BINS",
    "Curves",
    "HindsightBound",
    "HindsightError",
    "Layout",
    "Session",
    "Solved",
    "Sparse",
    "StepSupply",
    "candidate_nodes",
    "envelope",
    "hindsight_bound",
    "majorant",
    "minimum_work",
    "run_end",
    "upper_hull",
]
