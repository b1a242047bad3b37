"""Process lifetime and exposure for the bridge: no orphans, no stores on the network.

- **Parent-death signal** (Linux ``prctl(PR_SET_PDEATHSIG)``): ``pdeathsig_preexec`` is a
  ``Popen(preexec_fn=...)`` that makes a child (the torch elastic agent, ``srun``) receive a
  signal when the thread that started it dies, even by SIGKILL; ``set_pdeathsig`` does the
  same from inside a process (each worker, for its agent). A child whose parent died before
  the call kills itself at once, so there is no window in which it can be orphaned.
- **Signals as exceptions**: ``raise_on_signals`` turns SIGTERM and SIGHUP into a
  ``Terminated`` exception in the main thread, so the ``finally`` blocks that stop every
  generation run on ``kill`` and ``timeout`` as they do on Ctrl-C.
- **Run token**: every process a launcher starts carries ``MTGYM_RUN_TOKEN`` (the run) and
  ``MTGYM_LAUNCH`` (job and generation) in its environment; ``environ_matches`` reads
  ``/proc/<pid>/environ``, so a PID is only signalled when it is provably ours (PIDs are
  reused; a command line containing "torch" proves nothing).
- **Store binding**: ``bind_stores(host)`` makes every torch ``TCPStore`` server this
  process creates (the c10d rendezvous endpoint, a worker's store) listen on ``host`` only,
  through a socket bound here and handed to torch (``master_listen_fd``); torch itself
  listens on every interface. ``bind_stores_from_env`` applies ``MTGYM_STORE_BIND``.

Standard library only (torch is imported by ``bind_stores`` alone): the agent and the
workers load this file by path, without importing the ``mtgym`` package.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from typing import Any

TOKEN_ENV = "MTGYM_RUN_TOKEN"
LAUNCH_ENV = "MTGYM_LAUNCH"
PARENT_ENV = "MTGYM_PARENT_PID"
BIND_ENV = "MTGYM_STORE_BIND"
PR_SET_PDEATHSIG = 1


class Terminated(SystemExit):
    """SIGTERM or SIGHUP arrived (exit status 128 + signal number).

    A ``SystemExit``, so an uncaught one ends the program with that status (143 for
    SIGTERM) and ``except Exception`` blocks do not swallow it.

    Args:
        signum: the signal received; kept as ``signum``.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(128 + signum)
        self.signum = signum


def _prctl() -> Any | None:
    """The C library's ``prctl`` with its argument types set; None off Linux or without libc."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    except OSError:  # pragma: no cover
        return None
    fn = libc.prctl
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


def set_pdeathsig(sig: int = signal.SIGKILL, expected_parent: int | None = None) -> bool:
    """Ask the kernel for ``sig`` when this process's parent dies (Linux; False elsewhere).

    Args:
        sig: the signal to receive (SIGKILL by default: no handler can delay it).
        expected_parent: the PID the parent should have. If the parent is already someone
            else (it died before this call and the process was re-parented), ``sig`` is
            sent to this process at once. None: no check.

    Returns:
        True when the request was made, False where ``prctl`` is not available.
    """
    fn = _prctl()
    if fn is None:
        return False
    fn(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    if expected_parent is not None and os.getppid() != expected_parent:
        os.kill(os.getpid(), sig)
    return True


def pdeathsig_preexec(sig: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A ``preexec_fn`` giving the child ``sig`` when the calling thread's process dies.

    libc is resolved here, before the fork, so the child runs one system call and nothing
    that could take a lock. The signal follows the *thread* that calls ``Popen`` (Linux
    semantics), so start long-lived children from a thread that outlives them.

    Args:
        sig: the signal the child gets (``srun`` gets SIGTERM so it can cancel its step).

    Returns:
        The function to pass as ``preexec_fn``, or None where ``prctl`` is not available.
        A child whose parent already died when it runs kills itself with ``sig``.
    """
    fn = _prctl()
    if fn is None:
        return None
    parent = os.getpid()

    def preexec() -> None:
        fn(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


def set_pdeathsig_from_env(sig: int = signal.SIGKILL) -> bool:
    """``set_pdeathsig`` against the parent named by ``MTGYM_PARENT_PID``.

    The bridge's workers call this first thing, so they die with their agent. A no-op (False)
    when the variable is not set: a worker run by hand is left alone.

    Args:
        sig: the signal to receive when the agent dies.

    Returns:
        ``set_pdeathsig``'s answer, or False when ``MTGYM_PARENT_PID`` is unset or not a
        number.
    """
    parent = os.environ.get(PARENT_ENV, "")
    if not parent.isdigit():
        return False
    return set_pdeathsig(sig, int(parent))


@contextlib.contextmanager
def raise_on_signals(
    signals: tuple[int, ...] = (signal.SIGTERM, signal.SIGHUP),
) -> Iterator[None]:
    """Raise ``Terminated`` in the main thread on ``signals`` (restored on exit).

    After the first signal, further ones are ignored until the block exits, so a second
    ``kill`` cannot interrupt the clean-up that the first one started. A no-op outside the
    main thread (Python delivers signals to the main thread only).

    Args:
        signals: the signal numbers to turn into ``Terminated``.

    Yields:
        Nothing; the previous handlers come back when the block exits, however it exits.
    """
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.getsignal(s) for s in signals}

    def handler(signum: int, frame: object) -> None:
        for s in signals:
            signal.signal(s, signal.SIG_IGN)
        raise Terminated(signum)

    for s in signals:
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def read_environ(pid: int) -> dict[str, str]:
    """The initial environment of ``pid`` (``/proc/<pid>/environ``; {} when unreadable).

    The environment the process was started with: later ``os.environ`` changes inside it
    do not show. Unreadable means gone, a zombie, or another user's process; bytes that are
    not UTF-8 are replaced.

    Args:
        pid: the process id.
    """
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            data = f.read()
    except OSError:
        return {}
    out = {}
    for item in data.split(b"\0"):
        k, sep, v = item.partition(b"=")
        if sep:
            out[k.decode(errors="replace")] = v.decode(errors="replace")
    return out


