"""The names a user picks from, each list written once: the env's action modes, rewards and
information modes, with their defaults.

The env (reward kernel ids are the indexes; an action mode names its codec's module), its
keyword checks, the scenario schema (``Literal`` enums in the JSON Schema), the CLI and the
scripts all import these; ``mtgym.env.reward`` holds each reward's meaning and kernel,
``mtgym.env.actions`` the action modes' codecs, ``mtgym.sim.view.InfoMode`` the information
modes'.
"""

from __future__ import annotations

#: ``counts``: node count per job slot; ``assign``: the slot of each node; ``delta``:
#: shrink / keep / grow per slot; ``shares``: keep, stop or a level of each job's own range
#: (scale-free). Each is the module of its codec, ``mtgym.env.actions.<name>`` (its
#: ``CODEC``), imported by name: adding a mode is its module and its name here.
ACTION_MODES = ("counts", "assign", "delta", "shares")
#: The modes whose observation adds the scale-free keys (``job_scale``, ``job_shape``,
#: ``global_scale``) and whose agents read the scale-free pooled layout (``agents.pooled``).
SCALE_FREE_MODES = ("shares",)
#: See ``mtgym.env.reward.REWARDS``. The index is the reward kernel's id.
REWARD_NAMES = ("progress", "throughput", "jct", "normalized")
#: What a policy is told about jobs (``mtgym.sim.view.InfoMode``).
INFO_MODES = ("user", "profiled", "oracle")

DEFAULT_ACTION_MODE = "counts"
#: Training accrued over the step in best-node-seconds: the headline metric's integral (a
#: semi-MDP reward), neutral across models (``mtgym.env.reward``).
DEFAULT_REWARD = "normalized"
DEFAULT_INFO_MODE = "user"
