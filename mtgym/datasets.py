"""The public data sets mtgym reads, and a verified downloader for them.

``SOURCES`` lists every known source: the BFTrainer/Replayer Summit idle-node trace and job
workloads, PAL's GPU-variability measurements and Sia-Philly traces (hal-uw/blox-pal), Gavel's
measured throughputs, the Lublin-model SWF log and a few Parallel Workloads Archive logs. Each
entry gives the URL (GitHub files pinned to a commit), licence, size and, where the exact bytes
could be checked, the SHA-256 digest.

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
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mtgym.core.errors import ConfigError, DataError, MtgymError

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


@dataclass(frozen=True)
class DataSource:
    """One downloadable public file.

    Attributes:
        name: Short identifier (``mtgym data fetch NAME``).
        description: What the file holds.
        url: Where it is downloaded from (``https``; GitHub files pinned to a commit).
        licence: The licence terms, or what is known about them.
        size_bytes: Exact size of the file at ``url``, or None when unknown.
        sha256: Hex SHA-256 of the file at ``url``, or None when nobody has checked its bytes.
        filename: Relative POSIX path the file is saved as under the target folder.
        used_by: The mtgym readers/generators that consume it (or the file derived from it).
        git_blob: Git blob id of the file in its repository (provenance), when known.
    """

    name: str
    description: str
    url: str
    licence: str
    size_bytes: int | None
    sha256: str | None
    filename: str
    used_by: tuple[str, ...] = ()
    git_blob: str | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        """Refuse a record that could not be fetched safely.

        Raises:
            ConfigError: an empty or space-padded name, a URL that is not ``https://``
                with a host, a ``filename`` that is absolute, has ``..`` or a backslash
                (it could escape the target folder), a negative size, or a ``sha256`` that
                is not 64 lower-case hex digits.
        """
        if not self.name or self.name != self.name.strip():
            raise ConfigError("name", self.name, "a non-empty name without surrounding spaces")
        u = urllib.parse.urlsplit(self.url)
        if u.scheme != "https" or not u.netloc:
            raise ConfigError("url", self.url, "an https:// URL")
        p = PurePosixPath(self.filename)
        if not self.filename or p.is_absolute() or ".." in p.parts or "\\" in self.filename:
            raise ConfigError(
                "filename", self.filename, "a relative POSIX path without '..' components"
            )
        if self.size_bytes is not None and self.size_bytes < 0:
            raise ConfigError("size_bytes", self.size_bytes, "a non-negative int or None")
        if self.sha256 is not None and (
            len(self.sha256) != 64 or any(c not in "0123456789abcdef" for c in self.sha256)
        ):
            raise ConfigError("sha256", self.sha256, "64 lower-case hex digits or None")


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


# --------------------------------------------------------------------------------------------
# The catalogue
# --------------------------------------------------------------------------------------------

_RAW = "https://raw.githubusercontent.com"
_REPLAYER = f"{_RAW}/BFTrainer/Replayer/515f0e500e34e4cc18e753b64ed000dd7b15f2ad/dataset"
_PAL_MAIN = f"{_RAW}/hal-uw/blox-pal/da726cabd3113ff50cb9860b040b479fa7114221/aggregated_data"
_PAL_ARTIFACT = (
    f"{_RAW}/hal-uw/blox-pal/8a590708a0cd82d14162178890bebbbd1f6ec858/workload-traces/philly"
)
_GAVEL = f"{_RAW}/stanford-futuredata/gavel/c4fa40097339e9608ab71fd64c8bdea96a5e4a4c"
_DIRLAB = f"{_RAW}/DIR-LAB/deep-batch-scheduler/cd433e3d62a01705f255bd48cb55b393862800e7"
_PWA = "https://www.cs.huji.ac.il/labs/parallel/workload"

_LIC_REPLAYER = (
    "none stated: BFTrainer/Replayer has no licence file; public, but redistribution is "
    "legally unclear (keep within the team or ask the authors)"
)
_LIC_PAL = "MIT (hal-uw/blox-pal LICENSE.txt; the notice must travel with copies)"
_LIC_GAVEL = "MIT (stanford-futuredata/gavel LICENSE; the notice must travel with copies)"
_LIC_DIRLAB = "none stated: DIR-LAB/deep-batch-scheduler has no licence file"
_LIC_PWA = (
    "Parallel Workloads Archive: free to use with attribution (cite Feitelson et al., JPDC 2014)"
)

_USE_BFTRAINER = ("mtgym.readers.read_bftrainer_jobs (via the converted CSV)",)
_USE_SUMMIT = ("mtgym.readers.read_idle_windows, read_summit_nodes (via the converted CSVs)",)
_USE_VAR = ("mtgym.readers.read_variability", "mtgym.generate.pal_philly.pal_slowdown_pool")
_USE_SWF = ("mtgym.readers.swf.read_swf", "mtgym.generate.backfill")


def _replayer(
    name: str, file: str, size: int, blob: str, description: str, used_by: tuple[str, ...]
) -> DataSource:
    """A file of BFTrainer/Replayer's ``dataset/`` folder, saved under ``bftrainer/``.

    No SHA-256 is recorded for these (``sha256=None``: ``fetch`` needs ``verify=False``);
    the size and git blob id are, so the bytes can be checked by hand.

    Args:
        name: The source's name.
        file: The file name in the repository's ``dataset/`` folder (pinned commit).
        size: Its size in bytes.
        blob: Its git blob id.
        description: What it holds.
        used_by: The mtgym readers that consume it (or its converted CSV).
    """
    return DataSource(
        name=name,
        description=description,
        url=f"{_REPLAYER}/{file}",
        licence=_LIC_REPLAYER,
        size_bytes=size,
        sha256=None,
        filename=f"bftrainer/{file}",
        used_by=used_by,
        git_blob=blob,
    )


def _bftrainer_workload(
    label: str, tag: str, jobs: str, jbnd: tuple[int, str], jnps: tuple[int, str], what: str
) -> list[DataSource]:
    """The two pickles of one BFTrainer workload: ``Jbnd`` (per-job bounds and rescale
    costs) and ``JNPs`` (per-job node-count/throughput curves).

    Args:
        label: The middle of the source names, ``bftrainer-<label>-jbnd`` / ``-jnps``.
        tag: The file name prefix (``ImageNet-imgps``, ``hps-shufflenet``).
        jobs: The job-count part of the file names (``1001J``, ``10J``).
        jbnd: (size in bytes, git blob id) of the ``Jbnd`` file.
        jnps: (size in bytes, git blob id) of the ``JNPs`` file.
        what: The workload, as the descriptions name it.
    """
    return [
        _replayer(
            f"bftrainer-{label}-jbnd",
            f"{tag}-Jbnd-{jobs}.pkl",
            *jbnd,
            f"BFTrainer {what}: per-job bounds and rescale costs (pandas pickle; untrusted, "
            "never unpickle without a restricted unpickler)",
            _USE_BFTRAINER,
        ),
        _replayer(
            f"bftrainer-{label}-jnps",
            f"{tag}-JNPs-{jobs}.pkl",
            *jnps,
            f"BFTrainer {what}: per-job node-count/throughput curves (pandas pickle; untrusted)",
            _USE_BFTRAINER,
        ),
    ]


def _pal(
    name: str,
    description: str,
    url: str,
    filename: str,
    used_by: tuple[str, ...],
    size: int,
    sha: str,
    blob: str,
) -> DataSource:
    """A file of hal-uw/blox-pal (MIT), with its size and digests.

    Args:
        name: The source's name.
        description: What it holds.
        url: Its pinned ``raw.githubusercontent.com`` URL.
        filename: Where it is saved, relative to the target folder.
        used_by: The mtgym readers/generators that consume it.
        size: Its size in bytes.
        sha: Its SHA-256 (hex), checked on every fetch.
        blob: Its git blob id.
    """
    return DataSource(
        name=name,
        description=description,
        url=url,
        licence=_LIC_PAL,
        size_bytes=size,
        sha256=sha,
        filename=filename,
        used_by=used_by,
        git_blob=blob,
    )


def _pal_var(name: str, path: str, size: int, sha: str, blob: str, what: str) -> DataSource:
    """A PAL GPU-variability CSV under ``aggregated_data/``."""
    url, filename = f"{_PAL_MAIN}/{path}", f"gpu-variability/{path}"
    return _pal(name, f"PAL GPU variability: {what}", url, filename, _USE_VAR, size, sha, blob)


def _pal_philly(k: int, size: int, sha: str, blob: str) -> DataSource:
    """Sia-Philly job trace ``k`` of PAL's 64-GPU experiment (its artifact)."""
    return _pal(
        f"pal-philly-{k}",
        f"Sia-Philly job trace {k} of 8 (160 jobs) from PAL's 64-GPU experiment",
        f"{_PAL_ARTIFACT}/workload-{k}.csv",
        f"pal-philly/workload-{k}.csv",
        ("mtgym.readers.read_philly_trace", "mtgym.generate.pal_philly.PALPhilly"),
        size,
        sha,
        blob,
    )


