"""A thin, testable Slurm client: node states, jobs and reservations.

Every call runs one Slurm command with a timeout through a *runner* (``subprocess.run`` by
default; tests pass a fake). A failed call (the command is missing, exits non-zero, e.g.
``slurmctld`` unreachable, times out, or prints something unparsable) is retried with
exponential back-off and jitter drawn from a seeded generator, so retries are deterministic
for a given seed; when the attempts are spent it raises a ``SlurmError`` subclass that names
the command and what went wrong.

The parse functions are pure (text in, records out) and unit-tested on captured output:

- ``parse_sinfo_text`` reads ``sinfo -h -N -o "%N|%t|%P|%G|%E"`` (or the plain ``"%N %t"``),
- ``parse_sinfo_json`` reads ``sinfo --json`` (Slurm >= 21.08; openapi v0.0.38 in 22.05),
- ``parse_squeue`` reads ``squeue -h -a -o "%i|%j|%u|%T|%N|%S|%Y|%P"`` (running jobs' nodes,
  pending jobs' expected start and scheduled nodes, as ``squeue --start`` shows them),
- ``parse_reservations`` reads ``scontrol show reservation``,
- ``parse_gres`` and ``expand_hostlist`` read the ``gres`` and host-list notations.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from mtgym.core.errors import MtgymError


# ---------------------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------------------
class SlurmError(MtgymError):
    """A Slurm command failed; ``cmd`` is the command, ``detail`` what went wrong.

    The message reads ``slurm command `sinfo ...` failed (after 4 attempts): <detail>``.

    Args:
        cmd: the command's argument list.
        detail: what went wrong (exit status and Slurm's last line, the timeout, the line
            that did not parse).
        attempts: how many times the command was tried (named in the message when > 1).
    """

    def __init__(self, cmd: Sequence[str], detail: str, *, attempts: int = 1) -> None:
        self.cmd = list(cmd)
        self.detail = detail
        self.attempts = attempts
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        super().__init__(f"slurm command `{' '.join(self.cmd)}` failed{tries}: {detail}")


class SlurmUnavailableError(SlurmError):
    """The command is missing or exited non-zero (e.g. ``slurmctld`` unreachable)."""


class SlurmTimeoutError(SlurmError):
    """The command did not answer within its timeout."""


class SlurmParseError(SlurmError, ValueError):
    """The command's output could not be parsed (the line and what was expected)."""


# ---------------------------------------------------------------------------------------
# records
# ---------------------------------------------------------------------------------------
#: Node flags that make a node unlendable, whatever its base state.
BLOCKING_FLAGS = frozenset(
    {
        "drain",
        "not_responding",
        "maint",
        "reserved",
        "power_save",
        "powering_up",
        "powering_down",
        "power_down",
        "reboot",
        "fail",
        "completing",
    }
)

