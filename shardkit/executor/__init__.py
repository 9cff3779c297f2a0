"""Executor: compile a lowered module through XLA for its devices, then call it on sharded arrays.

- ``compile``: jaxlib client compile (Shardy or GSPMD partitioner, device assignment always given).
- ``cache``: the opt-in persistent compilation cache (``set_cache_dir`` / ``$SHARDKIT_COMPILATION_CACHE_DIR``).
- ``arguments``: flattening a call, its call key, the checks each argument leaf passes before XLA sees it.
- ``compiled``: ``Compiled``, built once per executable: argument handlers, result handlers, the call.
- ``targets``: machines to compile for that are not at hand (TPU slices through libtpu, ``cpu:N``).
- ``reshard``: resharding an Array by a compiled program (installed as ``shardkit.array``'s device reshard).
"""

from shardkit.executor.cache import cache_dir, set_cache_dir
from shardkit.executor.compile import compile_lowered, compile_options
from shardkit.executor.compiled import Compiled
from shardkit.executor.reshard import reshard_on_devices
from shardkit.executor.targets import Target, bind as bind_target, target

__all__ = [
    "Compiled",
    "Target",
    "bind_target",
    "cache_dir",
    "compile_lowered",
    "compile_options",
    "reshard_on_devices",
    "set_cache_dir",
    "target",
]