def _pwa(name: str, folder: str, file: str, what: str) -> DataSource:
    """A cleaned Parallel Workloads Archive log (gzipped SWF), saved under ``swf/``.

    Neither size nor SHA-256 is recorded: fetching one needs ``verify=False``.

    Args:
        name: The source's name without the ``pwa-`` prefix.
        folder: The log's folder on the archive's site (``l_sdsc_sp2``).
        file: The file name (``SDSC-SP2-1998-4.2-cln.swf.gz``).
        what: The machine, as the description names it.
    """
    return DataSource(
        name=f"pwa-{name}",
        description=f"Parallel Workloads Archive log: {what} (SWF, gzip, cleaned version)",
        url=f"{_PWA}/{folder}/{file}",
        licence=_LIC_PWA,
        size_bytes=None,
        sha256=None,
        filename=f"swf/{file}",
        used_by=_USE_SWF,
    )


def _catalogue() -> list[DataSource]:
    """Every known source, in listing order."""
    return [
        *_bftrainer_sources(),
        *_pal_variability_sources(),
        _gavel_source(),
        *_pal_philly_sources(),
        *_swf_sources(),
    ]


def _bftrainer_sources() -> list[DataSource]:
    """BFTrainer/Replayer's Summit trace and job workloads."""
    return [
        _replayer(
            "summit-trace",
            "ndstat-10sdn6-evt.tar.gz",
            1_539_374,
            "3140b3ecf3cd04a3d4acdb31f7200904810c6a3c",
            "Summit idle-node trace, 2021-02-10..24, 4,734 nodes (tarball of a pandas pickle "
            "of 113 MB; untrusted, never unpickle without a restricted unpickler); the node "
            "list is not published separately, it is the pickle's columns",
            _USE_SUMMIT,
        ),
        *_bftrainer_workload(
            "imagenet-1001j",
            "ImageNet-imgps",
            "1001J",
            (66_858, "2180e071c98e690b8eb2cdfcfe690cfe88ad9da4"),
            (42_318, "dba5c6a9286b92611c21ac6012a743e70fd9515f"),
            "ImageNet workload, 1,001 jobs of 7 models",
        ),
        *_bftrainer_workload(
            "hps-shufflenet-1000j",
            "hps-shufflenet",
            "1000J",
            (57_924, "96fd1efff3256c75da1634bad2a91a997f94eeb9"),
            (32_942, "805f25cf3256dc3d8d8a347f5dc5c817edebb490"),
            "HPS workload, 1,000 ShuffleNet jobs",
        ),
        *_bftrainer_workload(
            "hps-shufflenet-10j",
            "hps-shufflenet",
            "10J",
            (1_470, "36f784fc21ce3bc43e8d914de2fa25043a9b455f"),
            (1_153, "4310bd4e468e23069b8be89464c5ee9d251f2b35"),
            "HPS workload, 10 ShuffleNet jobs",
        ),
    ]