# ``%t`` short states (22.05) -> (base state, flags).
_SHORT_STATES: dict[str, tuple[str, frozenset[str]]] = {
    "idle": ("idle", frozenset()),
    "alloc": ("alloc", frozenset()),
    "allocated": ("alloc", frozenset()),
    "mix": ("mix", frozenset()),
    "mixed": ("mix", frozenset()),
    "down": ("down", frozenset()),
    "drain": ("idle", frozenset({"drain"})),
    "drained": ("idle", frozenset({"drain"})),
    "drng": ("alloc", frozenset({"drain"})),
    "draining": ("alloc", frozenset({"drain"})),
    "comp": ("alloc", frozenset({"completing"})),
    "completing": ("alloc", frozenset({"completing"})),
    "resv": ("idle", frozenset({"reserved"})),
    "reserved": ("idle", frozenset({"reserved"})),
    "maint": ("idle", frozenset({"maint"})),
    "plnd": ("idle", frozenset({"planned"})),
    "planned": ("idle", frozenset({"planned"})),
    "fail": ("down", frozenset({"fail"})),
    "failg": ("alloc", frozenset({"fail"})),
    "failing": ("alloc", frozenset({"fail"})),
    "futr": ("future", frozenset()),
    "future": ("future", frozenset()),
    "inval": ("invalid", frozenset()),
    "invalid": ("invalid", frozenset()),
    "unk": ("unknown", frozenset()),
    "unknown": ("unknown", frozenset()),
    "npc": ("alloc", frozenset()),  # perfctrs
    "boot": ("down", frozenset({"reboot"})),
    "pow_dn": ("idle", frozenset({"power_save"})),
    "pow_up": ("idle", frozenset({"powering_up"})),
    "blocked": ("alloc", frozenset()),
}
# ``%t`` suffixes -> flag.
_SUFFIXES = {
    "*": "not_responding",
    "~": "power_save",
    "#": "powering_up",
    "%": "powering_down",
    "!": "power_down",
    "$": "maint",
    "@": "reboot",
    "^": "reboot",
    "-": "planned",
}
# ``sinfo --json`` state_flags -> flag.
_JSON_FLAGS = {
    "DRAIN": "drain",
    "NOT_RESPONDING": "not_responding",
    "MAINTENANCE": "maint",
    "RESERVED": "reserved",
    "PLANNED": "planned",
    "POWERED_DOWN": "power_save",
    "POWERING_UP": "powering_up",
    "POWERING_DOWN": "powering_down",
    "POWER_DOWN": "power_down",
    "REBOOT_REQUESTED": "reboot",
    "REBOOT_ISSUED": "reboot",
    "FAIL": "fail",
    "COMPLETING": "completing",
}
_JSON_BASE = {
    "idle": "idle",
    "allocated": "alloc",
    "mixed": "mix",
    "down": "down",
    "error": "down",
    "future": "future",
    "unknown": "unknown",
}


@dataclass(frozen=True)
class NodeInfo:
    """One node as ``sinfo`` shows it.

    ``base`` is ``idle``, ``alloc``, ``mix``, ``down``, ``future``, ``invalid`` or
    ``unknown``; ``flags`` holds ``drain``, ``not_responding`` (the ``*`` suffix), ``maint``,
    ``reserved``, ``planned``, power and reboot states. ``state`` is the text Slurm printed.

    Attributes:
        name: the node's host name.
        state: Slurm's state text (``idle*``, ``mix-``; from JSON, ``idle+drain``).
        base: the base state (above).
        flags: the flags (above); ``BLOCKING_FLAGS`` are the ones that forbid lending.
        partitions: every partition listing the node (merged over ``sinfo``'s lines).
        gpus: GPUs from its ``gres`` (0: none).
        gpu_type: the GPU type from its ``gres`` (None: untyped or no GPU).
        reason: why it is drained or down (``%E``; ``""`` for none).
    """

    name: str
    state: str
    base: str
    flags: frozenset[str] = frozenset()
    partitions: tuple[str, ...] = ()
    gpus: int = 0
    gpu_type: str | None = None
    reason: str = ""

    @property
    def idle(self) -> bool:
        """Idle and free of any blocking flag (drain, ``*``, maintenance, reservation...)."""
        return self.base == "idle" and not (self.flags & BLOCKING_FLAGS)


@dataclass(frozen=True)
class JobInfo:
    """One job as ``squeue`` shows it; times are epoch seconds (nan = unknown).

    Attributes:
        job_id: Slurm's id (array and het-job forms such as ``12_[1-3]`` included).
        name: the job name; the scavenger's own are ``mtgym-<token>-<job>-g<gen>``.
        user: its owner.
        state: ``RUNNING``, ``PENDING``, ``COMPLETING``... (upper case).
        nodes: the host names it runs on (empty while pending).
        start_s: start (running) or expected start (pending; nan until the backfill
            scheduler plans it).
        sched_nodes: the nodes a pending job is planned on.
        partition: its partition.
    """

    job_id: str
    name: str
    user: str
    state: str  # RUNNING, PENDING, COMPLETING, ...
    nodes: tuple[str, ...]  # nodes it runs on
    start_s: float  # start (running) or expected start (pending), nan = unknown
    sched_nodes: tuple[str, ...] = ()  # nodes a pending job is planned on
    partition: str = ""


