"""StableHLO that shardkit did not lower becomes a ``LoweredModule``: parsed, read and bound to devices.

Sources: MLIR text, MLIR bytecode, a StableHLO portable artifact (VHLO bytecode, what ``jax.export`` stores),
XLA's HLO text (``dialects.hlo_text``), a ``jax.export.Exported`` or its serialized bytes, or a file holding any
of these. Shardings are read from
``@main``'s arguments and results in either form: ``sdy.sharding`` over ``sdy.mesh`` symbols (or inlined
meshes, ``device_ids`` included) or GSPMD ``mhlo.sharding`` strings; a value with neither, or with open
(``{?}``) dimensions, is left to the compiler. Everything inside ``@main`` (``sdy.manual_computation``,
constraints, reshards, collectives) is the compiler's business and is passed through untouched.

Binding. A module names no devices, only partitions (``mhlo.num_partitions``, else its meshes' size or the
count XLA takes its ``mhlo.sharding``s over: ``_num_partitions``), so the device assignment is chosen here: the
first ``num_partitions`` devices in order by default, a given device list, or a given ``Mesh`` of the same axes
as one of the module's meshes (whose ``device_ids``, if any, say which partition each mesh position is).

``jax.export`` and ``jax.jit`` drop arguments the function does not use (an export's ``module_kept_var_idx``, a
jax ``Lowered``'s kept arguments); loading either object puts them back into ``@main``, so the loaded program takes
the same arguments (in the same tree) as the function, and gives typed PRNG key outputs back as key arrays. Their
bare text says neither: a call with the function's arguments then says how many ``@main`` takes and why.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Sequence
from typing import Any, NamedTuple

import jax
import jax.extend
from jax.interpreters import mlir as jax_mlir
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo

from shardkit import _jaxlib
from shardkit._jaxlib import HloSharding
from shardkit.dialects import context, copy_module, diagnostics, dtypes, irx, mhlo, parsing
from shardkit.dialects.sdy import SdyMesh, SdyTensorSharding, hlo_to_sdy, symbol_ref
from shardkit.lowering.lower import LoweredModule
from shardkit.lowering.types import ShapeDtypeStruct, is_key, physical
from shardkit.mesh import AbstractMesh, Mesh, mesh_from_jax
from shardkit.partition_spec import PartitionSpec
from shardkit.passes import isolation
from shardkit.sharding import NamedSharding, Sharding, from_hlo

Device = Any
Source = str | bytes | bytearray | memoryview | os.PathLike | jax.export.Exported | jax.stages.Lowered | ir.Module

_MLIR_MAGIC = b"ML\xefR"  # every MLIR bytecode file; a portable artifact's producer is "StableHLO_v<version>"
_DONATION_ATTRS = ("tf.aliasing_output", "jax.buffer_donor")
_ROUND_TRIP_MESHES = "xla.sdy.meshes"  # Shardy attributes as XLA's round trip stores them (older jax exports)


class LoadError(ValueError):
    """A module that cannot be loaded; the message says what was found and what shardkit takes."""


# -- parsing -----------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Signature:
    """What jax knows of a program that its module does not say: the arguments' and results' trees and avals (typed
    PRNG keys as keys), and which arguments the module kept (jax drops the unused)."""

    in_tree: Any
    in_avals: tuple[Any, ...]
    out_tree: Any
    out_avals: tuple[Any, ...]
    kept: tuple[int, ...]

    @classmethod
    def of_exported(cls, e: jax.export.Exported) -> _Signature:
        return cls(e.in_tree, tuple(e.in_avals), e.out_tree, tuple(e.out_avals), tuple(e.module_kept_var_idx))

    @classmethod
    def of_lowered(cls, lowered: Any) -> _Signature:
        """jax's ``Lowered``: its public trees, argument info and output info, and its kept arguments."""
        in_avals = tuple(a._aval if hasattr(a, "_aval") else a for a in jax.tree_util.tree_leaves(lowered.args_info))
        out_avals = tuple(jax.tree_util.tree_leaves(lowered.out_info))
        kept = tuple(sorted(_jaxlib.kept_arguments(lowered, len(in_avals))))
        return cls(lowered.in_tree, in_avals, lowered.out_tree, out_avals, kept)


@dataclasses.dataclass(frozen=True)
class _Parsed:
    module: ir.Module
    name: str
    where: str  # for errors: the file, <string> or <bytes>
    exported: jax.export.Exported | None = None
    signature: _Signature | None = None


def _parse(source: Source, allow_unregistered: bool = False) -> _Parsed:
    if isinstance(source, ir.Module):
        return _Parsed(copy_module(source), "module", "<module>")
    if isinstance(source, jax.export.Exported):
        module = _deserialize_artifact(source.mlir_module_serialized)
        return _Parsed(module, source.fun_name, source.fun_name, source, _Signature.of_exported(source))
    if isinstance(source, jax.stages.Lowered):
        module = copy_module(source.compiler_ir("stablehlo"))
        attrs = module.operation.attributes
        name = ir.StringAttr(attrs["sym_name"]).value if "sym_name" in attrs else "main"
        return _Parsed(module, name, f"<jax Lowered {name}>", signature=_Signature.of_lowered(source))
    if isinstance(source, jax.stages.Compiled):
        raise TypeError(
            "load takes jax's Lowered, not its Compiled: a Compiled holds XLA's optimized program for each device, "
            "not the StableHLO it was compiled from. Load jax.jit(f).lower(...) (or jax.export.export(...)) instead."
        )
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _parse_bytes(bytes(source), "<bytes>", allow_unregistered)
    if isinstance(source, os.PathLike) or (isinstance(source, str) and "{" not in source):
        path = os.fspath(source)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise LoadError(f"cannot read '{path}': {e.strerror}") from None
        return _parse_bytes(data, path, allow_unregistered, path)
    if isinstance(source, str):
        return _parse_text(source, "<string>", allow_unregistered)
    raise TypeError(
        "load takes MLIR text, bytes, a path, an ir.Module, a jax.export.Exported or jax's Lowered, got "
        f"{type(source).__name__}: "
        f"{source!r:.80}."
    )


