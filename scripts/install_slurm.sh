#!/usr/bin/env bash
# Install Debian's Slurm (slurmctld, slurmd, client, munge) for the live scavenger tests.
# Idempotent and quiet: does nothing when slurmctld is already there. Without root or apt it
# only says so; the Slurm tests then skip with that reason. Nothing is started here (the
# tests start their own daemons on 127.0.0.1 and stop them by PID).
set -euo pipefail
if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v sinfo >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "install_slurm: Slurm missing and not root with apt-get; the live Slurm tests will skip" >&2
    exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >/dev/null
echo "install_slurm: installed $(slurmctld -V)"
