"""The public data sets mtgym reads, and a verified downloader for them.

``SOURCES`` (the catalogue, ``mtgym.data_sources``, re-exported here) lists every known
source: the BFTrainer/Replayer Summit idle-node trace and job workloads, PAL's GPU-variability
measurements and Sia-Philly traces (hal-uw/blox-pal), Gavel's measured throughputs, the
Lublin-model SWF log and a few Parallel Workloads Archive logs. Each entry gives the URL
(GitHub files pinned to a commit), licence, size and, where the exact bytes could be checked,
the SHA-256 digest.

``fetch(name, to)`` downloads one source into ``to/<filename>`` (the same layout as the team's
``shared/data`` folder). The download streams into a temporary file beside the final one,
is checked against the recorded size and SHA-256, and only then renamed into place with
``os.replace``, so a partial or corrupt download never appears under the final name.
Connection errors, HTTP 5xx and 429 are retried with exponential back-off; other HTTP errors
(404 ...) are not. A source without a recorded digest is refused unless ``verify=False``;
``verify=False`` (``--no-verify``) only accepts such a source: a recorded digest is always
checked.

The BFTrainer files are Python pickles. mtgym never unpickles them (it reads the converted
CSVs); load them only with a restricted unpickler.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any

from mtgym.core.errors import ConfigError, DataError, MtgymError
from mtgym.data_sources import (
    SOURCES,
    DataSource,
    get_source,
    licence_tag,
    list_sources,
    render_sources,
)

__all__ = [
    "SOURCES",
    "DataSource",
    "DownloadError",
    "NoChecksumError",
    "fetch",
    "get_source",
    "licence_tag",
    "list_sources",
    "render_sources",
    "sha256_file",
]

_CHUNK = 1 << 16
#: Suffix of the temporary file a download streams into (beside the final file).
TEMP_SUFFIX = ".part"
_USER_AGENT = "mtgym-datasets/0.1 (+python-urllib)"
#: HTTP statuses worth retrying: the server (or a proxy) may succeed next time.
_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Longest wait honoured from a ``Retry-After`` header, in seconds.
_MAX_RETRY_AFTER_S = 60.0


class DownloadError(MtgymError, OSError):
    """A download failed (HTTP error, connection error, truncated transfer).

    Attributes:
        url: The URL requested.
        status: The HTTP status, when the server answered with one.
        attempts: How many requests were made.

    Args:
        url: The URL requested (after ``base_url`` was applied).
        reason: What went wrong (``HTTP 404 Not Found; ...``, a connection error, ...).
        status: The HTTP status, or None (no answer, or a truncated body).
        attempts: Requests made; above 1 the message says so.
    """

    def __init__(self, url: str, reason: str, *, status: int | None = None, attempts: int = 1):
        self.url = url
        self.status = status
        self.attempts = attempts
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        super().__init__(f"download of {url} failed{tries}: {reason}")


class NoChecksumError(MtgymError, ValueError):
    """``fetch(verify=True)`` of a source whose SHA-256 nobody has recorded.

    The message says how to download it anyway (``verify=False``, ``--no-verify``) and how
    to check the file by hand: its recorded size and ``git hash-object`` blob id, when
    known.

    Args:
        source: The source refused; kept as ``self.source``.
    """

    def __init__(self, source: DataSource) -> None:
        self.source = source
        extra = []
        if source.size_bytes is not None:
            extra.append(f"expect {source.size_bytes:,} bytes")
        if source.git_blob is not None:
            extra.append(f"`git hash-object FILE` should print {source.git_blob}")
        hint = f" ({'; '.join(extra)})" if extra else ""
        super().__init__(
            f"no sha256 checksum is known for data source {source.name!r} ({source.url}), so "
            f"its download cannot be verified. To download it anyway, pass verify=False "
            f"(CLI: `mtgym data fetch {source.name} --no-verify`) and check the file "
            f"yourself{hint}."
        )


class _RetryableError(Exception):
    """Internal: a failure worth another attempt (``_download_retrying`` catches it).

    Args:
        reason: What went wrong; becomes the ``DownloadError``'s reason when the retries
            run out.
        status: The HTTP status (429 or 5xx), or None for a connection error or a
            truncated body.
        wait_s: The server's ``Retry-After`` in seconds (at most ``_MAX_RETRY_AFTER_S``),
            used instead of the back-off; None: back off.
    """

    def __init__(self, reason: str, status: int | None = None, wait_s: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.status = status
        self.wait_s = wait_s


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file, read in 64 KiB chunks (any size, little memory).

    Args:
        path: The file.

    Raises:
        OSError: the file cannot be opened or read.
    """
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(_CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def _resolve_url(url: str, base_url: str | None) -> str:
    """``url`` moved onto a mirror: ``base_url``'s scheme and host, its path prefixed to
    ``url``'s path; ``url``'s query is kept, its fragment dropped. None: ``url`` unchanged.

    Raises:
        ConfigError: ``base_url`` is not an ``http``/``https`` URL with a host.
    """
    if base_url is None:
        return url
    base = urllib.parse.urlsplit(base_url)
    if base.scheme not in ("http", "https") or not base.netloc:
        raise ConfigError("base_url", base_url, "an http:// or https:// URL with a host")
    src = urllib.parse.urlsplit(url)
    path = base.path.rstrip("/") + src.path
    return urllib.parse.urlunsplit((base.scheme, base.netloc, path, src.query, ""))


def _retry_after(headers: Any) -> float | None:
    """The ``Retry-After`` header in seconds, clipped to [0, ``_MAX_RETRY_AFTER_S``].

    None when the header is absent or an HTTP date (the caller then backs off itself).
    """
    value = headers.get("Retry-After") if headers is not None else None
    try:
        return min(max(float(value), 0.0), _MAX_RETRY_AFTER_S) if value is not None else None
    except ValueError:  # an HTTP date: use our own back-off
        return None


def _progress(show: bool) -> Any:
    """A rich progress bar on stderr (bytes, speed, time left) that vanishes when done.

    Args:
        show: False gives a disabled bar (same interface, prints nothing).
    """
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
        disable=not show,
    )


