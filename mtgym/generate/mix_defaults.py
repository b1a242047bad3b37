"""The defaults of a Poisson job mix, written once: ``JobMix`` (the generator) and
``MixSpec`` (the scenario schema) both take them from here (no heavy imports, so the schema
stays quick to load).
"""

from __future__ import annotations

from types import MappingProxyType

NUM_JOBS = 30
ARRIVAL_RATE_PER_H = 10.0
START_S = 0.0
#: catalog model -> relative weight
MODELS = MappingProxyType(
    {"resnet50": 3, "resnet18": 2, "transformer": 2, "lm": 1, "recommendation": 1, "cyclegan": 1}
)
MIN_NODES = (1, 1, 2)
MAX_NODES = (4, 8, 16)
WORK_HOURS = (0.5, 2.0)
WORK_REF_NODES = 4
R_UP_S = (17.0, 19.0)  # BFTrainer measured ~18 s
R_DOWN_S = (11.0, 13.0)  # and ~12 s
STARTUP_S = 30.0
CKPT_EVERY_S = 600.0