def _parse_bytes(data: bytes, where: str, allow_unregistered: bool = False, path: str | None = None) -> _Parsed:
    if data.startswith(_MLIR_MAGIC):
        if b"StableHLO_v" in data[:32]:  # the producer string follows the magic and a version byte
            return _Parsed(_deserialize_artifact(data), _stem(where), where)
        return _parse_text(data, where, allow_unregistered, path)
    if b"\x00" not in data:
        try:
            return _parse_text(data.decode("utf-8"), where, allow_unregistered, path)
        except UnicodeDecodeError:
            pass
    try:
        exported = jax.export.deserialize(bytearray(data))
    except ImportError as e:
        raise LoadError(f"{where} looks like a serialized jax.export artifact, but reading it needs {e}") from None
    except Exception:  # the flatbuffer reader fails in many ways on bytes that are no artifact
        raise LoadError(
            f"{where} is not MLIR text, MLIR or StableHLO bytecode, nor a serialized jax.export.Exported."
        ) from None
    module = _deserialize_artifact(exported.mlir_module_serialized)
    return _Parsed(module, exported.fun_name, where, exported, _Signature.of_exported(exported))


def _parse_text(text: str | bytes, where: str, allow_unregistered: bool = False, path: str | None = None) -> _Parsed:
    """``text`` (MLIR text or bytecode, XLA's HLO text; ``path``: the file it is the whole of, whose name its
    locations then carry) parsed as the tools parse it: in the isolation worker where parsing may crash."""
    ctx = context()
    try:
        ctx.allow_unregistered_dialects = allow_unregistered
        module, found = isolation.parse(parsing.Input(text, where, path=path), ctx)
        if module is not None and allow_unregistered:
            _drop_foreign(module, where)
    finally:
        ctx.allow_unregistered_dialects = False
    if module is None:
        message = "\n".join(str(d) for d in found if d.severity == "error")
        if "unregistered dialect" in message:
            message += (
                " (sk.load(..., allow_unregistered=True), shardkit-run --allow-unregistered-dialect, drops the "
                "attributes of dialects XLA does not know)"
            )
        raise LoadError(message)
    return _Parsed(module, _stem(where), where)


def _drop_foreign(module: ir.Module, where: str) -> None:
    """Removes every attribute that holds another frontend's dialect attribute (tt-mlir's
    ``#ttcore.argument_type<...>`` and the like), which XLA cannot take, and warns naming them; an op of such a
    dialect computes something, so it is a LoadError instead."""
    ctx = module.context
    dropped: list[str] = []

    def foreign(attr: ir.Attribute) -> bool:
        if isinstance(attr, ir.OpaqueAttr):
            return True
        if isinstance(attr, ir.DictAttr):
            return any(foreign(attr[i].attr) for i in range(len(attr)))
        if isinstance(attr, ir.ArrayAttr):
            return any(foreign(a) for a in attr)
        return False

    def clean(attrs: dict[str, ir.Attribute], what: str) -> dict[str, ir.Attribute]:
        kept = {}
        for key, value in attrs.items():
            if foreign(value):
                dropped.append(f"{key} on {what}")
            else:
                kept[key] = value
        return kept

    for op in irx.ops(module):
        if not ctx.is_registered_operation(op.name):
            raise LoadError(
                f"{_at(where, op)}: '{op.name}' is an op of a dialect XLA does not know; only attributes of such "
                "dialects can be dropped."
            )
        label = "the module" if op.name == "builtin.module" else f"'{op.name}'"
        if op.name == "func.func":
            label = f"{symbol_ref(ir.StringAttr(op.attributes['sym_name']).value)}"
            for kind, noun in (("arg", "argument"), ("res", "result")):
                per_value = irx.value_attrs(op, kind)
                cleaned = [clean(d, f"{noun} {i} of {label}") for i, d in enumerate(per_value)]
                if cleaned != per_value:
                    with ctx:
                        irx.set_value_attrs(op, kind, cleaned)
        names = [op.attributes[i].name for i in range(len(op.attributes))]
        names = [n for n in names if n not in ("arg_attrs", "res_attrs")]
        for name in names:
            if foreign(op.attributes[name]):
                dropped.append(f"{name} on {label}")
                del op.attributes[name]
    if dropped:
        warnings.warn(f"{where}: dropped what XLA cannot take: {', '.join(dropped)}", stacklevel=4)


def _deserialize_artifact(data: bytes) -> ir.Module:
    try:
        return jax.extend.mlir.deserialize_portable_artifact(data, context=context())
    except Exception as e:  # jaxlib's own error types
        raise LoadError(f"cannot read the StableHLO portable artifact: {diagnostics.clause(e)}") from None


def _stem(where: str) -> str:
    return "main" if where.startswith("<") else os.path.splitext(os.path.basename(where))[0]


# -- types --------------------------------------------------------------------------------------------------


