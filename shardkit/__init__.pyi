# The public API: what type checkers and editors see, and (through lazy_loader.attach_stub) the one list
# shardkit/__init__.py loads names from on first use. Relative imports only (lazy_loader reads them),
# each `name as name` so type checkers see a re-export.
from . import (
    compat as compat,
    distributed as distributed,
    executor as executor,
    inspect as inspect,
    maxtext as maxtext,
    multihost as multihost,
    passes as passes,
    sharding as sharding,
)
from .array import (
    Array as Array,
    Shard as Shard,
    asarray as asarray,
    device_get as device_get,
    device_put as device_put,
    make_array_from_callback as make_array_from_callback,
    make_array_from_process_local_data as make_array_from_process_local_data,
    make_array_from_single_device_arrays as make_array_from_single_device_arrays,
)
from .autosharding.api import autoshard as autoshard
from .caching import clear_caches as clear_caches
from .distributed import (
    devices as devices,
    local_devices as local_devices,
    process_count as process_count,
    process_index as process_index,
)
from .inspect import (
    ImpossibleEstimate as ImpossibleEstimate,
    OutOfMemoryError as OutOfMemoryError,
    visualize as visualize,
)
from .lowering import (
    ShapeDtypeStruct as ShapeDtypeStruct,
    with_sharding_constraint as with_sharding_constraint,
)
from .mesh import (
    AbstractMesh as AbstractMesh,
    AxisType as AxisType,
    Mesh as Mesh,
    current_mesh as current_mesh,
    make_mesh as make_mesh,
)
from .partition_spec import (
    UNCONSTRAINED as UNCONSTRAINED,
    P as P,
    PartitionSpec as PartitionSpec,
)

# exactly shardkit.sharding.__all__ (tests/test_layering.py checks)
from .sharding import (
    DuplicateSpecError as DuplicateSpecError,
    GSPMDSharding as GSPMDSharding,
    IndivisibleError as IndivisibleError,
    NamedSharding as NamedSharding,
    PmapSharding as PmapSharding,
    PositionalSharding as PositionalSharding,
    Sharding as Sharding,
    SingleDeviceSharding as SingleDeviceSharding,
)
from .stages import (
    Compiled as Compiled,
    Lowered as Lowered,
    filter_jit as filter_jit,
    jit as jit,
    load as load,
)

__version__: str
__all__: list[str]