def _download_once(
    url: str, folder: Path, dest: Path, src: DataSource, timeout_s: float, show: bool
) -> tuple[Path, str, int]:
    """One attempt: stream ``url`` into a temporary file in ``folder``.

    The body is hashed while it streams; a body that grows past the recorded size is
    abandoned at once. On any error the temporary file is deleted.

    Args:
        url: The URL to request.
        folder: Where the temporary file goes (``dest``'s folder: same file system).
        dest: The final path (names the temporary file and the errors).
        src: The source: its recorded size caps the body and sizes the progress bar.
        timeout_s: Socket timeout of the request, in seconds.
        show: Show a progress bar on stderr.

    Returns:
        The temporary file, its hex SHA-256 and its size.

    Raises:
        _RetryableError: connection error, timeout, 5xx/429, truncated body.
        DownloadError: any other HTTP error (not retried).
        DataError: the body is larger than the recorded size.
    """
    req = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    try:
        resp = urllib.request.urlopen(req, timeout=timeout_s)
    except urllib.error.HTTPError as exc:
        with contextlib.closing(exc):
            status, msg = exc.code, f"HTTP {exc.code} {exc.reason}"
            if status in _RETRY_STATUSES:
                raise _RetryableError(msg, status, _retry_after(exc.headers)) from exc
            hint = (
                "; the file is not at this address (check the URL, or base_url if given)"
                if status == 404
                else ""
            )
            raise DownloadError(url, f"{msg}{hint}; not retried", status=status) from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise _RetryableError(f"connection error: {reason}") from exc

    fd, tmp = _open_temp(folder, dest)
    try:
        with resp, os.fdopen(fd, "wb") as out:
            length = resp.headers.get("Content-Length")
            expected_len = int(length) if length and length.isdigit() else None
            total = expected_len if expected_len is not None else src.size_bytes
            h = hashlib.sha256()
            n = 0
            with _progress(show) as bar:
                task = bar.add_task(src.name, total=total)
                while chunk := _read(resp):
                    n += len(chunk)
                    if src.size_bytes is not None and n > src.size_bytes:
                        raise DataError(
                            dest,
                            "size_bytes",
                            f"more than {src.size_bytes}",
                            f"{src.size_bytes}, the recorded size of {src.name!r} "
                            f"(download from {url} discarded)",
                        )
                    h.update(chunk)
                    out.write(chunk)
                    bar.update(task, advance=len(chunk))
            if expected_len is not None and n != expected_len:
                raise _RetryableError(f"truncated transfer: got {n} of {expected_len} bytes")
        return tmp, h.hexdigest(), n
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def _open_temp(folder: Path, dest: Path) -> tuple[int, Path]:
    """Create ``folder/.<dest name>.<random>.part`` exclusively (mode 0666 less the umask).

    Unlike ``tempfile.mkstemp`` (mode 0600), the renamed file gets the usual permissions.
    The leading dot hides it from listings; a name taken already is drawn again.

    Returns:
        The open file descriptor (write-only, binary) and the path.
    """
    while True:
        tmp = folder / f".{dest.name}.{secrets.token_hex(6)}{TEMP_SUFFIX}"
        with contextlib.suppress(FileExistsError):
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
            return os.open(tmp, flags, 0o666), tmp


def _read(resp: Any) -> bytes:
    """The next chunk of a response; network failures become ``_RetryableError``."""
    try:
        return bytes(resp.read(_CHUNK))
    except (OSError, http.client.HTTPException) as exc:
        raise _RetryableError(f"connection error while reading: {exc!r}") from exc


def _matches(path: Path, src: DataSource) -> bool:
    """Whether an existing file passes the recorded size and digest (when known).

    The size is compared first, so a wrong-size file is never hashed. A source with
    neither recorded matches any existing file.
    """
    if src.size_bytes is not None and path.stat().st_size != src.size_bytes:
        return False
    return src.sha256 is None or sha256_file(path) == src.sha256