def _pal_variability_sources() -> list[DataSource]:
    """PAL's per-GPU variability measurements."""
    return [
        _pal_var(
            "gpu-variability-32gpu",
            "32gpu-variability.csv",
            4_825,
            "cc5cc95e745978ffe9f5b655d77e6fd6c96e39561073c6f037ad78ee38082238",
            "710b69d1096e4dc6896b1a814c84bb74d3272320",
            "ready-made slowdown factors of 32 Frontera GPUs (classes A-D)",
        ),
        _pal_var(
            "gpu-variability-frontera-bert",
            "frontera/frontera-bert-agg.csv",
            187_343,
            "50ce045340ef8aa4c800b405d0a523b427923febb3e26dfccf0bef53ece6d446",
            "14af07707702d17038421aaf05c207c8fa407e4c",
            "BERT on Frontera (Quadro RTX 5000), per-GPU runs",
        ),
        _pal_var(
            "gpu-variability-frontera-pagerank",
            "frontera/frontera-pagerank-agg.csv",
            106_838,
            "5ae4b7d9e409e7335f73c9f3536edeb6a080cb4229953cb6fb76116655edbaf0",
            "2f19252a4edbc271b594e26d3dee345da7ede411",
            "PageRank on Frontera, per-GPU runs",
        ),
        _pal_var(
            "gpu-variability-frontera-resnet",
            "frontera/frontera-resnet-agg.csv",
            183_525,
            "fe3703d99bab0586b272c1aa3976beda646522135053953905f8fb40b02f667a",
            "89e867dcd44e89396cce774454fa99a14a59ce9d",
            "ResNet on Frontera, per-GPU runs",
        ),
        _pal_var(
            "gpu-variability-ls6-resnet",
            "ls6/resnet-ls6-agg.csv",
            18_474,
            "840a9641fbc2d3bb166887c2af0a0940da96936dc0e1c0bb6a4c839a0f37701d",
            "58b52106e8ea498ff88e55f3d509919bb1526d7c",
            "ResNet on Lonestar6 (A100), one row per GPU",
        ),
        _pal_var(
            "gpu-variability-longhorn-bert",
            "sim/bert-longhorn-agg.csv",
            276_824,
            "70ab0041629083483015301827c4b33eae9daeb03b1525a02b2ffed29356a52d",
            "a74175f7c8e243525ef1e91c977754778b3b6111",
            "BERT on Longhorn (V100), per-GPU runs",
        ),
        _pal_var(
            "gpu-variability-longhorn-pagerank",
            "sim/pagerank-longhorn-agg.csv",
            124_174,
            "3bae08e386d6d57d78ddb548d95bb1d112bf1ae2ccafe3886683798bde955709",
            "493a87353d91f1b0ffc8d6d9247495391a4eb9b2",
            "PageRank on Longhorn, per-GPU runs",
        ),
        _pal_var(
            "gpu-variability-longhorn-resnet",
            "sim/resnet-longhorn-agg.csv",
            334_910,
            "050ac0c3049a8b328f601125aef4283aa5a49e9f889723c7bc0912c77ac5ea74",
            "c3e9b9bdba46e6c68a95b9644de3af0efd69a5cd",
            "ResNet on Longhorn, per-GPU runs",
        ),
        _pal_var(
            "gpu-variability-longhorn-sgemm",
            "sim/sgemm-longhorn-agg.csv",
            1_854_786,
            "e0ad9012e69610957a4cc8da177812ce17ccf51ecf1bfd5e8be28808cb354c5b",
            "ad15d3ad504cfaef9d27e8f41ce1d50b4d16fac3",
            "SGEMM on Longhorn, per-GPU runs (uncompressed; shared/data keeps it gzipped)",
        ),
    ]


