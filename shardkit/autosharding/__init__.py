"""Choosing the layout: ``sk.autoshard(f, *args, target=...)`` (``api.autoshard``) searches the shardings of a
program for a target machine, ranks them with the time and memory models, confirms the best by compiling, and
explains its choice. (The package is not named ``autoshard``: importing it would bind that name on ``shardkit``
over the function.)

- ``space``: what is chosen (meshes, argument groups, shardings); ``program``: the module lowered once and the
  candidates written into it; ``model``: the fast estimate (Shardy's plan of a candidate, read per device and
  timed on the target's links); ``workers``: evaluating candidates in parallel processes; ``search``: the
  descent over moves; ``plan``: the answer (``Plan``) and its reports; ``api``: ``autoshard`` and
  ``autoshard_module``; ``partition``: the ``auto-partition`` pass.

docs/autoshard.md describes the search and how to read a plan. Importing this package imports none of the
modules above (``shardkit-opt`` lists the pass without loading jax); ``autoshard`` and the rest load on use.
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "autoshard": "api",
    "autoshard_module": "api",
    "Plan": "plan",
    "PlannedJit": "plan",
    "CandidateTable": "plan",
    "Explanation": "plan",
    "Confirmed": "plan",
    "Constraint": "plan",
    "Candidate": "search",
    "Choice": "space",
    "MeshShape": "space",
}
__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    if name in _NAMES:
        return getattr(importlib.import_module(f"{__name__}.{_NAMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