@dataclass(frozen=True)
class Reservation:
    """One reservation (``scontrol show reservation``); times are epoch seconds.

    Attributes:
        name: ``ReservationName``.
        start_s: when it starts (a future one's start ends the lending of its nodes).
        end_s: when it ends (nan: unknown).
        nodes: its host names.
        state: ``ACTIVE`` or ``INACTIVE``.
        flags: Slurm's reservation flags (``MAINT``, ``IGNORE_JOBS``...).
    """

    name: str
    start_s: float
    end_s: float
    nodes: tuple[str, ...]
    state: str  # ACTIVE or INACTIVE
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClusterSnapshot:
    """What one poll saw: nodes by name, jobs, reservations, at epoch time ``t``.

    Attributes:
        t: the client's clock when the poll started (epoch seconds).
        nodes: host name -> node.
        jobs: every job (empty for a nodes-only poll).
        reservations: every reservation (empty for a nodes-only poll).
    """

    t: float
    nodes: dict[str, NodeInfo]
    jobs: tuple[JobInfo, ...] = ()
    reservations: tuple[Reservation, ...] = ()


# ---------------------------------------------------------------------------------------
# pure parsers
# ---------------------------------------------------------------------------------------
_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")


def expand_hostlist(text: str) -> tuple[str, ...]:
    """``n[1-3,07],gpu[01-02]-ib`` -> ``n1 n2 n3 n07 gpu01-ib gpu02-ib`` (zero padding kept).

    Ranges may nest in one name (``r[1-2]n[1-2]``); an empty text, ``(null)``, ``N/A`` or
    ``None`` is no host. Host names are letters, digits, ``_``, ``.`` and ``-``.

    Args:
        text: Slurm's host list.

    Returns:
        The host names in the order written.

    Raises:
        ValueError: unbalanced brackets, a bad range (not digits, backwards, or over a
            million hosts) or a bad host name.
    """
    text = text.strip()
    if not text or text in ("(null)", "N/A", "None"):
        return ()
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced ']' in host list {text!r}")
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f"unbalanced '[' in host list {text!r}")
    parts.append("".join(cur))
    out: list[str] = []
    for p in parts:
        out.extend(_expand_one(p.strip(), text))
    return tuple(out)


def _expand_one(pat: str, whole: str) -> list[str]:
    """The hosts of one comma-free item of a host list, its first ``[...]`` expanded first
    (recursively); ``whole`` is the full list, for error messages.
    """
    m = re.search(r"\[([^\[\]]*)\]", pat)
    if m is None:
        if not pat or not _NAME.match(pat):
            raise ValueError(f"bad host name {pat!r} in host list {whole!r}")
        return [pat]
    head, tail = pat[: m.start()], pat[m.end() :]
    out = []
    for item in m.group(1).split(","):
        lo, _, hi = item.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"bad range {item!r} in host list {whole!r}")
        a, b = int(lo), int(hi) if hi else int(lo)
        if b < a or b - a > 1_000_000:
            raise ValueError(f"bad range {item!r} in host list {whole!r}")
        width = len(lo) if lo.startswith("0") else 0
        for k in range(a, b + 1):
            out.extend(_expand_one(f"{head}{k:0{width}d}{tail}", whole))
    return out