def _aval(type_: ir.Type, what: str) -> ShapeDtypeStruct:
    if not isinstance(type_, ir.RankedTensorType):
        raise LoadError(f"{what} has type {type_}; shardkit loads programs whose arguments and results are tensors.")
    if not type_.has_static_shape:
        raise LoadError(
            f"{what} has the dynamic type {type_}: shape-polymorphic programs need their shapes refined first."
        )
    element = dtypes.BY_MLIR.get(str(type_.element_type))
    if element is None:
        raise LoadError(f"{what} has element type {type_.element_type}, which has no numpy dtype.")
    return ShapeDtypeStruct(tuple(type_.shape), element.dtype)


def _at(where: str, op: ir.Operation) -> str:
    """Where ``op`` is in the input named ``where`` (its line and column), as errors name it."""
    _, line, col = diagnostics.op_position(op)
    return diagnostics.position(where, line, col)


def _pick(module: ir.Module, index: int | None, where: str) -> ir.Module:
    """The ``index``-th of the top-level modules a file holds (MLIR wraps several in one), or the module itself."""
    if index is not None and (isinstance(index, bool) or not isinstance(index, int)):
        raise TypeError(f"module must be an int (which of a file's top-level modules), got {index!r}.")
    inner = list(module.body.operations)
    if len(inner) < 2 or any(op.operation.name != "builtin.module" for op in inner):
        if index not in (None, 0):
            raise LoadError(f"{where} holds one module, so module={index} names none.")
        return module
    if index is None:
        raise LoadError(
            f"{where} holds {len(inner)} top-level modules: pick one with module=INDEX (shardkit-run --module "
            f"INDEX), 0..{len(inner) - 1}."
        )
    if not 0 <= index < len(inner):
        raise LoadError(f"{where} holds {len(inner)} top-level modules, so module={index} names none.")
    return ir.Module.parse(inner[index].operation.get_asm(enable_debug_info=True), module.context)


def _entry(module: ir.Module, entry: str | None, where: str) -> ir.OpView:
    """The function the program runs, as @main (XLA's entry): ``entry`` renamed so, with its uses (a function
    already named @main moves aside), or @main itself; LoadError listing the public functions otherwise."""
    if entry is not None and not isinstance(entry, str):
        raise TypeError(f"entry must be a function name (str), got {entry!r}.")
    funcs = {ir.StringAttr(op.attributes["sym_name"]).value: op for op in irx.ops(module, "func.func")}
    public = [symbol_ref(n) for n, op in funcs.items() if "sym_visibility" not in op.attributes]
    name = "main" if entry is None else entry
    if name not in funcs:
        listed = ", ".join(public) or "none"
        pick = "" if entry is not None else "; pick one with entry=NAME (shardkit-run --entry NAME)"
        raise LoadError(f"{where} has no function {symbol_ref(name)} to run; its public functions: {listed}{pick}.")
    if name != "main":
        with module.context:
            if "main" in funcs:
                aside = next(f"main_{i}" for i in range(len(funcs) + 1) if f"main_{i}" not in funcs)
                _rename(module, funcs["main"], "main", aside)
            _rename(module, funcs[name], name, "main")
    return ir.SymbolTable(module.operation)["main"]


def _rename(module: ir.Module, func: ir.Operation, old: str, new: str) -> None:
    ir.SymbolTable.replace_all_symbol_uses(old, new, module.operation)
    ir.SymbolTable.set_symbol_name(func, new)


# -- devices -----------------------------------------------------------------------------------------------


class _HloSite(NamedTuple):
    """An ``mhlo.sharding`` that says something, and the site that holds it."""

    hlo: HloSharding
    site: irx.Site

    def at(self, where: str) -> str:
        return f"{_site_at(where, self.site)} ({self.hlo})"


def _partitions_asked(hlo: HloSharding) -> list[tuple[int, bool]]:
    """(devices, tiled) for each piece of ``hlo`` that names devices: a tiled piece names its tile assignment's
    (XLA takes it only over exactly that many partitions), a maximal one its device and those below it.
    Replicated, manual, unknown and unreduced pieces name none, nor does a tiling over one device; a tuple names
    what its elements name (asking a tuple itself aborts)."""
    asked = []
    for piece in map(_as_xla_reads, hlo.tuple_elements() or [hlo]):
        if piece.is_replicated() or piece.is_manual() or piece.is_unknown() or piece.is_unreduced():
            continue
        if piece.is_maximal():
            asked.append((piece.tile_assignment_devices()[0] + 1, False))
        else:
            asked.append((piece.num_devices(), True))
    return asked


def _as_xla_reads(hlo: HloSharding) -> HloSharding:
    """``hlo`` as XLA reads it: a tiling over one device is replicated (XLA takes it over any partition count and
    every partition holds the whole value)."""
    if hlo.tuple_elements() or not hlo.is_tiled() or hlo.subgroup_types() or hlo.num_devices() != 1:
        return hlo
    return HloSharding.replicate()


