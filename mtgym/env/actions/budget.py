"""Budget masks: per-slot masks that also carry the shared node budget, so that a learner
drawing slots one after another can only draw actions that need no repair.

Why: the env's masks (``action_masks()``) are per slot. They cannot say that the idle nodes
are shared: an action drawn slot by slot from them (MaskablePPO's distribution) asks for
more nodes than are idle on 86-97 % of steps and is repaired (``docs/env.md``). A budget
mask gives each legal choice its node cost, and the budget, so that a learner can draw the
slots in order and mask each slot's choices by what the earlier ones left: an
autoregressive distribution whose every draw is feasible by construction
(``agents.budget_dist``). Its log-probability is the sum of the slots' conditional ones, so
PPO's ratio and behaviour cloning's likelihood work as before.

Encoding (one float32 per entry of the flat mask, sb3-contrib's layout, so that
MaskablePPO's rollout buffer, which stores masks as float32, keeps it unchanged):

- an illegal choice: 0 (the env's per-slot mask says no);
- a legal choice: ``OFFSET + delta``, ``delta`` the change in the idle nodes' use the
  choice makes (``shares``: a level's count less the job's current count; stop: minus the
  current count, the nodes it frees);
- every slot's keep entry (choice 0 of ``shares``, always legal, delta 0 by definition):
  ``OFFSET + budget``, the budget being the idle nodes less every slot's job's current count
  (what keeping everything leaves free).

Drawn in slot order, choice k of slot s is feasible when it is legal and ``delta <= left``,
``left`` being the budget less the deltas drawn for slots 0..s-1 (a stop adds its nodes
back); keep always is. Every prefix then fits, so the whole action fits the idle nodes: no
``oversubscribed`` repair, the only one a legal ``shares`` action can need. The order is
the slots' (a job keeps its slot until it leaves; a new job takes the lowest free slot, so
it is not the submission order that the env's FCFS repair follows): a learner sees the
order in its observation's slot rows and learns what the earlier slots leave.

``OFFSET`` is 2**21: deltas and budgets of up to a million nodes stay positive and exact
in float32 (integers up to 2**24 are).
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: a legal entry holds OFFSET + its delta (a positive float32, exact below 2**24)
OFFSET = 2**21
#: the keep choice's index in each slot (``shares``); it carries the budget
KEEP = 0


def check_encoded(encoded: np.ndarray) -> None:
    """``ValueError`` unless ``encoded`` looks like budget masks: every legal entry near
    ``OFFSET`` (a 0/1 mask, whose legal entries are 1, would otherwise read as deltas of
    about -2**21 and fit any budget: per-slot draws, repaired, without a word).

    Args:
        encoded: budget masks of any shape.
    """
    e = np.asarray(encoded)
    legal = e[e > 0]
    if legal.size and float(legal.min()) <= OFFSET / 2:
        raise ValueError(
            "not a budget mask (legal entries must be about 2**21 + the choice's node delta; "
            "got a value of at most 2**20): give env.unwrapped.budget_masks(), not the "
            "per-slot action mask"
        )


def split(encoded: np.ndarray, choices: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A budget mask's parts (module docstring).

    Args:
        encoded: (..., S * K) float32 budget masks (any leading axes).
        choices: K, the choices per slot.

    Returns:
        (legal, delta, budget): (..., S, K) bool, (..., S, K) int64 with 0 at keep and at
        illegal entries, (...,) int64 (read from slot 0's keep entry; 0 without slots).
    """
    check_encoded(encoded)
    e = np.asarray(encoded, dtype=np.float64)
    e = e.reshape(*e.shape[:-1], -1, choices)
    legal = e > 0
    delta = np.where(legal, e - OFFSET, 0).astype(np.int64)
    budget = delta[..., 0, KEEP].copy() if e.shape[-2] else np.zeros(e.shape[:-2], np.int64)
    delta[..., KEEP] = 0
    return legal, delta, budget


def conditional_legal(encoded: np.ndarray, actions: np.ndarray, choices: int) -> np.ndarray:
    """Each slot's feasible choices given the choices of the slots before it.

    Args:
        encoded: (B, S * K) budget masks.
        actions: (B, S) the choices drawn (only slots 0..s-1 matter for slot s).
        choices: K.

    Returns:
        (B, S, K) bool: legal, and keep or ``delta <= left`` (module docstring).
    """
    legal, delta, budget = split(encoded, choices)
    a = np.asarray(actions, dtype=np.int64).reshape(legal.shape[:-1])
    drawn = np.take_along_axis(delta, a[..., None], axis=-1)[..., 0]
    before = np.cumsum(drawn, axis=-1) - drawn  # each slot's predecessors' deltas
    left = budget[..., None] - before
    ok = legal & (delta <= left[..., None])
    ok[..., KEEP] = legal[..., KEEP]
    return ok


@njit(cache=True)
def prefix_feasible(
    encoded: np.ndarray, action: np.ndarray, choices: int
) -> int:  # pragma: no cover - jit
    """Make an action feasible in slot order, in place: where a slot's choice costs more
    than the slots before it left, the costliest choice that fits instead (keep at worst).

    For labels: an expert's allocation that fits the idle nodes in total can still need, in
    slot order, nodes that a later slot's stop frees; such a label is lowered to what the
    order allows (``agents.imitation``).

    Args:
        encoded: (S * K,) float32 budget mask.
        action: (S,) int64 choices, changed in place.
        choices: K.

    Returns:
        The number of slots changed.
    """
    S = action.shape[0]
    if S == 0:
        return 0
    left = encoded[KEEP] - OFFSET
    changed = 0
    for s in range(S):
        row = s * choices
        a = action[s]
        d = 0.0 if a == KEEP else encoded[row + a] - OFFSET
        if encoded[row + a] <= 0 or d > left:
            best, best_d = KEEP, 0.0
            for k in range(choices):
                if k == KEEP or encoded[row + k] <= 0:
                    continue
                dk = encoded[row + k] - OFFSET
                if dk <= left and dk > best_d:
                    best, best_d = k, dk
            action[s] = best
            d = best_d
            changed += 1
        left -= d
    return changed
