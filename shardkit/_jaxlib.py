"""Every jaxlib runtime symbol shardkit uses (``jaxlib.xla_client`` and jax's private modules), each behind one
small name that says why.

jaxlib makes no API promise for ``xla_client``; keeping every use here means a jaxlib upgrade breaks one file.
The MLIR bindings (``jaxlib.mlir``) are jaxlib's public Python API and are used directly.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Sequence
from typing import Any

import jaxlib
import numpy as np
from jaxlib import _jax, xla_client as xc

# The installed jaxlib release, (major, minor, patch): shardkit supports 0.10.2 through 0.12.x, and the few
# functions below whose private symbol changed between those releases branch on it (docs/dependencies.md has
# the table of every symbol and its form in each release).
JAXLIB_RELEASE: tuple[int, ...] = tuple(int(n) for n in re.findall(r"\d+", jaxlib.__version__)[:3])

# -- HLO shardings: XLA's own description of a layout, the form every shardkit sharding derives from ----------

HloSharding = xc.HloSharding  # tile assignments, their text form and their equality are XLA's, not re-implemented
OpSharding = xc.OpSharding  # the proto form executables report their shardings in
OpShardingType = xc.OpSharding.Type


MESH_AXES_FORM = "{mesh["  # how XLA prints a sharding in its mesh-axes ("V3") form


def tile_form(hlo: HloSharding) -> HloSharding:
    """A sharding in XLA's mesh-axes ("V3") form, ``{mesh['x'=2,'y'=4], [{'x'}, {'y'}]}``, in the tile form shardkit
    reads everywhere, by XLA's own ``v3_to_v2_sharding``: XLA from jaxlib 0.11 (libtpu 0.0.48) may describe a
    compiled program's shardings so, and asking a V3 sharding for its tiles or device count aborts the process."""
    return hlo.v3_to_v2_sharding()


def hlo_from_proto(proto: OpSharding) -> HloSharding:
    """The HloSharding of a proto, in the tile form (``tile_form``)."""
    hlo = xc.HloSharding.from_proto(proto)
    return tile_form(hlo) if repr(hlo).startswith(MESH_AXES_FORM) else hlo


def op_sharding_from_bytes(data: bytes) -> OpSharding:
    """An ``OpSharding`` proto parsed from bytes already checked to be a protobuf message at the wire level
    (``hlo_check.check_wire_format``: this parser reports nothing on garbage)."""
    proto = xc.OpSharding()
    proto.ParseFromString(data)
    return proto


def tuple_sharding(elements: Sequence[HloSharding], shapes: Sequence[tuple[int, ...]]) -> HloSharding:
    """The tuple sharding of a multi-result op (XLA wants the tuple's shape; the element type does not matter)."""
    shape = xc.Shape.tuple_shape([xc.Shape.array_shape(np.dtype("float32"), s) for s in shapes])
    return xc.HloSharding.tuple_sharding(shape, list(elements))


# -- jax's Array, carrying shardkit's shardings -----------------------------------------------------------------


def gspmd_sharding(devices: Sequence[Any], hlo: HloSharding, memory_kind: str | None) -> Any:
    """jaxlib's sharding for an HLO sharding over a device list: the jax form of a shardkit kind that jax has no
    class for (``Sharding.to_jax``)."""
    return xc.GSPMDSharding(xc.DeviceList(tuple(devices)), hlo, memory_kind=memory_kind)


def shard_class() -> type:
    """jax's ``Shard`` (device, index, replica_id, data), the class of ``Array.addressable_shards``' items: jax
    exports it from no public module."""
    from jax._src.array import Shard

    return Shard


def result_handler(aval: Any, sharding: Any) -> Any:
    """jaxlib's handler that turns one output's per-device buffers into jax's Array (``xc.ArrayImpl``) carrying
    ``sharding`` (a shardkit Sharding: jaxlib reads any jax Sharding through its interface).

    jax has no public form of it. On jaxlib 0.10 it takes ``_skip_checks``: the executor built ``sharding`` from
    the executable's own output sharding, so the per-call re-validation (about 10 us per output) would check
    nothing new, and without it a one-device output fails with "Wrong number of shards: 0". From 0.11 the
    argument is gone and the handler makes no such check.
    """
    if JAXLIB_RELEASE < (0, 11):
        return xc.array_result_handler(aval, sharding, committed=True, _skip_checks=True)
    return xc.array_result_handler(aval, sharding, committed=True)