def _num_partitions(
    module: ir.Module,
    name: str,
    main: ir.OpView,
    meshes: dict[str, SdyMesh],
    hlo: Sequence[_HloSite],
    where: str,
    least: int = 1,
) -> int:
    """``mhlo.num_partitions``, else the count XLA takes the module's meshes and HLO shardings over (those of the
    functions XLA compiles: ``_reached``), else ``least`` (a ``jax.export`` artifact's ``nr_devices``, as jax
    reads one whose module does not say, else 1).

    XLA's verifier (found compiling through jaxlib for every count) takes a tiled sharding only over exactly its
    devices, so tiled shardings (and meshes) fix the count, and two counts are a LoadError, as XLA takes neither
    partitioned. Without them, the highest maximal device sets it, or ``least`` if more. A maximal device beyond a
    fixed count is left to XLA: it refuses one on an op, and takes one in a while loop's own tuple sharding."""
    replicas = irx.module_int(module, irx.NUM_REPLICAS)
    if replicas not in (None, 1):
        raise LoadError(f"{name} has mhlo.num_replicas = {replicas}; shardkit runs SPMD programs of one replica.")
    partitions = irx.module_int(module, irx.NUM_PARTITIONS)
    sized = {f"sdy mesh {symbol_ref(n)} {m.body}": m.size for n, m in meshes.items() if m.axes}
    if partitions is None:
        reached = _reached(module, main) if hlo else set()
        kept = [s for s in hlo if (func := irx.function_of(s.site.op)) is not None and irx.symbol_name(func) in reached]
        asked = [(n, tiled, s) for s in kept for n, tiled in _partitions_asked(s.hlo)]
        tiled = [(n, s) for n, is_tiled, s in asked if is_tiled]
        for n, s in tiled[1:]:
            if n != tiled[0][0]:
                raise LoadError(
                    f"{s.at(where)} tiles {n} devices, but {tiled[0][1].at(where)} tiles {tiled[0][0]}: XLA "
                    "partitions a program over one device count, and a tiled sharding must cover all of it."
                )
        fixed = [*sized.values(), *(n for n, _ in tiled[:1])]
        partitions = max(fixed or [*(n for n, _, _ in asked), least])
    for what, size in sized.items():
        if size != partitions:
            raise LoadError(f"{what} has {size} devices, but {name} runs on {partitions} partitions.")
    return partitions


def _bind(
    name: str, n: int, meshes: dict[str, SdyMesh], mesh: Any, devices: Sequence[Device] | None
) -> tuple[tuple[Device, ...], dict[str, Mesh], Mesh | None]:
    """(device assignment, the Mesh of each sdy mesh symbol, the user's mesh or None)."""
    if mesh is not None and devices is not None:
        raise ValueError("load takes a mesh or a device list, not both.")
    if mesh is not None:
        if isinstance(mesh, (jax.sharding.Mesh, jax.sharding.AbstractMesh)):
            mesh = mesh_from_jax(mesh)
        if not isinstance(mesh, Mesh):
            raise TypeError(f"mesh must be a concrete Mesh (shardkit's or jax's), got {mesh!r}.")
        match = next((s for s, m in meshes.items() if m.axes == mesh.shape_tuple), None)
        shapes = ", ".join(f"{symbol_ref(s)} {m.body}" for s, m in meshes.items()) or f"no mesh, {n} partitions"
        if match is None and (meshes or mesh.size != n):
            raise ValueError(f"mesh {mesh.to_sdy().body} does not match the module {name}'s mesh: {shapes}.")
        order = meshes[match].device_ids if match is not None else None
        assignment: list[Device] = list(mesh.flat_devices)
        if order is not None:
            for position, device in zip(order, mesh.flat_devices):
                assignment[position] = device
        bound = _bind_meshes(meshes, tuple(assignment))
        if match is not None:
            bound[match] = mesh
        return tuple(assignment), bound, mesh
    if devices is not None:
        devices = tuple(devices)
        if len(devices) != n or len(set(devices)) != n:
            raise ValueError(f"{name} runs on {n} partitions, but devices holds {len(devices)} distinct devices.")
    else:
        available = jax.devices()
        if n > max(len(available), _jaxlib.MAX_VIRTUAL_CPU_DEVICES):
            shapes = ", ".join(f"{symbol_ref(s)} {m.body}" for s, m in meshes.items() if m.axes) or f"{n} partitions"
            raise ValueError(
                f"{name} needs {n} devices ({shapes}): more than the {len(available)} this process has and the "
                f"{_jaxlib.MAX_VIRTUAL_CPU_DEVICES} virtual CPU devices shardkit compiles for."
            )
        devices = tuple(available[:n]) if n <= len(available) else _jaxlib.virtual_cpu_devices(n)
    return devices, _bind_meshes(meshes, devices), None


def virtual_target(devices: Sequence[Device]) -> str | None:
    """``cpu:N`` where ``devices`` are the virtual CPU devices a program needing more devices than this process
    has is bound to (it compiles for them; it cannot run), else None."""
    return f"cpu:{len(devices)}" if _jaxlib.are_virtual_cpu_devices(devices) else None


def _bind_meshes(meshes: dict[str, SdyMesh], devices: tuple[Device, ...]) -> dict[str, Mesh]:
    return {s: Mesh.from_sdy(m, devices) for s, m in meshes.items() if m.axes and m.size == len(devices)}