def parse_gres(text: str) -> tuple[int, str | None]:
    """GPUs on a node from its ``gres``: ``gpu:a100:4(S:0-1),mps:100`` -> ``(4, "a100")``.

    ``(null)`` or no ``gpu`` entry -> ``(0, None)``. Several GPU entries add up (the type
    is the first one's). Raises ``ValueError`` on a malformed count.

    ``gpu`` alone counts 1, ``gpu:a100`` counts 1 of type a100, ``gpu:4`` counts 4
    untyped; socket bindings in parentheses are ignored, and so are other resources.

    Args:
        text: the ``gres`` field (``%G``, or JSON's ``gres``).

    Returns:
        ``(GPUs, type or None)``.
    """
    text = (text or "").strip()
    if not text or text in ("(null)", "N/A"):
        return 0, None
    total, gtype = 0, None
    for entry in re.split(r",(?![^()]*\))", text):
        entry = re.sub(r"\(.*\)$", "", entry.strip())
        fields = entry.split(":")
        if fields[0] != "gpu":
            continue
        if len(fields) == 1:
            total += 1
            continue
        count = fields[-1]
        if not count.isdigit():
            if len(fields) == 2:  # gpu:a100 (count 1)
                total += 1
                gtype = gtype or fields[1]
                continue
            raise ValueError(f"bad GPU count {count!r} in gres {text!r}")
        total += int(count)
        if len(fields) >= 3:
            gtype = gtype or fields[1]
    return total, gtype


def parse_state(text: str) -> tuple[str, frozenset[str]]:
    """A ``%t``/``%T`` state (``idle``, ``drain``, ``mix-``, ``idle*``, ``down*``, ...) ->
    ``(base, flags)``. Compound long states (``idle+drain``) are read too.

    Case does not matter. Suffix characters (``* ~ # % ! $ @ ^ -``) become flags; a
    short state that implies a flag maps to its base (``drng`` -> ``alloc`` + drain); an
    unknown word after ``+`` is kept as a flag of that name.

    Args:
        text: the state as ``sinfo`` printed it.

    Raises:
        ValueError: the base word is not a known state.
    """
    s = text.strip().lower()
    flags: set[str] = set()
    while s and s[-1] in _SUFFIXES:
        flags.add(_SUFFIXES[s[-1]])
        s = s[:-1]
    parts = s.split("+")
    if parts[0] not in _SHORT_STATES:
        raise ValueError(f"unknown node state {text!r}")
    base, f0 = _SHORT_STATES[parts[0]]
    flags |= f0
    for extra in parts[1:]:
        if extra in _SHORT_STATES:
            flags |= _SHORT_STATES[extra][1] or {extra}
        else:
            flags.add(extra.replace("not_responding", "not_responding"))
    return base, frozenset(flags)


def _merge(nodes: dict[str, NodeInfo], node: NodeInfo) -> None:
    """Add ``node`` to ``nodes``; a node seen before only gains the new partitions (its
    first line's state, GPUs and reason are kept).
    """
    old = nodes.get(node.name)
    if old is None:
        nodes[node.name] = node
        return
    parts = tuple(dict.fromkeys(old.partitions + node.partitions))
    nodes[node.name] = NodeInfo(
        old.name, old.state, old.base, old.flags, parts, old.gpus, old.gpu_type, old.reason
    )


