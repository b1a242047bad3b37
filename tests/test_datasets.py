"""Tests of mtgym.datasets: the catalogue and the verified downloader.

Every request goes to an http.server started by the test on 127.0.0.1 (port 0); nothing is
downloaded from anywhere else. Each fetch uses a 5 s socket timeout and ~10 ms back-off.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import re
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

import pytest
from rich.console import Console

from mtgym import datasets
from mtgym.core.errors import ConfigError, DataError, MtgymError
from mtgym.datasets import (
    SOURCES,
    TEMP_SUFFIX,
    DataSource,
    DownloadError,
    NoChecksumError,
    fetch,
    get_source,
    list_sources,
    render_sources,
    sha256_file,
)

FAST = {"timeout_s": 5.0, "backoff_s": 0.01, "progress": False}
PAYLOAD = b"job_id,num_gpus\n" + b"".join(b"%d,%d\n" % (i, i % 8 + 1) for i in range(5000))


# --------------------------------------------------------------------------------------------
# A local HTTP server
# --------------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    requests: list[str]
    script: list[int | str]  # answers to give before serving files: an HTTP status or "truncate"


class _Handler(SimpleHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        self.server.requests.append(self.path)
        if self.server.script:
            action = self.server.script.pop(0)
            if action == "truncate":
                self.send_response(200)
                self.send_header("Content-Length", str(len(PAYLOAD) + 1000))
                self.end_headers()
                self.wfile.write(PAYLOAD[:100])
                self.close_connection = True
                return
            self.send_error(int(action))
            return
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@dataclass
class Mirror:
    """A folder served over HTTP on 127.0.0.1."""

    root: Path
    base_url: str
    server: _Server
    requests: list[str] = field(default_factory=list)

    def put(self, src: DataSource, data: bytes) -> Path:
        """Serve ``data`` at the path of ``src.url``."""
        path = self.root / urlsplit(src.url).path.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        return path

    def fail_next(self, *actions: int | str) -> None:
        self.server.script.extend(actions)


@pytest.fixture
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Mirror]:
    for var in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "all_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    root = tmp_path / "served"
    root.mkdir()
    server = _Server(("127.0.0.1", 0), functools.partial(_Handler, directory=str(root)))
    server.requests = []
    server.script = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    host, port = server.server_address[:2]
    try:
        yield Mirror(root, f"http://{host}:{port}", server, server.requests)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def out(tmp_path: Path) -> Path:
    return tmp_path / "data"


def fake_source(data: bytes = PAYLOAD, **changes: object) -> DataSource:
    fields: dict[str, object] = {
        "name": "fake",
        "description": "a test payload",
        "url": "https://example.invalid/some/repo/0123/fake/payload.csv",
        "licence": "test",
        "size_bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "filename": "fake/payload.csv",
        "used_by": ("tests",),
    }
    fields.update(changes)
    return DataSource(**fields)  # type: ignore[arg-type]


def leftovers(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.name.endswith(TEMP_SUFFIX))


# --------------------------------------------------------------------------------------------
# fetch
# --------------------------------------------------------------------------------------------


def test_fetch__downloads_and_verifies_a_payload(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    mirror.put(src, PAYLOAD)
    path = fetch(src, out, base_url=mirror.base_url, **FAST)
    assert path == out / "fake" / "payload.csv"
    assert path.read_bytes() == PAYLOAD
    assert mirror.requests == ["/some/repo/0123/fake/payload.csv"]
    assert leftovers(out) == []


def test_fetch__by_name_from_sources(
    mirror: Mirror, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = fake_source()
    monkeypatch.setitem(SOURCES, src.name, src)
    mirror.put(src, PAYLOAD)
    assert fetch("fake", out, base_url=mirror.base_url + "/", **FAST).read_bytes() == PAYLOAD


def test_fetch__real_entry_lublin_256(mirror: Mirror, out: Path, shared_data: Path) -> None:
    src = SOURCES["lublin-256"]
    mirror.put(src, (shared_data / "swf" / "lublin_256.swf").read_bytes())
    path = fetch("lublin_256", out, base_url=mirror.base_url, **FAST)
    assert path == out / "swf" / "lublin_256.swf"
    assert sha256_file(path) == src.sha256
    assert path.stat().st_size == src.size_bytes
    assert len(mirror.requests) == 1
    assert mirror.requests[0].endswith("/data/lublin_256.swf")


def test_fetch__shows_a_progress_bar_when_asked(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    mirror.put(src, PAYLOAD)
    path = fetch(src, out, base_url=mirror.base_url, timeout_s=5, progress=True)
    assert path.read_bytes() == PAYLOAD


def test_fetch__checksum_mismatch_raises_and_leaves_no_file(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    tampered = PAYLOAD.replace(b"0,1", b"0,9", 1)
    assert len(tampered) == len(PAYLOAD)
    mirror.put(src, tampered)
    with pytest.raises(DataError) as info:
        fetch(src, out, base_url=mirror.base_url, **FAST)
    msg = str(info.value)
    assert str(out / "fake" / "payload.csv") in msg
    assert src.sha256 is not None and src.sha256 in msg
    assert hashlib.sha256(tampered).hexdigest() in msg
    assert not (out / "fake" / "payload.csv").exists()
    assert leftovers(out) == []
    assert len(mirror.requests) == 1  # a wrong digest is not retried


def test_fetch__oversized_body_is_cut_off_and_discarded(mirror: Mirror, out: Path) -> None:
    src = fake_source(size_bytes=1000, sha256=None)
    mirror.put(src, PAYLOAD)
    with pytest.raises(DataError, match="size_bytes"):
        fetch(src, out, base_url=mirror.base_url, verify=False, **FAST)
    assert not (out / "fake" / "payload.csv").exists()
    assert leftovers(out) == []


def test_fetch__404_is_a_clear_error_without_retries(mirror: Mirror, out: Path) -> None:
    src = fake_source()  # nothing served
    with pytest.raises(DownloadError) as info:
        fetch(src, out, base_url=mirror.base_url, retries=3, **FAST)
    assert info.value.status == 404
    assert info.value.attempts == 1
    assert "404" in str(info.value) and "/fake/payload.csv" in str(info.value)
    assert "not retried" in str(info.value)
    assert isinstance(info.value, MtgymError)
    assert mirror.requests == ["/some/repo/0123/fake/payload.csv"]
    assert not (out / "fake" / "payload.csv").exists()


def test_fetch__503_twice_then_success_after_retries(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    mirror.put(src, PAYLOAD)
    mirror.fail_next(503, 503)
    path = fetch(src, out, base_url=mirror.base_url, retries=3, **FAST)
    assert path.read_bytes() == PAYLOAD
    assert len(mirror.requests) == 3
    assert leftovers(out) == []


def test_fetch__gives_up_when_retries_run_out(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    mirror.put(src, PAYLOAD)
    mirror.fail_next(500, 502, 503)
    with pytest.raises(DownloadError) as info:
        fetch(src, out, base_url=mirror.base_url, retries=2, **FAST)
    assert info.value.attempts == 3 and info.value.status == 503
    assert "after 3 attempts" in str(info.value)
    assert len(mirror.requests) == 3
    assert not (out / "fake" / "payload.csv").exists()


def test_fetch__truncated_transfer_is_retried(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    mirror.put(src, PAYLOAD)
    mirror.fail_next("truncate")
    path = fetch(src, out, base_url=mirror.base_url, retries=1, **FAST)
    assert path.read_bytes() == PAYLOAD
    assert len(mirror.requests) == 2
    assert leftovers(out) == []


def test_fetch__connection_refused_is_retried_then_reported(out: Path) -> None:
    with socket.socket() as s:  # a port that nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(DownloadError) as info:
        fetch(fake_source(), out, base_url=f"http://127.0.0.1:{port}", retries=1, **FAST)
    assert info.value.attempts == 2 and info.value.status is None
    assert "connection error" in str(info.value)
    assert not (out / "fake" / "payload.csv").exists()


def test_fetch__existing_correct_file_makes_no_request(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    final = out / "fake" / "payload.csv"
    final.parent.mkdir(parents=True)
    final.write_bytes(PAYLOAD)
    assert fetch(src, out, base_url=mirror.base_url, **FAST) == final
    assert mirror.requests == []


def test_fetch__existing_wrong_file_is_replaced(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    mirror.put(src, PAYLOAD)
    final = out / "fake" / "payload.csv"
    final.parent.mkdir(parents=True)
    final.write_bytes(b"stale")
    assert fetch(src, out, base_url=mirror.base_url, **FAST).read_bytes() == PAYLOAD
    assert len(mirror.requests) == 1


def test_fetch__force_downloads_again(mirror: Mirror, out: Path) -> None:
    src = fake_source()
    mirror.put(src, PAYLOAD)
    fetch(src, out, base_url=mirror.base_url, **FAST)
    fetch(src, out, base_url=mirror.base_url, force=True, **FAST)
    assert len(mirror.requests) == 2


def test_fetch__unknown_name_raises_key_error_listing_names(out: Path) -> None:
    with pytest.raises(KeyError) as info:
        fetch("no-such-data", out, **FAST)
    msg = info.value.args[0]
    assert "no-such-data" in msg
    assert "gavel-throughputs" in msg and "summit-trace" in msg
    assert not out.exists()


@pytest.mark.parametrize("name", ["summit-trace", "pwa-sdsc-sp2"])
def test_fetch__verify_without_known_checksum_is_refused(name: str, out: Path) -> None:
    with pytest.raises(NoChecksumError) as info:
        fetch(name, out, base_url="http://127.0.0.1:9", **FAST)
    msg = str(info.value)
    assert "no sha256 checksum is known" in msg and name in msg
    assert "verify=False" in msg and "--no-verify" in msg
    assert isinstance(info.value, MtgymError)
    assert not out.exists()


def test_fetch__no_verify_downloads_a_source_without_checksum(mirror: Mirror, out: Path) -> None:
    src = fake_source(sha256=None)
    mirror.put(src, PAYLOAD)
    path = fetch(src, out, base_url=mirror.base_url, verify=False, **FAST)
    assert path.read_bytes() == PAYLOAD
    # A second call finds the file (right size) and makes no request.
    assert fetch(src, out, base_url=mirror.base_url, verify=False, **FAST) == path
    assert len(mirror.requests) == 1


def test_fetch__no_verify_still_checks_a_recorded_sha256(mirror: Mirror, out: Path) -> None:
    """``--no-verify`` does what its help says: it accepts a source with no recorded
    checksum; a download that contradicts a recorded one is discarded all the same."""
    src = fake_source(sha256="0" * 64)
    mirror.put(src, PAYLOAD)
    with pytest.raises(DataError, match="sha256"):
        fetch(src, out, base_url=mirror.base_url, verify=False, **FAST)
    assert not (out / "fake" / "payload.csv").exists()
    assert leftovers(out) == []


def test_cli__no_verify_help_says_what_it_does(capsys: pytest.CaptureFixture[str]) -> None:
    from mtgym.cli import main

    with pytest.raises(SystemExit):
        main(["data", "fetch", "--help"])
    helptext = " ".join(capsys.readouterr().out.split())
    assert "accept a source that has no recorded sha256 (a recorded one is still checked)" in (
        helptext
    )


def test_fetch__size_mismatch_with_no_verify_is_still_an_error(mirror: Mirror, out: Path) -> None:
    src = fake_source(sha256=None, size_bytes=len(PAYLOAD) + 1)
    mirror.put(src, PAYLOAD)
    with pytest.raises(DataError, match="size_bytes"):
        fetch(src, out, base_url=mirror.base_url, verify=False, **FAST)
    assert not (out / "fake" / "payload.csv").exists()
    assert leftovers(out) == []


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"base_url": "file:///etc"}, "base_url"),
        ({"retries": -1}, "retries"),
        ({"timeout_s": 0}, "timeout_s"),
    ],
)
def test_fetch__bad_arguments_raise_config_error(kwargs: dict, field: str, out: Path) -> None:
    args = {**FAST, **kwargs}
    with pytest.raises(ConfigError) as info:
        fetch(fake_source(), out, **args)
    assert info.value.field == field


# --------------------------------------------------------------------------------------------
# The catalogue
# --------------------------------------------------------------------------------------------


def test_sources__every_entry_is_complete() -> None:
    assert len(SOURCES) >= 10
    filenames = set()
    for key, src in SOURCES.items():
        assert key == src.name and src.name
        assert src.url.startswith("https://") and urlsplit(src.url).netloc
        assert src.licence.strip() and src.description.strip()
        assert src.used_by
        assert src.size_bytes is None or src.size_bytes > 0
        assert src.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", src.sha256)
        assert not PurePosixPath(src.filename).is_absolute()
        assert ".." not in PurePosixPath(src.filename).parts
        filenames.add(src.filename)
    assert len(filenames) == len(SOURCES)


def test_sources__cover_every_family() -> None:
    names = set(SOURCES)
    assert "summit-trace" in names and "gavel-throughputs" in names and "lublin-256" in names
    assert {f"pal-philly-{k}" for k in range(1, 9)} <= names
    assert sum(n.startswith("gpu-variability-") for n in names) >= 9
    assert sum(n.startswith("bftrainer-") for n in names) >= 2
    pwa = [s for s in SOURCES.values() if s.name.startswith("pwa-")]
    assert len(pwa) >= 4
    for s in pwa:
        assert re.fullmatch(
            r"https://www\.cs\.huji\.ac\.il/labs/parallel/workload/l_[a-z0-9_]+/[\w.-]+\.swf\.gz",
            s.url,
        )
        assert "Feitelson" in s.licence and s.sha256 is None


def test_sources__github_urls_are_pinned_to_commits() -> None:
    for src in SOURCES.values():
        if "github" in src.url:
            assert src.url.startswith("https://raw.githubusercontent.com/")
            assert re.search(r"/[0-9a-f]{40}/", src.url), src.url


def test_sources__unverifiable_entries_have_no_checksum() -> None:
    for name in ("summit-trace", "bftrainer-imagenet-1001j-jbnd", "pwa-kth-sp2"):
        assert SOURCES[name].sha256 is None


def _local_copy(shared: Path, src: DataSource) -> bytes | None:
    plain = shared / PurePosixPath(src.filename)
    if plain.is_file():
        return plain.read_bytes()
    gz = plain.with_name(plain.name + ".gz")
    if gz.is_file():
        return gzip.decompress(gz.read_bytes())
    return None


def test_sources__recorded_digests_match_shared_data(shared_data: Path) -> None:
    checked = []
    for src in SOURCES.values():
        data = _local_copy(shared_data, src)
        if data is None:
            continue
        assert src.sha256 == hashlib.sha256(data).hexdigest(), src.name
        assert src.size_bytes == len(data), src.name
        if src.git_blob is not None:
            blob = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            assert blob == src.git_blob, src.name
        checked.append(src.name)
    # gavel, 9 variability files (sgemm via its gzip), 8 Philly traces, lublin_256
    assert len(checked) == 19, checked


def test_get_source__ignores_case_and_underscores() -> None:
    assert get_source("LUBLIN_256") is SOURCES["lublin-256"]
    assert get_source("gavel_throughputs") is SOURCES["gavel-throughputs"]


def test_list_sources__returns_every_source_in_order() -> None:
    assert [s.name for s in list_sources()] == list(SOURCES)


def test_render_sources__shows_name_size_licence_url() -> None:
    console = Console(record=True, width=250)
    render_sources(console)
    text = console.export_text()
    for src in SOURCES.values():
        assert src.name in text and src.url in text
    assert "1.24 MB" in text and "unknown" in text and "MIT" in text
    assert "Parallel Workloads Archive: free to use with attribution" in text


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"url": "http://example.org/x"}, "url"),
        ({"filename": "../escape.csv"}, "filename"),
        ({"filename": "/abs.csv"}, "filename"),
        ({"sha256": "ABC"}, "sha256"),
        ({"name": ""}, "name"),
    ],
)
def test_data_source__rejects_bad_fields(changes: dict, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        fake_source(**changes)
    assert info.value.field == field


def test_datasets__exports_its_public_api() -> None:
    for name in datasets.__all__:
        assert hasattr(datasets, name)


def test_shared_copy_helper__uses_the_gzip_of_sgemm(shared_data: Path) -> None:
    src = SOURCES["gpu-variability-longhorn-sgemm"]
    assert not (shared_data / src.filename).exists()
    data = _local_copy(shared_data, src)
    assert data is not None and len(data) == 1_854_786