# -- shardings and donation ----------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Binding:
    """What reading a module's shardings needs: its meshes, the devices, and the Meshes bound to them."""

    meshes: dict[str, SdyMesh]
    devices: tuple[Device, ...]
    bound: dict[str, Mesh]
    mesh: Mesh | AbstractMesh | None

    def sharding(self, attrs: dict[str, ir.Attribute], ndim: int, what: str) -> Sharding | None:
        """The sharding of one value of @main; None where the compiler chooses."""
        try:
            if irx.SDY_SHARDING in attrs:
                return self._sdy(SdyTensorSharding.from_attr(attrs[irx.SDY_SHARDING]), ndim)
            hlo = mhlo.read(attrs[irx.MHLO_SHARDING]) if irx.MHLO_SHARDING in attrs else None
            if hlo is not None:  # the empty string is no sharding, as XLA reads it
                return from_hlo(_as_xla_reads(hlo), self.devices, self.mesh, ndim)
        except ValueError as e:
            raise LoadError(f"{what}: {diagnostics.clause(e)}.") from None
        return None

    def _sdy(self, tensor: SdyTensorSharding, ndim: int) -> Sharding | None:
        if tensor.open_dims:
            return None
        if isinstance(tensor.mesh, SdyMesh):
            mesh, bound = tensor.mesh, _bind_meshes({"": tensor.mesh}, self.devices).get("")
        else:  # the verifier checked that the symbol exists
            mesh, bound = self.meshes[tensor.mesh], self.bound.get(tensor.mesh)
        if len(tensor.dims) != ndim:
            raise ValueError(f"{tensor} has {len(tensor.dims)} dimensions for a value of rank {ndim}")
        if bound is not None:
            try:
                return NamedSharding.from_sdy(tensor, bound)
            except ValueError:  # sub-axes, priorities: no PartitionSpec, but an HLO sharding
                pass
        return from_hlo(tensor.to_hlo(mesh), self.devices, None, ndim)


def _read(module: ir.Module, name: str, binding: _Binding, main: ir.OpView):
    """(in avals, out avals, in shardings, out shardings, donated) of @main."""
    out = []
    for kind, label in (("arg", "argument"), ("res", "result")):
        avals, shardings = [], []
        for i, (attrs, t) in enumerate(zip(irx.value_attrs(main, kind), irx.value_types(main, kind))):
            what = f"{label} {i} of {name}'s @main"
            aval = _aval(t, what)
            avals.append(aval)
            shardings.append(binding.sharding(attrs, aval.ndim, what))
        out += [tuple(avals), tuple(shardings)]
    donated = tuple(any(k in attrs for k in _DONATION_ATTRS) for attrs in irx.value_attrs(main, "arg"))
    in_avals, in_shardings, out_avals, out_shardings = out
    return in_avals, out_avals, in_shardings, out_shardings, donated


# -- jax.export ----------------------------------------------------------------------------------------------


def _check_exported(exported: jax.export.Exported, devices: tuple[Device, ...]) -> None:
    name = exported.fun_name
    if len(exported.platforms) != 1:
        raise LoadError(
            f"{name} was exported for several platforms {exported.platforms}; export it for one to load it."
        )
    platform = devices[0].platform
    if platform not in exported.platforms and not (platform == "gpu" and exported.platforms[0] in ("cuda", "rocm")):
        raise LoadError(f"{name} was exported for {exported.platforms[0]}, but the devices are {platform} devices.")
    if exported.uses_global_constants or any(not all(isinstance(d, int) for d in a.shape) for a in exported.in_avals):
        raise LoadError(f"{name} was exported with symbolic shapes; shardkit loads programs of static shapes.")
    if exported.ordered_effects:
        raise LoadError(f"{name} has ordered effects {exported.ordered_effects} (tokens); shardkit does not run them.")


def _restore_dropped(module: ir.Module, main: ir.OpView, signature: _Signature, name: str) -> None:
    """Gives @main back the arguments jax dropped as unused (``_Signature.kept``), so it takes every argument of
    the function."""
    kept = signature.kept
    if len(kept) == len(signature.in_avals):
        return
    if len(kept) != len(main.regions[0].blocks[0].arguments):
        raise LoadError(
            f"{name}'s @main takes {len(main.regions[0].blocks[0].arguments)} arguments, but jax kept {len(kept)} of "
            f"its {len(signature.in_avals)}: the module is not the one jax lowered."
        )
    with module.context, ir.Location.unknown():
        avals = [physical(ShapeDtypeStruct(a.shape, a.dtype)) for a in signature.in_avals]
        types = [ir.RankedTensorType.get(a.shape, jax_mlir.dtype_to_ir_type(a.dtype)) for a in avals]
        block = main.regions[0].blocks[0]
        old = list(block.arguments)
        new = [block.add_argument(t, ir.Location.unknown()) for t in types]
        for arg, i in zip(old, kept):
            arg.replace_all_uses_with(new[i])
        for _ in old:
            block.erase_argument(0)
        attrs = [{} for _ in types]
        for d, i in zip(irx.value_attrs(main, "arg"), kept):
            attrs[i] = d
        results = irx.value_types(main, "res")
        main.operation.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(types, results))
        irx.set_value_attrs(main, "arg", attrs)


def _import_round_trip(module: ir.Module) -> None:
    """Older jax exports keep Shardy's attributes in ``mhlo.frontend_attributes``; this is jax's own import."""
    attrs = module.operation.attributes
    if "mhlo.frontend_attributes" in attrs and _ROUND_TRIP_MESHES in ir.DictAttr(attrs["mhlo.frontend_attributes"]):
        from jaxlib.mlir import passmanager

        with module.context:
            passmanager.PassManager.parse("builtin.module(xla-sdy-round-trip-import-shardy-attrs)").run(
                module.operation
            )


_GSPMD_CALLS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")  # one operand, one result each