def parse_sinfo_text(text: str, cmd: Sequence[str] = ("sinfo",)) -> dict[str, NodeInfo]:
    """Nodes from ``sinfo -h -N -o "%N|%t|%P|%G|%E"`` (``|``-separated, reason last) or the
    whitespace-separated ``"%N %t [%P [%G]]"``. A node listed once per partition is merged.

    Raises ``SlurmParseError`` naming the line on anything else.

    A ``*`` after the partition (the default partition) is dropped; a reason of ``none``
    or ``(null)`` is empty.

    Args:
        text: ``sinfo``'s output.
        cmd: the command, for the error.

    Returns:
        Host name -> node.
    """
    nodes: dict[str, NodeInfo] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        fields = line.split("|", 4) if "|" in line else line.split(None, 3)
        try:
            if len(fields) < 2 or not _NAME.match(fields[0]):
                raise ValueError("expected 'NAME|STATE[|PARTITION[|GRES[|REASON]]]'")
            base, flags = parse_state(fields[1])
            part = fields[2].strip().rstrip("*") if len(fields) > 2 else ""
            gpus, gtype = parse_gres(fields[3]) if len(fields) > 3 else (0, None)
        except ValueError as exc:
            raise SlurmParseError(cmd, f"line {no} {raw!r}: {exc}") from None
        reason = fields[4].strip() if len(fields) > 4 else ""
        _merge(
            nodes,
            NodeInfo(
                name=fields[0],
                state=fields[1].strip(),
                base=base,
                flags=flags,
                partitions=(part,) if part else (),
                gpus=gpus,
                gpu_type=gtype,
                reason="" if reason in ("none", "(null)") else reason,
            ),
        )
    return nodes


def parse_sinfo_json(text: str, cmd: Sequence[str] = ("sinfo", "--json")) -> dict[str, NodeInfo]:
    """Nodes from ``sinfo --json`` (``nodes[].name/state/state_flags/partitions/gres``).

    ``state`` is a word with ``state_flags`` beside it (22.05), or a list of words (newer
    openapi versions: the first known base word is the base, the others flags). Unknown
    flags are kept, lower-cased. ``NodeInfo.state`` is rebuilt as ``base+flag+...``.

    Args:
        text: ``sinfo --json``'s output.
        cmd: the command, for the errors.

    Returns:
        Host name -> node.

    Raises:
        SlurmParseError: not JSON, no ``nodes`` list, or a node with a missing field or an
            unknown base state.
        SlurmUnavailableError: the JSON carries Slurm's own ``errors``.
    """
    try:
        data = json.loads(text)
        raw_nodes = data["nodes"]
        if not isinstance(raw_nodes, list):
            raise TypeError("'nodes' is not a list")
    except (ValueError, KeyError, TypeError) as exc:
        raise SlurmParseError(cmd, f"not sinfo JSON ({exc}): {text[:120]!r}") from None
    errors = data.get("errors") or []
    if errors:
        raise SlurmUnavailableError(cmd, f"sinfo reported errors: {errors}")
    nodes: dict[str, NodeInfo] = {}
    for i, n in enumerate(raw_nodes):
        try:
            name = str(n["name"])
            state = n["state"]
            if isinstance(state, list):  # newer openapi versions: a list of words
                words = [str(s).upper() for s in state]
                base_word = next((w.lower() for w in words if w.lower() in _JSON_BASE), "unknown")
                flag_words = [w for w in words if w.lower() not in _JSON_BASE]
            else:
                base_word = str(state).lower()
                flag_words = [str(f).upper() for f in n.get("state_flags", [])]
            if base_word not in _JSON_BASE:
                raise ValueError(f"unknown state {state!r}")
            flags = frozenset(_JSON_FLAGS.get(w, w.lower()) for w in flag_words)
            gpus, gtype = parse_gres(str(n.get("gres", "") or ""))
            parts = tuple(str(p) for p in n.get("partitions", []) or [])
        except (KeyError, TypeError, ValueError) as exc:
            raise SlurmParseError(cmd, f"nodes[{i}]: {exc}") from None
        state_text = base_word + "".join(f"+{f}" for f in sorted(flags))
        _merge(
            nodes,
            NodeInfo(
                name,
                state_text,
                _JSON_BASE[base_word],
                flags,
                parts,
                gpus,
                gtype,
                str(n.get("reason", "") or ""),
            ),
        )
    return nodes


def parse_time(text: str) -> float:
    """A Slurm time (``2026-12-03T01:14:54``, local time) -> epoch seconds; ``N/A``,
    ``Unknown``, ``(null)`` or empty -> nan. Raises ``ValueError`` otherwise.

    ``None`` and ``0`` are unknown too. A time without an offset is read in this machine's
    time zone, as Slurm prints it.

    Args:
        text: the field.
    """
    t = text.strip()
    if t in ("", "N/A", "Unknown", "(null)", "None", "0"):
        return float("nan")
    return datetime.fromisoformat(t).timestamp()