def array_impl(aval: Any, sharding: Any, buffers: Sequence[Any]) -> Any:
    """jax's Array (``xc.ArrayImpl``, committed) over single-device arrays already in the sharding's addressable
    device order.

    jax builds its arrays from pieces only through ``make_array_from_single_device_arrays``, which re-validates
    and re-orders every buffer (about 14 us against 4 us) and whose aval has no weak type; shardkit has already
    run its own checks with its own messages (``_skip_checks``).
    """
    return xc.ArrayImpl(aval, sharding, list(buffers), committed=True, _skip_checks=True)


def per_device_arrays(x: Any) -> list[Any]:
    """The single-device arrays of jax's Array, in its sharding's addressable device order.

    ``jax.Array.addressable_data(i)`` is the public way, one array and one deleted-check per call; the data
    paths need the whole list at once.
    """
    return x._arrays


def put_host_pieces(
    aval: Any, sharding: Any, pieces: Sequence[np.ndarray], devices: Sequence[Any], copy: bool = False
) -> Any:
    """jax's Array from one host piece per device, placed without copying (jax's ``device_put`` copies; jaxlib's
    zero-copy placement aliases 64-byte-aligned host memory on CPU), or, with ``copy``, copied by jaxlib before it
    returns (memory that is not shardkit's own, which a later write by its owner must not reach)."""
    semantics = xc.HostBufferSemantics.IMMUTABLE_ONLY_DURING_CALL if copy else xc.HostBufferSemantics.ZERO_COPY
    return xc.batched_device_put(aval, sharding, list(pieces), list(devices), True, False, semantics)


def collect_garbage() -> None:
    """Drops the Python references jaxlib still holds for device buffers already freed (it defers them, since a
    buffer may be freed on a thread without the GIL; jit calls run this too). Host memory that a zero-copy
    placement aliased is only released then."""
    xc._xla.collect_garbage()


def copy_to_devices(buffers: Sequence[Any], devices: Sequence[Any], shardings: Sequence[Any]) -> list[Any]:
    """Copies each single-device buffer to its device, device to device, in one batch (jax's public
    ``device_put`` goes through its own sharding and dispatch machinery for each)."""
    return xc.batched_copy_array_to_devices_with_sharding(
        list(buffers),
        [xc.DeviceList((d,)) for d in devices],
        list(shardings),
        [xc.ArrayCopySemantics.ALWAYS_COPY] * len(buffers),
    )


def jax_sharding_hlo(sharding: Any, ndim: int) -> tuple[tuple[Any, ...], HloSharding]:
    """(device assignment, HloSharding) of any jax sharding: jax has no public HLO view of its shardings."""
    return tuple(sharding._device_assignment), sharding._to_xla_hlo_sharding(ndim)


# -- compiling and running -----------------------------------------------------------------------------------

CompileOptions = xc.CompileOptions


def device_list(devices: Sequence[Any]) -> Any:
    return xc.DeviceList(tuple(devices))


def auto_spmd_partitioning(options: CompileOptions, mesh_shape: Sequence[int], mesh_ids: Sequence[int]) -> None:
    """Asks XLA to choose the shardings a program leaves open with its own auto-sharding pass (Alpa's solver),
    over a device mesh of ``mesh_shape`` whose positions, row-major, are partitions ``mesh_ids``.

    jax set these build options for its ``AUTO`` shardings and dropped both; they exist only on jaxlib's
    ``ExecutableBuildOptions``. XLA honours them with its GSPMD partitioner only (with Shardy's, XLA aborts the
    process: no auto-partitioner is registered), and only where the compiler has the pass built in.
    """
    build = options.executable_build_options
    build.use_auto_spmd_partitioning = True
    build.auto_spmd_partitioning_mesh_shape = [int(n) for n in mesh_shape]
    build.auto_spmd_partitioning_mesh_ids = [int(i) for i in mesh_ids]


MAX_VIRTUAL_CPU_DEVICES = 4096  # XLA's CPU client makes this many in under a second; the time grows with the count
_VIRTUAL_CPU: dict[int, tuple[Any, ...]] = {}