def fetch(
    name: str | DataSource,
    to: str | Path,
    *,
    verify: bool = True,
    timeout_s: float = 60,
    base_url: str | None = None,
    retries: int = 3,
    backoff_s: float = 1.0,
    force: bool = False,
    progress: bool | None = None,
) -> Path:
    """Download one data source to ``to/<source.filename>`` and verify it.

    Args:
        name: A name in ``SOURCES`` (or a ``DataSource``).
        to: Target folder (created when missing); the file keeps its sub-folder.
        verify: True refuses a source with no recorded SHA-256; False accepts it. A
            recorded SHA-256 and size are checked either way: ``verify=False`` never lets
            a download that contradicts the record through.
        timeout_s: Socket timeout of each request, in seconds.
        base_url: Replaces scheme and host of the source URL and is prefixed to its
            path, e.g. ``http://127.0.0.1:8000`` for a local mirror of the same layout.
        retries: Further attempts after a connection error, truncated transfer, HTTP 429
            or 5xx; waits ``backoff_s * 2**k`` (or the server's ``Retry-After``, at most
            60 s) before attempt ``k+2``.
        backoff_s: First back-off delay, in seconds.
        force: Download even when a matching file is already there.
        progress: Show a progress bar on stderr; None = when stderr is a terminal.

    Returns:
        The path of the verified file. When it already exists and matches the recorded
        size and SHA-256 (those of them that are recorded), nothing is downloaded.

    Raises:
        KeyError: unknown name (the message lists the known names).
        NoChecksumError: ``verify`` is True and the source has no recorded SHA-256.
        DataError: the download has the wrong size or SHA-256 (it is deleted; the message
            names the file, the expected and the actual value).
        DownloadError: HTTP error other than 429/5xx (not retried, e.g. 404), or the
            retries ran out.
        ConfigError: bad ``retries``, ``timeout_s`` or ``base_url``.
    """
    src = name if isinstance(name, DataSource) else get_source(name)
    if retries < 0:
        raise ConfigError("retries", retries, "an int >= 0")
    if not timeout_s > 0:
        raise ConfigError("timeout_s", timeout_s, "a number > 0")
    if verify and src.sha256 is None:
        raise NoChecksumError(src)
    url = _resolve_url(src.url, base_url)
    dest = Path(to) / PurePosixPath(src.filename)
    if not force and dest.is_file() and _matches(dest, src):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    show = sys.stderr.isatty() if progress is None else progress
    tmp, digest, size = _download_retrying(url, dest, src, timeout_s, show, retries, backoff_s)
    _install(tmp, dest, src, url, digest, size)
    return dest


def _download_retrying(
    url: str,
    dest: Path,
    src: DataSource,
    timeout_s: float,
    show: bool,
    retries: int,
    backoff_s: float,
) -> tuple[Path, str, int]:
    """``_download_once`` with up to ``retries`` further attempts on retryable errors,
    waiting ``backoff_s * 2**k`` (or the server's ``Retry-After``); returns the temporary
    file, its SHA-256 and size.

    Args:
        url: The URL to request.
        dest: The final path; the temporary file goes in its folder.
        src: The source (recorded size).
        timeout_s: Socket timeout of each request, in seconds.
        show: Show a progress bar on stderr.
        retries: Further attempts after the first, >= 0.
        backoff_s: Wait before the second attempt, in seconds; doubled each time.

    Raises:
        DownloadError: a non-retryable HTTP error (``attempts`` set to the attempts made),
            or the retries ran out (the last failure's reason and status).
        DataError: the body grew past the recorded size (not retried).
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return _download_once(url, dest.parent, dest, src, timeout_s, show)
        except _RetryableError as exc:
            if attempt > retries:
                raise DownloadError(url, exc.reason, status=exc.status, attempts=attempt) from exc
            wait = backoff_s * 2 ** (attempt - 1)
            time.sleep(exc.wait_s if exc.wait_s is not None else wait)
        except DownloadError as exc:
            exc.attempts = attempt
            raise


def _install(tmp: Path, dest: Path, src: DataSource, url: str, digest: str, size: int) -> None:
    """Move the download ``tmp`` to ``dest`` if its size and SHA-256 match the record;
    else delete it and raise ``DataError``.

    The move is ``os.replace``: ``dest`` holds either the old file or the verified new
    one, never a partial download. ``tmp`` is gone afterwards in every case.

    Args:
        tmp: The temporary file ``_download_once`` wrote.
        dest: The final path.
        src: The source (recorded size and SHA-256; those not recorded are not checked).
        url: The URL downloaded (named in the error).
        digest: ``tmp``'s hex SHA-256.
        size: ``tmp``'s size in bytes.
    """
    try:
        if src.size_bytes is not None and size != src.size_bytes:
            raise DataError(
                dest,
                "size_bytes",
                size,
                f"{src.size_bytes}, the recorded size of {src.name!r} "
                f"(download from {url} discarded)",
            )
        if src.sha256 is not None and digest != src.sha256:
            raise DataError(
                dest,
                "sha256",
                digest,
                f"{src.sha256}, the recorded sha256 of {src.name!r} "
                f"(download from {url} discarded)",
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