def _hlo_shardings(module: ir.Module, where: str) -> list[_HloSite]:
    """Every ``mhlo.sharding`` of the module that says something (the body's too), once each is known to be one
    XLA reads without aborting (text, a serialized proto or the empty string, checked by shardkit's rules; the
    forms XLA aborts on in a program, ``_refused``; GSPMD's custom calls with one result): LoadError at the op that
    holds a bad one."""
    out = []
    for site in irx.walk_shardings(module):
        if irx.MHLO_SHARDING in site.shardings:
            try:
                hlo = mhlo.read(site.shardings[irx.MHLO_SHARDING])
            except ValueError as e:
                raise LoadError(f"{_site_at(where, site)}: {diagnostics.clause(e)}") from None
            reason = None if hlo is None else _refused(site, hlo)
            if reason is not None:
                raise LoadError(f"{_site_at(where, site)}: mhlo.sharding {hlo} {reason}")
            target = irx.call_target(site.op) if site.kind == "op" else ""
            if target in _GSPMD_CALLS and (len(site.op.operands), len(site.op.results)) != (1, 1):
                raise LoadError(
                    f"{_at(where, site.op)}: custom_call @{target} takes one operand and gives one result, this one "
                    f"{len(site.op.operands)} and {len(site.op.results)} (XLA aborts on it)"
                )
            if hlo is not None and irx.SDY_SHARDING not in site.shardings:
                out.append(_HloSite(hlo, site))
    return out


def _refused(site: irx.Site, hlo: HloSharding) -> str | None:
    """Why shardkit loads no program with ``hlo`` at ``site``, or None. XLA refuses a tuple sharding on a value
    that is no tuple; its GSPMD partitioner aborts on the rest (found by the campaign's sharding_forms target; the
    lone unknown one also compiling through jaxlib's client alone): unreduced shardings on ops ("Check failed:
    IsTiledLeaf()"), unknown shardings and manual subgroups on ops of several results ("IsTuple()",
    "!IsUnknownLeaf()", "IsManualSubgroup()"), an unknown sharding outside a shard group whose value another
    sharding places (SIGSEGV), and a placement in a shard group the program's other shardings contradict
    ("buffer != nullptr")."""
    pieces = hlo.tuple_elements() or [hlo]
    if hlo.tuple_elements() and not isinstance(site.type, ir.TupleType):
        n = len(pieces)
        return (
            f"is a tuple sharding of {n} element{'' if n == 1 else 's'} for one value of type {site.type} (XLA "
            "refuses it: a tuple sharding is a tuple's, or one element per result of an op)"
        )
    if any(p.is_unreduced() or _UNREDUCED in p.subgroup_types() for p in pieces):
        return (
            "is unreduced (devices hold partial sums): XLA's GSPMD partitioner aborts on one on an op, and "
            "shardkit's Arrays hold no partial sums"
        )
    if (
        site.kind == "op"
        and len(site.op.results) > 1
        and any(p.is_unknown() or _MANUAL in p.subgroup_types() for p in pieces)
    ):
        return "is unknown or manual in subgroups on an op of several results, which XLA's GSPMD partitioner aborts on"
    grouped = ["shard_as" in repr(p) or "shard_like" in repr(p) for p in pieces]
    if any(p.is_unknown() and not g for p, g in zip(pieces, grouped)):
        return (
            "is unknown outside a shard group: XLA's GSPMD partitioner segfaulted on one whose value another sharding "
            "places; write no sharding, which means the same (the compiler chooses)"
        )
    if any(g and not p.is_unknown() for p, g in zip(pieces, grouped)):
        return (
            "puts a placement in a shard group; XLA's GSPMD partitioner aborts when the group's and the program's "
            "shardings disagree, so shardkit loads shard groups only of unknown shardings ({unknown shard_as N}, as "
            "jax's shard_alike writes them)"
        )
    return None


_UNREDUCED = _jaxlib.OpShardingType.UNREDUCED
_MANUAL = _jaxlib.OpShardingType.MANUAL


def _site_at(where: str, site: irx.Site) -> str:
    """Where a sharding is, as errors name it: ``model.mlir:4:10: result 0 of 'stablehlo.add'`` (or of @main)."""
    holder = symbol_ref(irx.symbol_name(site.op)) if site.op.name == "func.func" else f"'{site.op.name}'"
    return f"{_at(where, site.op)}: {site.label} of {holder}"


def _reached(module: ir.Module, main: ir.OpView) -> set[str]:
    """The functions XLA compiles: @main, every public function, and the functions they reach through symbol
    references (``func.call``'s callee, a custom call's ``called_computations``, a composite's decomposition).
    XLA drops the private functions nothing calls, and with them their shardings."""
    funcs = {irx.symbol_name(op): op for op in irx.ops(module, "func.func")}
    todo = [op for op in funcs.values() if "sym_visibility" not in op.attributes] + [main.operation]
    seen = {irx.symbol_name(op) for op in todo}
    while todo:
        for op in irx.ops(todo.pop()):
            attrs = op.attributes
            for i in range(len(attrs)):
                for ref in _symbol_refs(attrs[i].attr):
                    if ref in funcs and ref not in seen:
                        seen.add(ref)
                        todo.append(funcs[ref])
    return seen


def _symbol_refs(attr: ir.Attribute) -> list[str]:
    if isinstance(attr, ir.FlatSymbolRefAttr):
        return [attr.value]
    if isinstance(attr, ir.ArrayAttr):
        return [ref for a in attr for ref in _symbol_refs(a)]
    if isinstance(attr, ir.DictAttr):
        return [ref for i in range(len(attr)) for ref in _symbol_refs(attr[i].attr)]
    return []


# -- the entry points --------------------------------------------------------------------------------------