def _gavel_source() -> DataSource:
    """Gavel's measured throughputs."""
    return DataSource(
        name="gavel-throughputs",
        description="Gavel's measured steps/s of 26 job types on K80/P100/V100, alone "
        "and packed in pairs (scheduler/simulation_throughputs.json)",
        url=f"{_GAVEL}/scheduler/simulation_throughputs.json",
        licence=_LIC_GAVEL,
        size_bytes=1_240_176,
        sha256="17111f7295f03265fd9e5118d7eba31e3dd9d6e50a2e215c13ad3d3f91f74381",
        filename="gavel-throughputs.json",
        used_by=("mtgym.readers.read_gavel_throughputs",),
        git_blob="b8a07356c9ac9ab55c826361d4b8fa219f448ab8",
    )


def _pal_philly_sources() -> list[DataSource]:
    """The eight Sia-Philly traces of PAL's 64-GPU experiment."""
    philly = [
        (4_030, "6ef7d9db14c49d79c98125d4c6961fe540b677da5027a7296a9636cf9dff0941",
         "79b2c2e19a9090cf7c6f5466ed2de331ddd4ee77"),
        (4_039, "d2d94d15d6356148ea9503c17c66a0b66ccee50e900500b9b84c40ae38355657",
         "c0df3b9c76f18f24acf6c71fb67627e99f7bfcd7"),
        (3_999, "97c89e28da7c24c7318af3dca3d023c1a670388f7473ac5fbf152950fe80d8d3",
         "a0230bbc0ab0f28466071ca7070c47384ed41d71"),
        (4_081, "99cfeac04649fc4227563c514f67bcdcdfd6c9c2003f4ae1fc58773981e1378b",
         "0c24400cfa5d148106ee5df34b3fb2cded1b3d41"),
        (4_038, "4057564c81019e6cf1b25455404b5cc47670ddaa91b633b86cf990d845e4c40d",
         "847b391fb3d80c596ba21a8c9ca5f2942f90145d"),
        (4_049, "d6a4721518e9e64289acd7df5aa7a81068253e5dead04a456d86faf710d01559",
         "105cd46161c3b72f41e87cded9714e528654585d"),
        (4_070, "46aa9316820d02d2b17aee923ba168d53fc25217de82ee7732e1cececa1f96e5",
         "874055258936c471bcd97be013c0278b4625445c"),
        (4_055, "3a4a115326b8831279e79b9a69e6a5f28a1c759a96723abc2100ddf57957af01",
         "de4efadae2641a1f7b55e6d35c9b28b9b6758f20"),
    ]  # fmt: skip
    return [_pal_philly(k, *row) for k, row in enumerate(philly, start=1)]