def environ_matches(pid: int, **want: str) -> bool:
    """True when every ``KEY=value`` of ``want`` is in ``pid``'s environment.

    The check the launchers make before signalling a PID. False when the environment cannot
    be read, so an unreadable process is never treated as ours.

    Args:
        pid: the process to check.
        **want: the variables and exact values required (``MTGYM_RUN_TOKEN=...``).
    """
    env = read_environ(pid)
    return bool(env) and all(env.get(k) == v for k, v in want.items())


def bind_stores(host: str) -> None:
    """Make every torch ``TCPStore`` server created from now on listen on ``host`` only.

    Replaces ``torch.distributed.TCPStore`` (and the name the c10d rendezvous backend
    imported) with a subclass that binds a listening socket to ``host:port`` and hands it
    to torch as ``master_listen_fd``. Clients are unchanged. Idempotent: a second call
    wraps the original class again rather than the subclass, with the new host. A store
    given its own ``master_listen_fd`` is left as it is.

    Args:
        host: the address to listen on (``"127.0.0.1"``; an address with ``:`` is bound
            as IPv6).
    """
    import torch.distributed as dist
    from torch.distributed.elastic.rendezvous import c10d_rendezvous_backend as c10d_rdzv

    base = dist.TCPStore
    if getattr(base, "_mtgym_bound", None) is not None:
        base = base._mtgym_base  # type: ignore[attr-defined]

    class BoundTCPStore(base):  # type: ignore[misc, valid-type]
        """``TCPStore`` whose server listens on ``host`` through a socket bound here.

        Arguments are accepted positionally in ``TCPStore``'s order or by name; only a
        server (``is_master``) without its own ``master_listen_fd`` is changed. Port 0
        picks a free port, which the store then reports.
        """

        _mtgym_bound = host
        _mtgym_base = base

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            names = (
                "host_name",
                "port",
                "world_size",
                "is_master",
                "timeout",
                "wait_for_workers",
                "multi_tenant",
                "master_listen_fd",
                "use_libuv",
            )
            kw = dict(zip(names, args, strict=False))
            kw.update(kwargs)
            if kw.get("is_master") and kw.get("master_listen_fd") is None:
                family = socket.AF_INET6 if ":" in host else socket.AF_INET
                sock = socket.socket(family, socket.SOCK_STREAM)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                sock.bind((host, int(kw.get("port") or 0)))
                sock.listen(4096)
                kw["port"] = sock.getsockname()[1]
                kw["master_listen_fd"] = sock.detach()  # torch owns the descriptor now
            super().__init__(**kw)

    dist.TCPStore = BoundTCPStore  # type: ignore[misc]
    c10d_rdzv.TCPStore = BoundTCPStore  # type: ignore[attr-defined]
    with contextlib.suppress(ImportError, AttributeError):
        import torch.distributed.rendezvous as rdzv

        rdzv.TCPStore = BoundTCPStore  # type: ignore[attr-defined]


def bind_stores_from_env() -> str:
    """``bind_stores($MTGYM_STORE_BIND)`` when it is set and not empty; returns the host.

    Returns:
        The host the stores are bound to, or ``""`` when the variable is unset or empty
        (torch's default of every interface is left in place).
    """
    host = os.environ.get(BIND_ENV, "")
    if host:
        bind_stores(host)
    return host


# ---------------------------------------------------------------------------------------
# /proc helpers (Linux; no psutil)
# ---------------------------------------------------------------------------------------
def proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter, parent PID) of a process, or None if it is gone.

    Parsed after the last ``)`` of ``/proc/<pid>/stat``, so a command name with spaces or
    parentheses cannot shift the fields.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            data = f.read()
    except OSError:
        return None
    rest = data[data.rfind(")") + 2 :].split()
    return rest[0], int(rest[1])


def pid_alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie.

    A process of another user (``kill`` refused) counts as alive. Says nothing about whose
    process it is: ``LocalLauncher._ours`` checks that.

    Args:
        pid: the process id.
    """
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (one scan of ``/proc``).

    Processes already re-parented (their parent died) are not found: the workers' PID files
    cover those.

    Args:
        pid: the root process (not included).

    Returns:
        Children first, then theirs (zombies included: ``/proc`` still lists them).
    """
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = proc_stat(int(entry))
            if st is not None:
                children.setdefault(st[1], []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def signal_quietly(pid: int, sig: int) -> None:
    """``os.kill``, ignoring a process that is gone or not ours to signal."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)