class _Program(NamedTuple):
    """A parsed module made ready to bind: its entry as @main, its meshes and the partitions it needs."""

    module: ir.Module
    name: str
    exported: jax.export.Exported | None
    main: ir.OpView
    meshes: dict[str, SdyMesh]
    partitions: int
    signature: _Signature | None


def _program(source: Source, entry: str | None, index: int | None, allow_unregistered: bool) -> _Program:
    parsed = _parse(source, allow_unregistered)
    module, name = _pick(parsed.module, index, parsed.where), parsed.name
    if "sym_name" in module.operation.attributes and parsed.exported is None:
        name = ir.StringAttr(module.operation.attributes["sym_name"]).value
    _import_round_trip(module)
    hlo = _hlo_shardings(module, parsed.where)
    main = _entry(module, entry, parsed.where)
    meshes = irx.meshes(module)
    least = parsed.exported.nr_devices if parsed.exported is not None else 1
    partitions = _num_partitions(module, name, main, meshes, hlo, parsed.where, least)
    return _Program(module, name, parsed.exported, main, meshes, partitions, parsed.signature)


def partitions(
    source: Source, *, entry: str | None = None, module: int | None = None, allow_unregistered: bool = False
) -> int:
    """How many devices the program ``load`` would bind needs, read without starting jax's backend: a tool can
    make that many virtual CPU devices first."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # load says what it drops
        return _program(source, entry, module, allow_unregistered).partitions


def load(
    source: Source,
    *,
    mesh: Any = None,
    devices: Sequence[Device] | None = None,
    entry: str | None = None,
    module: int | None = None,
    allow_unregistered: bool = False,
) -> LoweredModule:
    """The ``LoweredModule`` of a module from anywhere, bound to devices (see the module docstring); ``entry``
    names the function to run (default @main), ``module`` which of a file's top-level modules;
    ``allow_unregistered`` drops the attributes of dialects XLA does not know, with a warning naming them."""
    module, name, exported, main, meshes, n, signature = _program(source, entry, module, allow_unregistered)
    if exported is not None and exported.nr_devices not in (1, n):
        raise LoadError(f"{name} was exported for {exported.nr_devices} devices, but its module has {n} partitions.")
    assignment, bound, user_mesh = _bind(name, n, meshes, mesh, devices)
    if exported is not None:
        _check_exported(exported, assignment)
    if signature is not None:
        _restore_dropped(module, main, signature, name)
    binding = _Binding(meshes, assignment, bound, user_mesh)
    in_avals, out_avals, in_shardings, out_shardings, donated = _read(module, name, binding, main)
    out_keys: tuple[Any, ...] = ()
    if signature is not None:
        in_tree, out_tree = signature.in_tree, signature.out_tree
        keys = tuple(a.dtype if is_key(a.dtype) else None for a in signature.out_avals)
        out_keys = keys if any(k is not None for k in keys) else ()
    else:
        in_tree = jax.tree_util.tree_structure((tuple(range(len(in_avals))), {}))
        out_tree = jax.tree_util.tree_structure(0 if len(out_avals) == 1 else (0,) * len(out_avals))
    return LoweredModule(
        module=module,
        name=name,
        partitioner="gspmd" if _gspmd_form(main) and not meshes else "shardy",
        in_tree=in_tree,
        out_tree=out_tree,
        in_avals=in_avals,
        out_avals=out_avals,
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        donated=donated,
        num_partitions=n,
        device_assignment=assignment,
        mesh=user_mesh or _first_mesh(in_shardings + out_shardings) or next(iter(bound.values()), None),
        target=virtual_target(assignment),
        out_keys=out_keys,
    )


def _gspmd_form(main: ir.OpView) -> bool:
    return any(irx.MHLO_SHARDING in attrs for kind in ("arg", "res") for attrs in irx.value_attrs(main, kind))


def _first_mesh(shardings: Sequence[Sharding | None]) -> Mesh | AbstractMesh | None:
    return next((s.mesh for s in shardings if s is not None and s.mesh is not None), None)


def replace_module(lowered: LoweredModule, module: ir.Module | str) -> LoweredModule:
    """``lowered`` with another module of the same signature, its shardings and donation read from that module.

    The arguments' and results' shapes and dtypes must be those of ``lowered`` (a ValueError names the first
    that differs); the devices stay those of ``lowered``.
    """
    if isinstance(module, str):
        module = _parse_text(module, "<string>").module
    elif isinstance(module, ir.Module):
        module = copy_module(module)
    else:
        raise TypeError(f"with_module takes an ir.Module or MLIR text, got {type(module).__name__}.")
    name = lowered.name
    main = _entry(module, None, "the new module")
    for kind, label, avals in (("arg", "argument", lowered.in_avals), ("res", "result", lowered.out_avals)):
        types = irx.value_types(main, kind)
        if len(types) != len(avals):
            raise ValueError(f"the new @main has {len(types)} {label}s, but {name} has {len(avals)}.")
        for i, (t, aval) in enumerate(zip(types, avals)):
            new = _aval(t, f"{label} {i} of the new @main")
            if (new.shape, new.dtype) != (aval.shape, aval.dtype):
                raise ValueError(
                    f"{label} {i} of the new @main is {t}, but {name} has {label} {i} of shape {aval.shape} and "
                    f"dtype {aval.dtype.name}."
                )
    if lowered.device_assignment is None:
        raise ValueError(f"{name} was lowered for an AbstractMesh only; lower it for devices before editing it.")
    mesh = lowered.mesh if isinstance(lowered.mesh, Mesh) else None
    return rebind(lowered.with_module(module), lowered.device_assignment, mesh, lowered.target)


def rebind(lowered: LoweredModule, devices: tuple[Device, ...], mesh: Mesh | None, target: str | None) -> LoweredModule:
    """``lowered`` on other devices (in partition order), its shardings and donation read again from its module:
    each mesh of the module binds to ``devices``, a mesh of ``mesh``'s shape to ``mesh`` itself."""
    module = lowered.module
    meshes = irx.meshes(module)
    bound = _bind_meshes(meshes, devices)
    if mesh is not None:
        bound.update({s: mesh for s, m in meshes.items() if m.axes == mesh.shape_tuple and m.device_ids is None})
    binding = _Binding(meshes, devices, bound, mesh)
    _, _, in_shardings, out_shardings, donated = _read(module, lowered.name, binding, _entry(module, None, "@main"))
    return dataclasses.replace(
        lowered,
        in_shardings=in_shardings,
        out_shardings=out_shardings,
        donated=donated,
        device_assignment=devices,
        mesh=mesh or _first_mesh(in_shardings + out_shardings) or next(iter(bound.values()), None),
        target=target,
        executables={},
    )