SQUEUE_FORMAT = "%i|%j|%u|%T|%N|%S|%Y|%P"


def parse_squeue(text: str, cmd: Sequence[str] = ("squeue",)) -> tuple[JobInfo, ...]:
    """Jobs from ``squeue -h -a -o "%i|%j|%u|%T|%N|%S|%Y|%P"``.

    A pending job's ``%S`` is its expected start (``N/A`` until the backfill scheduler has
    planned it) and ``%Y`` the nodes it is planned on.

    Args:
        text: ``squeue``'s output (no header).
        cmd: the command, for the error.

    Returns:
        The jobs in ``squeue``'s order.

    Raises:
        SlurmParseError: a line without 8 fields, a bad job id, host list or time.
    """
    jobs = []
    for no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        f = raw.strip().split("|")
        try:
            if len(f) != 8:
                raise ValueError(f"expected 8 '|'-separated fields ({SQUEUE_FORMAT}), got {len(f)}")
            job_id, name, user, state, nodes, start, sched, part = f
            if not job_id or not re.match(r"^[0-9_\[\]\-+%]+$", job_id):
                raise ValueError(f"bad job id {job_id!r}")
            jobs.append(
                JobInfo(
                    job_id=job_id,
                    name=name,
                    user=user,
                    state=state.upper(),
                    nodes=expand_hostlist(nodes),
                    start_s=parse_time(start),
                    sched_nodes=expand_hostlist(sched),
                    partition=part,
                )
            )
        except ValueError as exc:
            raise SlurmParseError(cmd, f"line {no} {raw!r}: {exc}") from None
    return tuple(jobs)


def parse_reservations(
    text: str, cmd: Sequence[str] = ("scontrol", "show", "reservation")
) -> tuple[Reservation, ...]:
    """Reservations from ``scontrol show reservation`` (``No reservations in the system``
    -> none). Each record starts at ``ReservationName=``.

    Args:
        text: the command's output.
        cmd: the command, for the error.

    Returns:
        The reservations in the order listed.

    Raises:
        SlurmParseError: output that does not start with ``ReservationName=``, or a
            record without a start or end time, or with a bad time or host list.
    """
    body = text.strip()
    if not body or body.lower().startswith("no reservations"):
        return ()
    if not body.startswith("ReservationName="):
        raise SlurmParseError(cmd, f"expected 'ReservationName=...', got {body[:80]!r}")
    out = []
    for chunk in re.split(r"\n\s*\n|(?=ReservationName=)", body):
        chunk = chunk.strip()
        if not chunk:
            continue
        kv = dict(re.findall(r"(\w+)=(\S*)", chunk))
        try:
            start, end = parse_time(kv["StartTime"]), parse_time(kv["EndTime"])
            if np.isnan(start):
                raise ValueError("no StartTime")
            out.append(
                Reservation(
                    name=kv["ReservationName"],
                    start_s=start,
                    end_s=end,
                    nodes=expand_hostlist(kv.get("Nodes", "")),
                    state=kv.get("State", "").upper(),
                    flags=tuple(f for f in kv.get("Flags", "").split(",") if f),
                )
            )
        except (KeyError, ValueError) as exc:
            raise SlurmParseError(cmd, f"reservation {chunk[:60]!r}: {exc}") from None
    return tuple(out)


# ---------------------------------------------------------------------------------------
# the client
# ---------------------------------------------------------------------------------------
#: ``runner(argv, timeout_s, env) -> (returncode, stdout, stderr)``; raises
#: ``subprocess.TimeoutExpired`` on a timeout and ``OSError`` when the command is missing.
Runner = Callable[[Sequence[str], float, Mapping[str, str] | None], tuple[int, str, str]]


