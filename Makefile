# Two commands do all the set-up on a fresh machine: `make run` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run test lint bench bench-vec datasets clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	# torch pinned to the CPU build in the same command: an unpinned torch pulls CUDA.
	$(BIN)/python -m pip install --quiet "torch==2.13.0" -e ".[dev,ray,offline]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/mtgym evaluate --scenario default --seeds 2 --out runs/default

test: $(STAMP)
	bash scripts/install_slurm.sh
	$(BIN)/ruff check mtgym baselines agents tests scripts examples
	# root with apt (CI): Slurm was installed above, so its tests must run, not skip
	MTGYM_REQUIRE_SLURM=$$([ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && echo 1 || echo 0) \
		$(BIN)/python -m pytest -q -n 2 -m "not serial and not benchmark"
	# tests that measure real scaling run alone, with the cores to themselves
	$(BIN)/python -m pytest -q -m serial

lint: $(STAMP)
	$(BIN)/ruff check mtgym baselines agents tests scripts examples
	$(BIN)/ruff format --check mtgym baselines agents tests scripts examples
	# type check mtgym/core, sim, env, policy and baselines ([tool.mypy] in pyproject.toml)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python scripts/bench_sim.py
	$(BIN)/python scripts/bench_vec.py

# the batched env against a loop of single envs and CartPole (env and PPO steps/s)
bench-vec: $(STAMP)
	$(BIN)/python scripts/bench_vec.py

# the offline-RL standard set of the train split (docs/offline.md): about 10 GiB in data/minari
datasets: $(STAMP)
	$(BIN)/mtgym dataset standard --scenario default-family summit-manyjobs-train \
		--episodes 100 4 --workers 2 --root data/minari

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