def virtual_cpu_devices(count: int) -> tuple[Any, ...]:
    """``count`` CPU devices of a second, private CPU client, to compile for more devices than this process's
    backend has (jax makes its CPU device count once, at backend start, from ``XLA_FLAGS``; jaxlib's client
    factory takes the count directly). One client per count, kept for the process; at most
    ``MAX_VIRTUAL_CPU_DEVICES`` devices (callers check, with their own words)."""
    if not 1 <= count <= MAX_VIRTUAL_CPU_DEVICES:
        raise ValueError(f"{count} virtual CPU devices: between 1 and {MAX_VIRTUAL_CPU_DEVICES} can be made.")
    if count not in _VIRTUAL_CPU:
        _VIRTUAL_CPU[count] = tuple(xc.make_cpu_client(num_devices=count).devices())
    return _VIRTUAL_CPU[count]


def are_virtual_cpu_devices(devices: Sequence[Any]) -> bool:
    """Whether ``devices`` are the ones ``virtual_cpu_devices(len(devices))`` made (asked without making any)."""
    return _VIRTUAL_CPU.get(len(devices)) == tuple(devices)


def compile_for(devices: Sequence[Any], module: Any, options: CompileOptions, callbacks: Sequence[Any]) -> Any:
    """The executable of ``module`` for ``devices``: loaded where their client can run it, compile-only (an
    ``Executable``: analyses, no execution) where it is a topology's compile-only client, as libtpu's TPU
    devices on a machine without TPUs are. jaxlib names compile-only clients by type only."""
    client = devices[0].client
    if isinstance(client, _jax.CompileOnlyPyClient):
        extra = {"host_callbacks": list(callbacks)} if callbacks else {}  # not every plugin takes the argument
        return client.compile(module, executable_devices=device_list(devices), compile_options=options, **extra)
    return client.compile_and_load(module, device_list(devices), options, host_callbacks=list(callbacks))


def execute(executable: Any, arguments: Sequence[Any], handlers: Sequence[Any]) -> list[Any]:
    """Runs a loaded executable on global jaxlib arrays and returns one global array per output.

    ``execute_sharded`` plus ``consume_with_handlers`` is jax's own dispatch path below ``jax.jit``: the
    outputs come back as global arrays without a per-device Python step.
    """
    return executable.execute_sharded(arguments).consume_with_handlers(handlers)


def coordination_barrier(name: str, timeout_ms: int) -> None:
    """Waits until every process reaches the barrier ``name`` on jax's coordination service.

    jax exposes the distributed client only as ``jax._src.distributed.global_state.client``; its
    ``wait_at_barrier`` raises after ``timeout_ms`` instead of waiting forever on a missing peer.
    """
    from jax._src import distributed

    distributed.global_state.client.wait_at_barrier(name, timeout_ms)


# -- effects and host callbacks ------------------------------------------------------------------------------


def lowering_extras(lowered: Any) -> tuple[list[Any], list[Any], list[Any], Any, tuple[Any, ...]]:
    """(ordered effects, unordered effects, host callbacks, keepalive, the devices jax chose) of a
    ``jax.stages.Lowered``.

    A module with ``jax.debug.print``/``pure_callback``/``io_callback`` names Python callables by index in its
    custom calls, and XLA needs that list at compile time; ``shard_map`` meshes, jax's own sharding constraints
    and jax's mesh context decide devices the module text does not name. jax keeps all of it, and the effects
    that decide main's token arguments, only in its private lowering (``compile_args``, ``_device_list``).
    """
    args = lowered._lowering.compile_args
    return (
        list(args["ordered_effects"]),
        list(args["unordered_effects"]),
        list(args["host_callbacks"]),
        args.get("keepalive"),
        tuple(lowered._lowering._device_list),
    )


def effect_tokens(effects: Sequence[Any], devices: Sequence[Any]) -> list[Any]:
    """The current token of each ordered effect, placed on ``devices``: shared with jax's own runtime token set,
    so effects stay ordered across jax and shardkit calls (jax keeps it in ``jax._src.dispatch``)."""
    from jax._src import dispatch

    return [dispatch.runtime_tokens.get_token_input(e, list(devices))._buf for e in effects]


