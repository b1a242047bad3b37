"""A non-editable install (a wheel) carries the presets and the shipped agent.

The wheel is built from a copy of the tracked files and installed, without dependencies,
into a fresh virtualenv in a temporary folder; the dependencies come from the test's own
environment through a ``.pth`` line (its ``site-packages`` is a plain path there, so the
editable install's finder is not run). The commands run from a folder outside the checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _run(argv: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # (the wheel's copy only)
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert out.returncode == 0, f"{argv}: {out.stdout[-2000:]}\n{out.stderr[-3000:]}"
    return out


@pytest.mark.slow
def test_wheel__installs_presets_and_agent_and_runs(tmp_path):
    files = subprocess.run(
        ["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.split()
    src = tmp_path / "src"
    for f in files:
        if (REPO / f).is_file():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / f, src / f)
    dist = tmp_path / "dist"
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(dist),
            str(src),
        ],
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("mtgym-*.whl")

    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    site = Path(
        subprocess.run(
            [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(py),
            "install",
            "--no-deps",
            "-q",
            str(wheel),
        ],
        cwd=tmp_path,
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = _run(
        [str(py), "-c", "import mtgym, agents; print(mtgym.__file__, agents.__file__)"], work
    )
    assert str(site) in where.stdout and str(REPO) not in where.stdout

    listed = _run([str(env_dir / "bin" / "mtgym"), "scenario", "list"], work).stdout
    for name in ("default", "polaris", "hetero-mix", "summit-replay"):
        assert name in listed
    run = _run([str(env_dir / "bin" / "mtgym"), "run", "--scenario", "polaris", "--json"], work)
    assert '"samples"' in run.stdout
    shipped = _run(
        [
            str(py),
            "-c",
            "from agents.policy import PRETRAINED; print(sorted(p.name for p in PRETRAINED.iterdir()))",
        ],
        work,
    ).stdout
    assert "model.zip" in shipped and "agent.json" in shipped
