"""shardkit: meshes and shardings -> StableHLO -> passes -> XLA -> sharded Arrays.

The public API, listed in ``__init__.pyi``; README.md has the tour and docs/design.md the design.

Importing ``shardkit`` imports none of it: each name loads its module on first use (``lazy_loader``, reading
the stub). The command-line tools and ``shardkit.passes`` work on MLIR alone, so they start without jax;
``shardkit.jit`` or an Array brings jax in.
"""

import os

import lazy_loader

# jaxlib's C++ logging reads this when jaxlib first loads, which may now be before jax, whose __init__ sets the
# same default: without it, creating the CPU client prints its INFO lines.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