def record_effect_tokens(
    effects: Sequence[Any], devices: Sequence[Any], token_buffers: Sequence[Any], runtime_token: Any
) -> None:
    """Records a call's output tokens as jax records its own (``pxla.ExecuteReplicated._handle_token_bufs``): the
    next call of each effect waits on them, and ``jax.effects_barrier()`` waits for this call's callbacks."""
    import jax
    import jax.extend
    from jax._src import dispatch
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    for i, device in enumerate(devices):
        dispatch.runtime_tokens.set_output_runtime_token(device, runtime_token.get_token(i))
    for effect, buffers in zip(effects, token_buffers):
        if len(buffers) == 1:
            token = jax.extend.core.Token(buffers[0])
        else:
            holders = [b.sharding._device_assignment[0] for b in buffers]
            sharding = NamedSharding(Mesh(holders, "x"), PartitionSpec("x"))
            token = jax.extend.core.Token(jax.make_array_from_single_device_arrays((0,), sharding, buffers))
        dispatch.runtime_tokens.set_token_result(effect, token)


def execute_with_tokens(
    executable: Any, arguments: Sequence[Any], ordered: int, handlers: Sequence[Any]
) -> tuple[list[Any], list[Any], Any]:
    """Runs an executable whose first ``ordered`` outputs are effect tokens: (token buffers per effect, outputs,
    the runtime token of the call), as jax's dispatch does for programs with effects or callbacks."""
    results = executable.execute_sharded(arguments, with_tokens=True)
    tokens = results.consume_with_handlers([lambda xs: xs] * ordered, strict=False)
    runtime_token = results.consume_token()
    return tokens, results.consume_with_handlers(handlers), runtime_token


# jaxlib 0.10's runtime crashes the process when a call passes a buffer that it also donates; from 0.11 XLA
# refuses such a call with a ValueError before any partition runs, and the arrays stay intact (measured on 0.11.2
# and 0.12.0.1, under jax.jit too). C++ dispatch checks nothing of the kind itself.
DONATED_TWICE_RAISES = JAXLIB_RELEASE >= (0, 11)


def dispatch_cache(capacity: int) -> Any:
    """A cache of C++ dispatch entries (``cpp_dispatch``'s), for shardkit's functions alone: jax's own default
    caches are shared by every ``jax.jit`` in the process."""
    return _jax.PjitFunctionCache(capacity=capacity)


def cpp_dispatch(
    name: str,
    fun: Callable[..., Any] | None,
    cache_miss: Callable[..., tuple[Any, Any]],
    static_argnums: Sequence[int],
    static_argnames: Sequence[str],
    key: Any,
    shard_arg: Callable[[Any, Any, Any], Any],
    cache: Any = None,
) -> Callable[..., Any]:
    """jaxlib's C++ dispatch, the callable ``jax.jit`` builds, running shardkit's executables: jax's C++ fast
    path takes only its own Arrays, and no public jax function builds one around an executable jax did not
    compile.

    A call flattens its arguments (jax's dispatch pytree registry) and computes a signature: each Array's aval,
    sharding and committedness, other leaves' dtypes and shapes, the static arguments, and jax's context (its
    mesh, x64). The first call of a signature runs ``cache_miss(*args, **kwargs)``, which returns ``(outputs,
    fast_path)``: the call's outputs, and ``fast_path(...)``'s record or None. With a record, later calls of the
    signature run the executable in C++: Array leaves as they are, every other leaf through
    ``shard_arg(leaf, sharding, placement)`` (``placement`` as the record gives it; for a program on one device
    C++ places a leaf without one itself); the outputs are jax's Arrays with the record's shardings. With None,
    every call of the signature runs ``cache_miss``. ``fun`` is what jax calls under ``jax.disable_jit()`` and, with
    ``key``, which entries of ``cache`` the callable shares (None: entries of its own; jaxlib holds ``fun``
    weakly).
    """
    from jax._src import tree_util

    def miss(*args: Any, **kwargs: Any) -> tuple[Any, Any, bool]:
        outputs, fast = cache_miss(*args, **kwargs)
        return outputs, fast, False  # False: keep the entry

    extra = () if cache is None else (cache,)
    registry = tree_util.dispatch_registry
    return _jax.pjit(name, fun, miss, list(static_argnums), list(static_argnames), key, registry, shard_arg, *extra)