def subprocess_runner(
    argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None
) -> tuple[int, str, str]:
    """Run a command with a timeout (the default runner).

    Args:
        argv: the command.
        timeout_s: seconds before ``subprocess.TimeoutExpired`` (the child is killed).
        env: the whole environment of the command (None: inherit this process's).

    Returns:
        ``(exit status, stdout, stderr)`` as text; stdin is ``/dev/null``.

    Raises:
        subprocess.TimeoutExpired: no exit within ``timeout_s``.
        OSError: the command cannot be run (missing).
    """
    p = subprocess.run(
        list(argv),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        env=None if env is None else dict(env),
        stdin=subprocess.DEVNULL,
    )
    return p.returncode, p.stdout, p.stderr


@dataclass
class Backoff:
    """Retry schedule: ``attempts`` tries; before try k+1 wait
    ``min(cap_s, base_s * factor**k) * (1 + jitter * u)``, u uniform in [-1, 1) from a
    generator seeded with ``seed`` (deterministic). ``jitter=0`` gives the plain schedule.

    The generator is shared by every call of one client, so the jitter sequence is
    deterministic per client, not per command.

    Attributes:
        attempts: tries in all (>= 1; 1 = no retry).
        base_s: the first wait, seconds (>= 0).
        factor: the growth per retry (>= 1).
        cap_s: the longest wait before jitter, seconds.
        jitter: the relative spread, in [0, 1).
        seed: the jitter generator's seed.

    Raises:
        ValueError: from ``__post_init__``, for a value out of range.
    """

    attempts: int = 4
    base_s: float = 0.5
    factor: float = 2.0
    cap_s: float = 8.0
    jitter: float = 0.25
    seed: int = 0
    _rng: np.random.Generator = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1 or self.base_s < 0 or self.factor < 1 or not 0 <= self.jitter < 1:
            raise ValueError(
                f"back-off needs attempts >= 1, base_s >= 0, factor >= 1, 0 <= jitter < 1; got "
                f"{self.attempts}, {self.base_s}, {self.factor}, {self.jitter}"
            )
        self._rng = np.random.default_rng(self.seed)

    def delay(self, k: int) -> float:
        """The wait before retry ``k + 1`` (k = 0 after the first failure).

        Draws one number from the generator when ``jitter`` is not 0.

        Args:
            k: failures so far minus 1.

        Returns:
            Seconds to wait.
        """
        d = min(self.cap_s, self.base_s * self.factor**k)
        u = float(self._rng.uniform(-1.0, 1.0)) if self.jitter else 0.0
        return d * (1.0 + self.jitter * u)