def _swf_sources() -> list[DataSource]:
    """SWF job logs: the Lublin-model log and Parallel Workloads Archive logs."""
    return [
        DataSource(
            name="lublin-256",
            description="Synthetic SWF log from the Lublin-Feitelson model: 10,000 jobs on a "
            "256-node machine (DIR-LAB/deep-batch-scheduler data/lublin_256.swf)",
            url=f"{_DIRLAB}/data/lublin_256.swf",
            licence=_LIC_DIRLAB,
            size_bytes=649_089,
            sha256="a394ab3d81179ebcf645a1cbd593a60b6dff7f11a510e1e6285c45f43310c962",
            filename="swf/lublin_256.swf",
            used_by=_USE_SWF,
            git_blob="987d0c33984e8f6c71134a6156efe6780de027b4",
        ),
        _pwa("sdsc-sp2", "l_sdsc_sp2", "SDSC-SP2-1998-4.2-cln.swf.gz", "SDSC IBM SP2"),
        _pwa("ctc-sp2", "l_ctc_sp2", "CTC-SP2-1996-3.1-cln.swf.gz", "Cornell CTC IBM SP2"),
        _pwa("kth-sp2", "l_kth_sp2", "KTH-SP2-1996-2.1-cln.swf.gz", "KTH (Stockholm) IBM SP2"),
        _pwa("lanl-cm5", "l_lanl_cm5", "LANL-CM5-1994-4.1-cln.swf.gz", "Los Alamos CM-5"),
        _pwa("sdsc-blue", "l_sdsc_blue", "SDSC-BLUE-2000-4.2-cln.swf.gz", "SDSC Blue Horizon"),
        _pwa("hpc2n", "l_hpc2n", "HPC2N-2002-2.2-cln.swf.gz", "HPC2N (Umeå) Linux cluster"),
        _pwa("anl-intrepid", "l_anl_int", "ANL-Intrepid-2009-1.swf.gz", "ANL Intrepid Blue Gene/P"),
    ]  # fmt: skip