def fast_path(
    executable: Any,
    out_tree: Any,
    in_shardings: Sequence[Any],
    out_shardings: Sequence[Any],
    out_avals: Sequence[Any],
    placements: Sequence[Any],
) -> Any:
    """The record ``cpp_dispatch``'s C++ path runs a signature from: the executable, the output tree, each argument
    leaf's sharding (what a leaf that is not an Array is placed as), each output's sharding and aval (jax's
    ``ShapedArray``, with its weak type). Every argument is kept and committed outputs only, in default layouts;
    jax's record (``pxla.MeshExecutableFastpathData``, one form from jax 0.10 through 0.12) also carries constants
    jax hoists out of its programs, which shardkit's have none of.

    ``placements`` holds, per argument leaf, None or what C++ hands ``shard_arg`` with that leaf on every call, also
    on one device, where it would place the leaf itself. The record gives it as the leaf's layout, which C++ passes
    to ``shard_arg`` unread for a leaf that is not an Array (it reads an Array's, and a leaf is an Array in every call
    of a signature or in none)."""
    from jax._src.interpreters import pxla

    n_in, n_out = len(in_shardings), len(out_shardings)
    return pxla.MeshExecutableFastpathData(
        executable,
        out_tree,
        list(in_shardings),
        list(out_shardings),
        list(out_avals),
        [True] * n_out,
        [True] * n_in,
        list(placements),
        [],
    )


def jax_mesh_reader() -> Callable[[], Any]:
    """A function that gives the concrete mesh of jax's context (``jax.set_mesh``), empty where none is set, for
    the caller to keep: every lowering and every steady-state call asks it. ``jax.sharding.get_mesh`` is the public
    way, but it refuses inside a trace (where shardkit's own tracing needs the mesh a bare PartitionSpec names)
    and checks jax's trace state first (about 3 us); this is the value it otherwise returns."""
    from jax._src import mesh

    return mesh.get_concrete_mesh


def jax_lowers_gspmd() -> Any:
    """A context in which jax lowers its own sharding constructs (a host callback's device, its sharding
    constraints, ``shard_map``) in the GSPMD form, as with ``jax_use_shardy_partitioner=False``: jax's private
    per-thread config state is the only switch that leaves the process-wide setting alone."""
    from jax._src import config

    return config.use_shardy_partitioner(False)


def hlo_opcodes() -> Any:
    """jaxlib's ``HloOpcode`` enum, which names each instruction of a compiled ``HloModule``.

    The communication report walks the partitioned module XLA compiled (``executable.hlo_modules()``); jax has
    no public view of that module's structure, and jaxlib exposes the enum only as ``xla_client.hlo``.
    """
    return xc.hlo.HloOpcode


# -- jax.export artifacts ----------------------------------------------------------------------------------


def exported(
    *,
    fun_name: str,
    in_tree: Any,
    in_avals: tuple[Any, ...],
    out_tree: Any,
    out_avals: tuple[Any, ...],
    in_shardings: tuple[Any, ...],
    out_shardings: tuple[Any, ...],
    nr_devices: int,
    platform: str,
    mlir_module_serialized: bytes,
) -> Any:
    """A ``jax.export.Exported`` of a module jax did not lower (single platform, no effects, static shapes).

    ``Exported`` is a public class, but its constructor takes the shardings only through the underscored fields
    ``_in_named_shardings``/``_out_named_shardings`` (NamedShardings over abstract meshes, what
    ``Exported.serialize`` writes since jax 0.9) and ``_get_vjp``; jax offers no other way to make an artifact
    from a module. jax 0.10 also wants ``_has_named_shardings=True``, a field 0.11 removed (named shardings are
    then the only kind).
    """
    import jax

    fields = {f.name for f in dataclasses.fields(jax.export.Exported)}
    flag = {"_has_named_shardings": True} if "_has_named_shardings" in fields else {}
    return jax.export.Exported(
        **flag,
        fun_name=fun_name,
        in_tree=in_tree,
        in_avals=in_avals,
        out_tree=out_tree,
        out_avals=out_avals,
        _in_named_shardings=in_shardings,
        _out_named_shardings=out_shardings,
        in_shardings_hlo=(None,) * len(in_shardings),
        out_shardings_hlo=(None,) * len(out_shardings),
        nr_devices=nr_devices,
        platforms=(platform,),
        ordered_effects=(),
        unordered_effects=(),
        disabled_safety_checks=(),
        mlir_module_serialized=mlir_module_serialized,
        calling_convention_version=jax.export.maximum_supported_calling_convention_version,
        module_kept_var_idx=tuple(range(len(in_avals))),
        uses_global_constants=False,
        _get_vjp=None,
    )


