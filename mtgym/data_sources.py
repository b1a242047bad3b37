"""The catalogue of public data sets mtgym reads (``SOURCES``): where each file is (GitHub
files pinned to a commit), its licence, size and, where the exact bytes could be checked,
its SHA-256; ``render_sources`` prints it. The verified downloader is ``mtgym.datasets``.

The BFTrainer files are Python pickles. mtgym never unpickles them (it reads the converted
CSVs); load them only with a restricted unpickler.
"""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from mtgym.core.errors import ConfigError


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