def to_exported(lowered: LoweredModule) -> jax.export.Exported:
    """``lowered`` as a ``jax.export.Exported`` (``.serialize()`` it; ``jax.export.deserialize`` reads it back).

    The artifact holds shardings as NamedShardings over abstract meshes, as jax's own exports do: a sharding
    that is no PartitionSpec over the program's mesh (and not replicated) raises ValueError.
    """
    target = stablehlo.get_version_from_compatibility_requirement(stablehlo.StablehloCompatibilityRequirement.WEEK_4)
    backend = jax.extend.backend.get_backend()
    module = copy_module(lowered.module)
    with module.context, ir.Location.unknown():
        for op in irx.ops(module, "arith.constant"):  # what other frontends write; the artifact holds StableHLO
            if isinstance(op.results[0].type, ir.RankedTensorType):
                irx.constant_to_stablehlo(op)
        # the partition count, as jax's exports carry it: the module alone may no longer say (a loop whose
        # tuple sharding named 4 devices folded away leaves no sharding)
        irx.set_partitions(module, lowered.num_partitions)
    try:
        serialized = jax.extend.mlir.serialize_portable_artifact(module, target, backend.serialize_with_sdy)
    except Exception as e:  # jaxlib's own error type: an op no StableHLO version has
        reason = str(e).split(": ", 1)[-1]
        raise ValueError(
            f"{lowered.name} cannot be written as a jax.export artifact, which holds StableHLO, Shardy and func ops "
            f"only: {reason}."
        ) from None

    def named(shardings: Sequence[Sharding | None], avals: Sequence[ShapeDtypeStruct], label: str) -> tuple:
        out = []
        for i, (s, aval) in enumerate(zip(shardings, avals)):
            if s is not None and s.spec is None:
                s = from_hlo(s.to_hlo(aval.ndim), s.device_assignment, lowered.mesh, aval.ndim)
                if s.spec is None and s.is_fully_replicated:
                    s = NamedSharding(lowered.mesh or AbstractMesh((), ()), PartitionSpec())
                if s.spec is None:
                    s = _over_its_tiles(s, aval.ndim) or s
                if s.spec is None:
                    raise ValueError(
                        f"{label} {i} of {lowered.name} is sharded as {s}, which is no PartitionSpec over the "
                        "program's mesh; a jax.export artifact holds only NamedShardings."
                    )
            out.append(None if s is None else _abstract(s).to_jax(aval.ndim))
        return tuple(out)

    return _jaxlib.exported(
        fun_name=lowered.name,
        in_tree=lowered.in_tree,
        in_avals=tuple(jax.core.ShapedArray(a.shape, a.dtype, weak_type=a.weak_type) for a in lowered.in_avals),
        out_tree=lowered.out_tree,
        out_avals=tuple(jax.core.ShapedArray(a.shape, a.dtype, weak_type=a.weak_type) for a in lowered.out_avals),
        in_shardings=named(lowered.in_shardings, lowered.in_avals, "argument"),
        out_shardings=named(lowered.out_shardings, lowered.out_avals, "result"),
        nr_devices=lowered.num_partitions,
        platform=jax.export.default_export_platform(),
        mlir_module_serialized=serialized,
    )


def _over_its_tiles(s: Sharding, ndim: int) -> NamedSharding | None:
    """``s`` over the abstract mesh of its own tile assignment (``hlo_to_sdy``: an axis ``_axis_<d>`` per cut
    dimension, ``_replicas`` for the copies) when that mesh orders the devices as the program does: how a GSPMD
    program's sharding travels in a ``jax.export`` artifact, which holds NamedShardings over abstract meshes. None
    for a sharding no such mesh describes (devices in another order, a maximal one)."""
    try:
        sdy_mesh, tensor = hlo_to_sdy(s.to_hlo(ndim), ndim)
    except ValueError:
        return None
    if not sdy_mesh.axes or sdy_mesh.device_ids is not None:
        return None
    sizes, names = zip(*((size, name) for name, size in sdy_mesh.axes))
    return NamedSharding.from_sdy(tensor, AbstractMesh(sizes, names))


def _abstract(s: NamedSharding) -> NamedSharding:
    mesh = s.mesh.abstract_mesh if isinstance(s.mesh, Mesh) else s.mesh
    return NamedSharding(mesh, s.spec, memory_kind=s.memory_kind)
