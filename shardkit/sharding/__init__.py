"""The Sharding family: the base (what a kind implements, and the index math it gets) and one module per kind.

Each kind owns its conversions: to the HLO form (``to_hlo``, the one every index map derives from), to the
Shardy form (``to_sdy``), to jax (``to_jax``) and to the device-free key lowering caches on (``abstract_key``);
the base derives equality, hashing, pickling and the memory kind from what a kind declares it is (``_key``).
A new kind is its module plus its name here and in ``shardkit/__init__.pyi``.
``from_hlo`` maps a compiled program's HLO shardings back onto the model, ``from_jax`` jax's shardings, and
``as_sharding`` whatever a user passes where a sharding goes.
"""

from shardkit.sharding.base import (
    IndivisibleError,
    Sharding,
    canonical_shape as canonical_shape,
    index_key as index_key,
)
from shardkit.sharding.convert import (
    as_sharding as as_sharding,
    from_hlo as from_hlo,
    from_jax as from_jax,
    is_sharding_like as is_sharding_like,
    physical_sharding as physical_sharding,
)
from shardkit.sharding.gspmd import GSPMDSharding
from shardkit.sharding.named import DuplicateSpecError, NamedSharding
from shardkit.sharding.pmap import PmapSharding
from shardkit.sharding.positional import PositionalSharding
from shardkit.sharding.single import SingleDeviceSharding

# The kinds and their errors: the package's public names (``shardkit`` re-exports exactly these).
__all__ = [
    "DuplicateSpecError",
    "GSPMDSharding",
    "IndivisibleError",
    "NamedSharding",
    "PmapSharding",
    "PositionalSharding",
    "Sharding",
    "SingleDeviceSharding",
]