@dataclass
class SlurmClient:
    """Runs Slurm commands with a timeout and retries (see module doc).

    Args:
        env: environment of the commands (e.g. with ``SLURM_CONF``); None = inherit.
        timeout_s: per-command timeout.
        backoff: the retry schedule.
        sinfo_json: read ``sinfo --json`` instead of the text format.
        runner, sleep, clock: injectable for tests.
        on_retry: called with ``(attempt, error, delay_s)`` before each wait (logging).
        calls: commands run so far, every attempt counted.
    """

    env: Mapping[str, str] | None = None
    timeout_s: float = 10.0
    backoff: Backoff = field(default_factory=Backoff)
    sinfo_json: bool = False
    runner: Runner = subprocess_runner
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    on_retry: Callable[[int, SlurmError, float], None] | None = None
    calls: int = 0  # commands run (attempts included)

    def _once(self, argv: Sequence[str]) -> str:
        """One attempt: the command's stdout.

        Raises:
            SlurmTimeoutError: no answer within ``timeout_s``.
            SlurmUnavailableError: the command cannot be run or exits non-zero (the detail
                is its last line of stderr, else of stdout).
        """
        self.calls += 1
        try:
            rc, out, err = self.runner(argv, self.timeout_s, self.env)
        except subprocess.TimeoutExpired:
            raise SlurmTimeoutError(argv, f"no answer within {self.timeout_s:g} s") from None
        except OSError as exc:
            raise SlurmUnavailableError(argv, f"cannot run it: {exc}") from None
        if rc != 0:
            msg = (err or out).strip().splitlines()
            raise SlurmUnavailableError(
                argv, f"exit status {rc}: {msg[-1] if msg else 'no output'}"
            )
        return out

    def call(self, argv: Sequence[str], parse: Callable[[str], object] | None = None) -> object:
        """Run ``argv`` (and ``parse`` its output) with retries; raise the last error.

        A parse failure (``SlurmParseError``) is retried like a failed command: a torn
        output may be whole next time. Other exceptions from ``parse`` are not caught.

        Args:
            argv: the command.
            parse: turns stdout into the result (None: return stdout).

        Returns:
            ``parse``'s answer, or stdout.

        Raises:
            SlurmError: the last attempt's error, of the same subclass, with the attempts
                counted in its message.
        """
        last: SlurmError | None = None
        for k in range(self.backoff.attempts):
            try:
                out = self._once(argv)
                return parse(out) if parse is not None else out
            except SlurmError as exc:
                last = exc
                if k + 1 < self.backoff.attempts:
                    d = self.backoff.delay(k)
                    if self.on_retry is not None:
                        self.on_retry(k + 1, exc, d)
                    self.sleep(d)
        assert last is not None
        raise type(last)(last.cmd, last.detail, attempts=self.backoff.attempts)

    # -- queries -----------------------------------------------------------------------
    def nodes(self, partition: str | None = None) -> dict[str, NodeInfo]:
        """Every node (of ``partition``) with its state, partitions and GPUs.

        Args:
            partition: only this partition's nodes (None: all).

        Returns:
            Host name -> node, from ``sinfo --json`` when ``sinfo_json`` is set.
        """
        part = ["-p", partition] if partition else []
        if self.sinfo_json:
            argv = ["sinfo", "--json", *part]
            return self.call(argv, lambda s: parse_sinfo_json(s, argv))  # type: ignore[return-value]
        argv = ["sinfo", "-h", "-N", *part, "-o", "%N|%t|%P|%G|%E"]
        return self.call(argv, lambda s: parse_sinfo_text(s, argv))  # type: ignore[return-value]

    def jobs(self) -> tuple[JobInfo, ...]:
        """Every job (all partitions): running jobs' nodes, pending jobs' expected starts."""
        argv = ["squeue", "-h", "-a", "-o", SQUEUE_FORMAT]
        return self.call(argv, lambda s: parse_squeue(s, argv))  # type: ignore[return-value]

    def reservations(self) -> tuple[Reservation, ...]:
        """Every reservation, active or future."""
        argv = ["scontrol", "show", "reservation"]
        return self.call(argv, lambda s: parse_reservations(s, argv))  # type: ignore[return-value]

    def snapshot(self, partition: str | None = None, *, detail: bool = True) -> ClusterSnapshot:
        """Nodes, and (``detail``) jobs and reservations, at one time.

        Three commands in a row (one without ``detail``), each with its own retries; the
        time is taken before the first.

        Args:
            partition: only this partition's nodes (jobs and reservations: all).
            detail: also read ``squeue`` and the reservations.
        """
        t = self.clock()
        nodes = self.nodes(partition)
        if not detail:
            return ClusterSnapshot(t, nodes)
        return ClusterSnapshot(t, nodes, self.jobs(), self.reservations())

    def scancel(self, *args: str) -> None:
        """``scancel ARGS`` (with retries).

        Args:
            *args: ``scancel``'s arguments (``--name=...``, ``--user=...``).

        Raises:
            SlurmError: it still fails after the retries.
        """
        self.call(["scancel", *args])