def kept_arguments(lowered: Any, count: int) -> frozenset[int]:
    """The arguments (flat indices) jax's ``Lowered`` kept in its module: ``jax.jit`` drops those the function does
    not use, and says which only in its lowering's private compile arguments (``kept_var_idx``; a
    ``jax.export.Exported`` has the public ``module_kept_var_idx``). All of them where it does not say."""
    kept = getattr(lowered, "_lowering", None)
    kept = None if kept is None else getattr(kept, "compile_args", {}).get("kept_var_idx")
    return frozenset(range(count)) if kept is None else frozenset(kept)


def register_sharding_subclass(cls: type, jax_cls: type) -> None:
    """Makes jax treat ``cls``, a subclass of its sharding class ``jax_cls``, as ``jax_cls`` where it looks the
    class up by exact type: jax names a ``jit`` result after its arguments' shardings through a table keyed by
    ``type(sharding)`` (``pxla._orig_out_sharding_handlers``; without an entry it falls back to a
    GSPMDSharding). There is no public registration."""
    from jax._src.interpreters import pxla

    handler = pxla._orig_out_sharding_handlers.get(jax_cls)
    if handler is not None:
        pxla._orig_out_sharding_handlers[cls] = handler


def wrap_keys(data: Any, dtype: Any) -> Any:
    """The typed PRNG key array of ``dtype`` over its key data, without a copy. jax's public ``wrap_key_data``
    wants the key implementation, which it gives only for a key array (``jax.random.key_impl``); a key dtype
    holds it privately."""
    import jax

    return jax.random.wrap_key_data(data, impl=dtype._impl)


def hlo_text_to_stablehlo(text: str) -> bytes:
    """XLA's HLO text as StableHLO (MLIR bytecode): XLA's HLO parser (``hlo_module``), then XLA's HLO -> StableHLO
    translation. jaxlib exposes both only in its private extension modules."""
    module = hlo_module(text)
    return _jax.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto())


def register_jax_dialects(registry: Any) -> None:
    """Adds the dialects jax's modules use to ``registry`` and registers MLIR's core and Shardy passes
    (``canonicalize``, ``sdy-*``). jax does this through jaxlib's private ``_jax_mlir_ext.register_dialects``
    when ``jax.interpreters.mlir`` is imported; no public jaxlib function does it, and importing jax costs the
    MLIR-only tools most of their start-up time."""
    from jaxlib.mlir._mlir_libs import _jax_mlir_ext

    _jax_mlir_ext.register_dialects(registry)


def mosaic_context() -> Any:
    """An MLIR context that reads the bodies of Mosaic (Pallas TPU) kernels, as a ``tpu_custom_call`` carries them
    in its backend config: jaxlib's ``tpu`` dialect registered (its memory-space attributes), the serialized form's
    other ops (``stable_mosaic.*``) allowed unregistered. jaxlib ships the dialect's Python module only under
    ``jaxlib.mosaic.python``; jax registers it the same way (``jax._src.tpu_custom_call``)."""
    from jaxlib.mlir import ir
    from jaxlib.mosaic.python import tpu

    context = ir.Context()
    tpu.register_dialect(context)
    context.allow_unregistered_dialects = True
    return context


def hlo_module(text: str) -> Any:
    """XLA's ``HloModule`` of HLO text (a compiled program's ``as_text()``, kept), as ``hlo_modules()`` gives a
    compiled one; XLA's HLO parser is reachable only through ``xla_client.hlo``.

    A scheduled module's header says ``is_scheduled=true``, and XLA's parser then rebuilds its schedule from the
    printed order with a CHECK that ends the process where that order puts a ``call`` before its operand, as XLA's
    own printer can (MaxText 0.2.5's 32B step for a v5p slice): the flag is left out, and the instructions keep the
    printed order, which is the schedule's."""
    return xc.hlo.hlo_module_from_text(re.sub(r"^(HloModule [^\n]*?), is_scheduled=true", r"\1", text, count=1))