#: Every known source, by name (insertion order is the listing order).
SOURCES: dict[str, DataSource] = {s.name: s for s in _catalogue()}


def list_sources() -> list[DataSource]:
    """All known data sources, in listing order."""
    return list(SOURCES.values())


def get_source(name: str) -> DataSource:
    """The source called ``name`` (case and ``_``/``-`` are not significant).

    Args:
        name: A source name, e.g. ``gavel-throughputs`` or ``Gavel_Throughputs``; spaces
            around it are ignored.

    Raises:
        KeyError: unknown name; the message lists the known names.
    """
    if name in SOURCES:
        return SOURCES[name]
    key = name.strip().lower().replace("_", "-")
    for src in SOURCES.values():
        if src.name.lower().replace("_", "-") == key:
            return src
    raise KeyError(f"unknown data source {name!r}; known: {', '.join(SOURCES)}")


def _fmt_size(n: int | None) -> str:
    """A size for the table: bytes below 1,000, then decimal kB/MB/GB; ``unknown`` for None."""
    if n is None:
        return "unknown"
    if n < 1000:
        return f"{n} B"
    if n < 1_000_000:
        return f"{n / 1e3:.1f} kB"
    if n < 1_000_000_000:
        return f"{n / 1e6:.2f} MB"
    return f"{n / 1e9:.2f} GB"


def licence_tag(licence: str) -> str:
    """The short form of a licence text: what comes before the first ``:`` or `` (``.

    ``"MIT (hal-uw/blox-pal LICENSE.txt; ...)"`` gives ``"MIT"``; a text with neither
    separator (or with one only at position 0) is returned whole. ``render_sources``
    groups the full texts by this tag.
    """
    cut = min((i for i in (licence.find(":"), licence.find(" (")) if i > 0), default=len(licence))
    return licence[:cut]


def render_sources(console: Any = None, sources: Iterable[DataSource] | None = None) -> None:
    """Print the sources as a rich table, then the full licence texts.

    Columns: name with its URL beneath (kept whole, folded on narrow terminals), size,
    whether a sha256 is recorded, and the licence's short form.

    Args:
        console: A ``rich.console.Console``; a new one on stdout when None.
        sources: What to list; all of ``SOURCES`` when None.
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    console = console if console is not None else Console()
    rows = list_sources() if sources is None else list(sources)
    table = Table(title=f"mtgym data sources ({len(rows)})", show_lines=True)
    table.add_column("name / URL", overflow="fold", ratio=1)
    table.add_column("size", justify="right", no_wrap=True)
    table.add_column("sha256", justify="center", no_wrap=True)
    table.add_column("licence", max_width=14)
    licences: dict[str, list[str]] = {}
    for s in rows:
        tag = licence_tag(s.licence)
        if s.licence not in licences.setdefault(tag, []):
            licences[tag].append(s.licence)
        name = f"[bold]{escape(s.name)}[/]\n[dim]{escape(s.url)}[/]"
        table.add_row(name, _fmt_size(s.size_bytes), "yes" if s.sha256 else "-", tag)
    console.print(table)
    console.print("Licences:")
    for texts in licences.values():
        for text in texts:
            console.print(f"  - {escape(text)}")


# --------------------------------------------------------------------------------------------
# Downloading
# --------------------------------------------------------------------------------------------


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
