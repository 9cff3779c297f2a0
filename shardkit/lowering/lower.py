"""From a call (a function, its arguments and shardings) to a ``LoweredModule``.

``Lowering`` holds one ``jit``'s configuration and its lowering cache. A call is flattened to leaves; each
leaf's sharding is the one ``in_shardings`` gives it, else its own (a committed Array's or a
``ShapeDtypeStruct``'s), else None (the compiler chooses; numpy inputs are placed accordingly).

The cache is keyed on device-free values: the argument tree, the static arguments and, per leaf, shape,
dtype, weak type and the sharding with its mesh made abstract. The module it holds names no devices (meshes
print in logical order; the device order is the compile-time device assignment), so lowering the same
function for two meshes of equal shape over different devices reuses the module and only binds the new
devices, as jax's commit notes introducing ``AbstractMesh`` describe.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np
from jaxlib.mlir import ir

from shardkit.array import device_dtype, is_key, sharding_mismatch
from shardkit.dialects import irx
from shardkit.dialects.sdy import SdyMesh
from shardkit.lowering.attach import attach, constraint_meshes
from shardkit.lowering.constraint import with_sharding_constraint
from shardkit.lowering.options import JitOptions, per_leaf, resolve
from shardkit.lowering.trace import NO_EFFECTS, Effects, Traced, lower_traced, trace
from shardkit.lowering.types import PY_SCALARS, ShapeDtypeStruct, physical, physical_shardings
from shardkit.mesh import AbstractMesh, Mesh, current_mesh, lookup_devices
from shardkit.sharding import GSPMDSharding, Sharding, as_sharding, from_jax

Device = Any


@dataclasses.dataclass(frozen=True, eq=False)
class LoweredModule:
    """A sharded StableHLO module plus everything the executor needs to compile and call it.

    ``module`` is shared with the lowering cache: copy it before editing. ``in_shardings``/``out_shardings``
    are flat, one per leaf; None means the compiler chooses. ``device_assignment`` is the devices in
    partition order, or None when only abstract meshes were given (bind devices before compiling); with a
    ``target`` they are compile-only devices (a TPU topology's, or more virtual CPUs than jax has). Avals and
    shardings are what XLA holds (``types.physical``): a typed PRNG key array's are its key data's, and
    ``out_keys`` holds each such output's key dtype (None for the others) to wrap the data back into keys.
    """

    module: ir.Module
    name: str
    partitioner: str
    in_tree: Any
    out_tree: Any
    in_avals: tuple[ShapeDtypeStruct, ...]
    out_avals: tuple[ShapeDtypeStruct, ...]
    in_shardings: tuple[Sharding | None, ...]
    out_shardings: tuple[Sharding | None, ...]
    donated: tuple[bool, ...]
    num_partitions: int
    device_assignment: tuple[Device, ...] | None
    mesh: Mesh | AbstractMesh | None
    effects: Effects = NO_EFFECTS  # ordered effects' tokens lead main's arguments and results
    executables: dict = dataclasses.field(default_factory=dict)  # device assignment -> executable, per module
    out_keys: tuple[Any, ...] = ()  # per output, its key dtype where it is a typed PRNG key array; () if none is
    target: str | None = None  # the compile-only target its devices are ("tpu-v5e:16x16", "cpu:16"), if any
    platform: str | None = None  # the platform jax lowered the body for, where not this process's (jit's platform)
    # platform -> this call with the body jax lowered for that platform, where jit left the platform to this
    # process's (``Lowering.lower``); None for a loaded or edited module, which is what it is on any platform
    relower: Callable[[str], LoweredModule] | None = None

    def with_module(self, module: ir.Module) -> LoweredModule:
        """The same program with its module replaced (e.g. after passes); its executables start empty, and it is no
        longer jax's lowering of a call, to lower again."""
        return dataclasses.replace(self, module=module, executables={}, relower=None)

    def for_platform(self, platform: str) -> LoweredModule:
        """This program with the body jax lowered for ``platform`` (a compile-only target's), where jax lowered it
        for this process's and can lower it again (not a body calling back to this process's Python, which jax
        lowers for this process's devices alone); else itself."""
        if self.relower is None or self.effects.host_callbacks or platform == jax.default_backend():
            return self
        return self.relower(platform)


@dataclasses.dataclass(frozen=True)
class _Entry:
    """What one lowering cache entry holds: all of it device-free except concrete constraints' devices."""

    module: ir.Module
    in_avals: tuple[ShapeDtypeStruct, ...]
    out_tree: Any
    out_avals: tuple[ShapeDtypeStruct, ...]
    out_shardings: tuple[Sharding | None, ...]
    constraints: tuple[tuple[Device, ...] | int, ...]  # devices, or an AbstractMesh's size
    effects: Effects
    mesh: SdyMesh | None  # the module's one mesh (a constraint's, jax's or shardkit's), if it has exactly one
    out_keys: tuple[Any, ...]  # as in LoweredModule
    jax_traced: Any  # jax's Traced, to lower the body again for another platform
    executables: dict = dataclasses.field(default_factory=dict)

    # What XLA holds for the arguments and results (typed keys as their key data): derived once per entry, not
    # once per lowering.
    @functools.cached_property
    def physical_in(self) -> tuple[ShapeDtypeStruct, ...]:
        return tuple(map(physical, self.in_avals))

    @functools.cached_property
    def physical_out(self) -> tuple[ShapeDtypeStruct, ...]:
        return tuple(map(physical, self.out_avals))

    @functools.cached_property
    def has_keys(self) -> bool:
        return any(is_key(a.dtype) for a in self.in_avals + self.out_avals)


def abstractify(x: Any, path: str) -> ShapeDtypeStruct:
    """The shape, dtype, weak type and own sharding of one argument leaf. A jax Array is read as jax reads it: a
    committed one's sharding is its own (it stays where it is), an uncommitted one goes where the program wants
    it, like a numpy array; a ``jax.ShapeDtypeStruct`` is taken as shardkit's."""
    if isinstance(x, ShapeDtypeStruct):
        return x
    if isinstance(x, jax.ShapeDtypeStruct):
        sharding = None if x.sharding is None else as_sharding(x.sharding, len(x.shape), f"the sharding of {path}")
        return _checked_struct(path, x.shape, x.dtype, sharding, x.weak_type)
    if isinstance(x, jax.Array):
        placed = not isinstance(x, jax.core.Tracer) and x.committed  # a tracer has no placement
        sharding = from_jax(x.sharding, x.ndim) if placed else None
        return _checked_struct(path, x.shape, x.dtype, sharding, getattr(x, "weak_type", False))
    if isinstance(x, (np.ndarray, np.generic)):
        return _checked_struct(path, x.shape, x.dtype, None, False)
    weak = PY_SCALARS.get(type(x))
    if weak is not None:
        return ShapeDtypeStruct((), jax.dtypes.canonicalize_dtype(type(x)), weak_type=weak)
    raise TypeError(
        f"Argument {path} of type {type(x).__name__} is not an array: jit arguments must be Arrays, "
        "numpy arrays or scalars, or ShapeDtypeStructs. Mark other arguments static with static_argnums."
    )


def _checked_struct(path: str, shape: Any, dtype: Any, sharding: Sharding | None, weak_type: bool) -> ShapeDtypeStruct:
    if is_key(dtype):  # a typed PRNG key array: its dtype is jax's, its data is what the program takes
        return ShapeDtypeStruct(shape, dtype, sharding=sharding)
    try:
        return ShapeDtypeStruct(shape, device_dtype(dtype), sharding=sharding, weak_type=weak_type)
    except TypeError as e:
        raise TypeError(f"Argument {path}: {e}") from None


def _bind(s: Sharding | None, devices: tuple[Device, ...] | None) -> Sharding | None:
    """An AbstractMesh sharding bound to the computation's devices (positions = the device assignment)."""
    return s if s is None or devices is None else s.bind(devices)


def _ids(devices: Sequence[Device]) -> list[int]:
    return [d.id for d in devices]


def resolve_devices(
    named: Sequence[tuple[str, Sharding | None]], constraints: Sequence[tuple[Device, ...] | int]
) -> tuple[tuple[Device, ...] | None, int]:
    """(the device assignment, the number of partitions) of a computation with these shardings.

    ``constraints`` holds each sharding constraint's devices, or its AbstractMesh's size. Every concrete
    sharding must name the same devices in the same order. Abstract meshes take their devices from there,
    or from the innermost ``with mesh:`` of their size; a computation with no sharding at all runs on jax's
    default device.
    """
    devices: tuple[Device, ...] | None = None
    first = ""
    abstract: dict[int, str] = {}
    concrete = [(what, s.device_assignment) for what, s in named if s is not None and s.is_concrete]
    concrete += [("a with_sharding_constraint", d) for d in constraints if not isinstance(d, int)]
    for what, s in named:
        if s is not None and not s.is_concrete:
            abstract.setdefault(s.num_devices, what)
    for size in constraints:
        if isinstance(size, int):
            abstract.setdefault(size, "a with_sharding_constraint")
    for what, d in concrete:
        if devices is None:
            devices, first = d, what
        elif d is not devices and d != devices:  # one mesh's shardings share its tuple (4,096 devices: 20 us)
            raise ValueError(
                f"All shardings of one computation must use the same devices in the same order, but {first} is "
                f"on devices {_ids(devices)} and {what} is on devices {_ids(d)}. Put them on one mesh."
            )
    if devices is None:
        mesh = current_mesh()
        if not abstract:
            devices = (jax.devices()[0],)
        elif not mesh.empty and mesh.size in abstract:
            devices = mesh.flat_devices
    n = len(devices) if devices is not None else next(iter(abstract))
    for size, what in abstract.items():
        if size != n:
            raise ValueError(
                f"{what} is over an AbstractMesh of {size} devices, but the computation runs on {n} devices."
            )
    return devices, n


def _named(paths, chosen, avals, out_shardings) -> list[tuple[str, Sharding | None]]:
    """Every sharding that decides the devices: arguments', arguments' own ones (they bind abstract
    in_shardings), results'."""
    own = [
        (f"{p} (the argument itself)", a.sharding)
        for p, s, a in zip(paths, chosen, avals)
        if a.sharding is not None and a.sharding is not s
    ]
    return [*zip(paths, chosen), *own, *((f"result {i}", s) for i, s in enumerate(out_shardings))]


def _with_scalars(
    shardings: Sequence[Sharding | None], avals: Sequence[ShapeDtypeStruct], devices: tuple[Device, ...] | None
) -> list[Sharding | None]:
    """Host scalars (rank 0, no sharding) replicated over the computation's devices, as jax places them."""
    if devices is None:
        return list(shardings)
    return [
        GSPMDSharding.get_replicated(devices) if s is None and a.ndim == 0 and a.sharding is None else s
        for s, a in zip(shardings, avals)
    ]


def _check_fits(s: Sharding | None, aval: ShapeDtypeStruct, path: str) -> None:
    if s is None:
        return
    try:
        s.shard_shape(aval.shape)
    except ValueError as e:
        e.args = (f"{path} of shape {aval.shape}: {e}", *e.args[1:])
        raise


class Lowering:
    """One ``jit``'s lowering configuration and cache (see the module docstring)."""

    def __init__(self, fun: Callable, options: JitOptions):
        if not callable(fun):
            raise TypeError(f"jit needs a callable, got {fun!r}.")
        self.fun = fun
        self.name = getattr(fun, "__name__", type(fun).__name__)
        self.options = options = options.for_function(fun)
        self.partitioner = options.partitioner
        self._jax_fun = jax.jit(
            fun, static_argnums=options.static_argnums, static_argnames=options.static_argnames, keep_unused=True
        )
        self._per_tree: dict[Any, tuple[tuple[Any, ...], tuple[bool, ...], tuple[str, ...]]] = {}
        self._entries: dict[Any, _Entry] = {}
        self._bound: dict[Any, LoweredModule] = {}

    def split(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple, tuple, dict]:
        """(static values, dynamic positional arguments, dynamic keyword arguments)."""
        return self.options.split(self.name, args, kwargs)

    @functools.cached_property
    def traced(self) -> Callable:
        """The function as a nested ``jax.jit`` (no shardings) for calls under an outer jax trace (``jax.grad``,
        ``jax.vmap``, ``jax.jit``, ``lax.scan``, ``sk.jit`` itself): its in and out shardings become sharding
        constraints around the body, as a nested jit's do; the outer program decides the rest."""
        options = self.options

        def body(*args: Any, **kwargs: Any) -> Any:
            if options.in_shardings is not None:
                dyn = [a for i, a in enumerate(args) if i not in options.static_argnums]
                constrained = iter(with_sharding_constraint(tuple(dyn), options.in_shardings))
                args = tuple(a if i in options.static_argnums else next(constrained) for i, a in enumerate(args))
            out = self.fun(*args, **kwargs)
            return out if options.out_shardings is None else with_sharding_constraint(out, options.out_shardings)

        functools.update_wrapper(body, self.fun)
        return jax.jit(body, static_argnums=options.static_argnums, static_argnames=options.static_argnames)

    def _leaf_config(self, tree: Any, dyn: tuple[Any, ...], kwargs: dict[str, Any]):
        """Per leaf of ``(dyn, kwargs)``: the explicit in_sharding as given, whether it is donated, its path."""
        config = self._per_tree.get(tree)
        if config is not None:
            return config
        statics, donated = self.options.static_argnums, self.options.donate_argnums
        positions = [i for i in range(len(dyn) + len(statics)) if i not in statics]
        if donated and donated[-1] >= len(positions) + len(statics):
            raise ValueError(
                f"jit of {self.name} has donate_argnums={donated}, but was called with "
                f"{len(positions) + len(statics)} positional arguments."
            )
        try:
            explicit = per_leaf(self.options.in_shardings, dyn)
        except ValueError as e:
            raise ValueError(
                f"in_shardings of {self.name} must be a Sharding or a tuple with one entry (a sharding "
                f"prefix tree) per positional argument; {len(dyn)} arguments do not match it: {e}"
            ) from None
        donated = [
            positions[j] in self.options.donate_argnums for j, a in enumerate(dyn) for _ in jax.tree_util.tree_leaves(a)
        ]
        paths = []
        for path, _ in jax.tree_util.tree_flatten_with_path((dyn, kwargs))[0]:
            head, rest = path[0].idx, path[1:]
            if head == 0:
                paths.append(f"args[{positions[rest[0].idx]}]{jax.tree_util.keystr(rest[1:])}")
            else:
                paths.append(f"kwargs{jax.tree_util.keystr(rest)}")
        explicit += [None] * (len(paths) - len(explicit))
        donated += [False] * (len(paths) - len(donated))
        config = (tuple(explicit), tuple(donated), tuple(paths))
        self._per_tree[tree] = config
        return config

    def lower(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> LoweredModule:
        """Lowers one call (hitting the cache when an equal abstract call was lowered before)."""
        static, dyn, dyn_kwargs = self.split(args, kwargs)
        leaves, tree = jax.tree_util.tree_flatten((dyn, dyn_kwargs))
        given, donated, paths = self._leaf_config(tree, dyn, dyn_kwargs)
        avals = [abstractify(x, p) for x, p in zip(leaves, paths)]
        explicit = [resolve(g, a.ndim, f"in_shardings for {p}") for g, a, p in zip(given, avals, paths)]
        chosen = [e if e is not None else a.sharding for e, a in zip(explicit, avals)]
        scope = current_mesh()
        key = (
            tree,
            static,
            scope.axes_mesh,  # jax traces under the mesh context; its shape is what the module sees
            tuple(
                (a.shape, a.dtype, a.weak_type, None if s is None else s.abstract_key(a.ndim))
                for a, s in zip(avals, chosen)
            ),
        )
        try:
            entry = self._entries.get(key)
        except TypeError:
            raise TypeError(f"Static arguments of {self.name} must be hashable, got {static!r}.") from None
        if entry is None:
            entry = self._entries[key] = self._trace(args, kwargs, tree, avals, chosen, donated, paths)
        # the same module bound to the same devices: a repeated lower() of one signature makes nothing anew
        bound_key = (key, tuple(chosen), tuple(a.sharding for a in avals), scope)
        lowered = self._bound.get(bound_key)
        if lowered is None:
            bind = functools.partial(self._bind, tree=tree, avals=avals, explicit=explicit, chosen=chosen,
                                     donated=donated, paths=paths, scope=scope)  # fmt: skip
            relower = None
            if self.options.platform is None:  # jax lowered for this process: a target's platform may differ
                relower = functools.partial(self._lower_for, bound_key, entry, bind)
            lowered = self._bound[bound_key] = bind(entry, relower=relower)
        return lowered

    def _lower_for(self, key: Any, entry: _Entry, bind: Callable[..., LoweredModule], platform: str) -> LoweredModule:
        """The call ``key`` names with the body jax lowered for ``platform`` (``LoweredModule.relower``): jax's
        trace lowered again, not the Python traced again."""
        key = (key, platform)
        lowered = self._bound.get(key)
        if lowered is None:
            scope = bind.keywords["scope"]  # the mesh context it was lowered in, as jax lowered it
            with scope if isinstance(scope, Mesh) and not scope.empty else contextlib.nullcontext():
                traced = lower_traced(entry.jax_traced, shardy=self.partitioner == "shardy", platform=platform)
                inputs = {k: bind.keywords[k] for k in ("avals", "chosen", "donated", "paths")}
                lowered = self._bound[key] = bind(self._entry(traced, **inputs), platform=platform)
        return lowered

    def _bind(
        self, entry, *, tree, avals, explicit, chosen, donated, paths, scope, relower=None, platform=None
    ) -> LoweredModule:
        """``entry``'s module on the devices its shardings (or the mesh in scope) name, with every sharding bound
        to them; an argument whose own sharding is not the one given raises (``sharding_mismatch``)."""
        devices, n = resolve_devices(_named(paths, chosen, avals, entry.out_shardings), entry.constraints)
        in_shardings = tuple(_bind(s, devices) for s in _with_scalars(chosen, avals, devices))
        for path, e, a, s in zip(paths, explicit, avals, in_shardings):
            own = a.sharding
            if e is not None and own is not None and own.is_concrete and not own.is_equivalent_to(s, a.ndim):
                raise sharding_mismatch(path, own, s)
        out_shardings = tuple(_bind(s, devices) for s in entry.out_shardings)
        # the mesh results are named on, as jax names them: an argument's or result's, the one in scope, or the
        # module's own (a sharding constraint's)
        mesh = next((s.mesh for s in in_shardings + out_shardings if s is not None and s.mesh is not None), None)
        if mesh is None and not scope.empty:
            mesh = scope
        from_body = all(s is None for s in chosen + list(entry.out_shardings))  # not a mesh derived from one
        if mesh is None and from_body and entry.mesh is not None and devices and entry.mesh.size == len(devices):
            mesh = Mesh.from_sdy(entry.mesh, devices)
        return LoweredModule(
            module=entry.module,
            name=self.name,
            partitioner=self.partitioner,
            in_tree=tree,
            out_tree=entry.out_tree,
            in_avals=entry.physical_in,
            out_avals=entry.physical_out,
            in_shardings=physical_shardings(in_shardings, entry.in_avals) if entry.has_keys else in_shardings,
            out_shardings=physical_shardings(out_shardings, entry.out_avals) if entry.has_keys else out_shardings,
            donated=donated,
            num_partitions=n,
            device_assignment=devices,
            mesh=mesh,
            effects=entry.effects,
            executables=entry.executables,
            out_keys=entry.out_keys,
            platform=platform or self.options.platform,
            relower=relower,
        )

    def _out_config(self, out_info: Any, out_avals: Sequence[ShapeDtypeStruct]) -> tuple[Sharding | None, ...]:
        try:
            given = per_leaf(self.options.out_shardings, out_info)
        except ValueError as e:
            raise ValueError(f"out_shardings of {self.name} is not a prefix of its output tree: {e}") from None
        return tuple(
            resolve(g, a.ndim, f"out_shardings for result {i}") for i, (g, a) in enumerate(zip(given, out_avals))
        )

    def _trace(self, args, kwargs, tree, avals, chosen, donated, paths) -> _Entry:
        for path, s, a in zip(paths, chosen, avals):
            _check_fits(s, a, path)
        sds = [jax.ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals]
        dyn_sds, kwargs_sds = jax.tree_util.tree_unflatten(tree, sds)
        dyn_iter = iter(dyn_sds)
        statics = self.options.static_argnums
        jax_args = [a if i in statics else next(dyn_iter) for i, a in enumerate(args)]
        jax_kwargs = {**{k: v for k, v in kwargs.items() if k in self.options.static_argnames}, **kwargs_sds}
        traced = trace(
            self._jax_fun,
            tuple(jax_args),
            jax_kwargs,
            shardy=self.partitioner == "shardy",
            platform=self.options.platform,
        )
        return self._entry(traced, avals=avals, chosen=chosen, donated=donated, paths=paths)

    def _entry(self, traced: Traced, *, avals, chosen, donated, paths) -> _Entry:
        """The cache entry of jax's lowering ``traced``: the module with shardkit's shardings attached."""
        module, effects = traced.module, traced.effects
        main = ir.SymbolTable(module.operation)["main"]
        if len(main.type.inputs) != len(avals) + len(effects.ordered):
            raise NotImplementedError(
                f"{self.name} lowered to {len(main.type.inputs)} arguments for {len(avals)} array arguments and "
                f"{len(effects.ordered)} effect tokens; jax passed it arguments shardkit does not know."
            )
        out_leaves, out_tree = jax.tree_util.tree_flatten(traced.out_info)
        out_avals = tuple(ShapeDtypeStruct(o.shape, o.dtype, weak_type=o.weak_type) for o in out_leaves)
        out_shardings = self._out_config(traced.out_info, out_avals)
        for i, (s, a) in enumerate(zip(out_shardings, out_avals)):
            _check_fits(s, a, f"result {i}")
        constraints = tuple(
            m if isinstance(m, int) else tuple(lookup_devices(m)) for m in dict.fromkeys(constraint_meshes(module))
        )
        if traced.devices:  # jax's own choice for the body; its mesh context's devices are bound like a shape
            context = current_mesh()
            constraints += (context.size if traced.devices == context.flat_devices else traced.devices,)
        devices, n = resolve_devices(_named(paths, chosen, avals, out_shardings), constraints)
        in_avals = tuple(ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type) for a in avals)
        attach(
            module,
            partitioner=self.partitioner,
            num_partitions=n,
            num_tokens=len(effects.ordered),
            in_avals=tuple(map(physical, in_avals)),
            out_avals=tuple(map(physical, out_avals)),
            in_shardings=physical_shardings(_with_scalars(chosen, avals, devices), in_avals),
            out_shardings=physical_shardings(out_shardings, out_avals),
            donated=donated,
        )
        meshes = {m for m in irx.meshes(module).values() if m.axes and not m.is_maximal}
        mesh = meshes.pop() if len(meshes) == 1 else None
        keys = tuple(a.dtype if is_key(a.dtype) else None for a in out_avals)
        out_keys = keys if any(k is not None for k in keys) else ()
        return _Entry(
            module,
            in_avals,
            out_tree,
            out_avals,
            out_shardings,
            constraints,
            effects,
            mesh,
            out_keys,
            traced.jax_traced,
        )
