"""The staged API: ``jit(f)`` -> ``.lower(*args)`` -> ``Lowered`` -> ``.compile()`` -> ``Compiled`` -> call.

This is where lowering, passes and the executor meet; each stage is a thin wrapper over the package that
does the work. ``jit(f)(*args)`` runs all stages once per distinct call signature and then goes straight
to the cached ``Compiled``.
"""

from __future__ import annotations

import contextlib
import functools
import operator
import os
import warnings
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

import jax
import numpy as np
from jaxlib.mlir import ir

from shardkit import _jaxlib
from shardkit.caching import on_clear
from shardkit.dialects import copy_module
from shardkit.executor import Compiled, Target, bind_target, compile_lowered, target as make_target
from shardkit.executor.arguments import call_key, flatten_call, leaf_paths, place
from shardkit.inspect import CommunicationReport, ShardingTable, notebook, page, sharding_table, shardy_report
from shardkit.lowering import JitOptions, LoweredModule, Lowering, load_module
from shardkit.mesh import AbstractMesh, Mesh, current_mesh


class Lowered:
    """A function lowered to sharded StableHLO: read it, run passes over it, compile it.

    Examples:
        >>> lowered = sk.jit(lambda a: a * 2, out_shardings=s).lower(x)
        >>> print(lowered.as_text())
        module @jit__lambda attributes {mhlo.num_partitions = 8 : i32, mhlo.num_replicas = 1 : i32} {
          sdy.mesh @mesh = <["x"=4, "y"=2]>
          func.func public @main(%arg0: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})
              -> (tensor<8x2xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
            ...
            %1 = stablehlo.multiply %arg0, %0 : tensor<8x2xf32>
            return %1 : tensor<8x2xf32>
          }
        }
        >>> lowered.compile()(x).sharding == s
        True
    """

    __slots__ = ("_lowered",)

    def __init__(self, lowered: LoweredModule):
        self._lowered = lowered

    def as_text(self, debug_info: bool = False) -> str:
        """The module's MLIR text (with source locations when ``debug_info``)."""
        return self._lowered.module.operation.get_asm(enable_debug_info=debug_info)

    def compiler_ir(self) -> ir.Module:
        """A copy of the module (in shardkit's context) that the caller may edit freely."""
        return copy_module(self._lowered.module)

    @property
    def in_avals(self) -> Any:
        """``(args, kwargs)`` as the arguments' tree of ShapeDtypeStructs (shape and dtype, as compiled)."""
        return jax.tree_util.tree_unflatten(self._lowered.in_tree, self._lowered.in_avals)

    @property
    def in_shardings(self) -> Any:
        """``(args, kwargs)`` shardings as the arguments' tree; None where the compiler chooses."""
        return jax.tree_util.tree_unflatten(self._lowered.in_tree, self._lowered.in_shardings)

    @property
    def out_shardings(self) -> Any:
        """The output tree's shardings; None where the compiler chooses."""
        return jax.tree_util.tree_unflatten(self._lowered.out_tree, self._lowered.out_shardings)

    @property
    def mesh(self) -> Mesh | AbstractMesh | None:
        """The mesh of the first named sharding (arguments, then results), or None."""
        return self._lowered.mesh

    def communication(self) -> CommunicationReport:
        """Shardy's plan: the collectives its passes would insert into (a copy of) the module, before XLA
        (``compile().communication()`` is what XLA runs)."""
        return shardy_report(self._lowered.module, self._lowered.mesh, self._lowered.device_assignment)

    def shardings(self) -> ShardingTable:
        """One row per value with its sharding and source line (``run_passes("propagate")`` first to see what
        Shardy chose)."""
        return sharding_table(self._lowered.module, self._lowered.mesh)

    def to_html(self, path: str | os.PathLike | None = None, *, explain: bool = True) -> page.Page:
        """One self-contained page of Shardy's plan for this program (``docs/inspect.md``): the mesh, every value's
        sharding and tiles, the collectives Shardy would insert and why (``explain``); written to ``path`` when
        given. ``compile().to_html()`` adds XLA's program, the modelled step and memory per device."""
        data = page.program(self.communication(), name=self._lowered.name, explain=explain)
        return page.save(page.program_page("program", [data], f"{self._lowered.name}: Shardy's plan"), path)

    def _repr_html_(self) -> str:
        """A notebook's compact view: the mesh and each argument's and result's sharding (``to_html()`` is the full
        page)."""
        mesh = self.mesh
        lowered = self._lowered
        outs = jax.tree_util.tree_unflatten(lowered.out_tree, [0] * lowered.out_tree.num_leaves)
        out_paths = ["result" + jax.tree_util.keystr(p) for p, _ in jax.tree_util.tree_flatten_with_path(outs)[0]]
        rows = [
            *zip(leaf_paths(lowered.in_tree), lowered.in_avals, lowered.in_shardings),
            *zip(out_paths, lowered.out_avals, lowered.out_shardings),
        ]
        facts = [("mesh", "none" if mesh is None else " ".join(f"{n}={s}" for n, s in mesh.shape.items()))]
        facts += [(name, f"{aval.dtype}[{','.join(map(str, aval.shape))}]  {_spec_text(s)}") for name, aval, s in rows]
        return notebook.card(f"Lowered {lowered.name}", facts, hint="to_html() gives the full report page")

    def run_passes(self, pipeline: str) -> Lowered:
        """A new Lowered with ``pipeline`` run over a copy of the module; this one is left untouched."""
        from shardkit import passes

        module = copy_module(self._lowered.module)
        passes.run_pipeline(module, pipeline)
        return Lowered(self._lowered.with_module(module))

    def with_module(self, module: ir.Module | str) -> Lowered:
        """A new Lowered running ``module`` (e.g. an edited ``compiler_ir()``), whose shardings and donation are
        read from it; its arguments and results must keep their shapes and dtypes (ValueError names the first
        that differs)."""
        return Lowered(load_module.replace_module(self._lowered, module))

    def export(self) -> Any:
        """This program as a ``jax.export.Exported`` (``.serialize()`` writes jax's artifact, which
        ``jax.export.deserialize`` and ``shardkit.load`` read)."""
        return load_module.to_exported(self._lowered)

    def compile(
        self,
        passes: str | None = None,
        *,
        target: str | Target | None = None,
        compiler_options: Mapping[str, str | bool | int | float] | None = None,
    ) -> Compiled:
        """Compiles for the lowered device assignment, after running ``passes`` (a pipeline) on a copy; or,
        compile-only, for a ``target`` machine not at hand (``'tpu-v5p:8x16x16'``, ``'cpu:256'``; see
        ``shardkit.executor.targets``): everything but calling it. ``compiler_options`` are XLA's options by name,
        as jax's ``Lowered.compile(compiler_options=...)`` takes them (on a TPU target, libtpu's own flags too:
        ``{"xla_tpu_enable_async_collective_fusion": True}``). A function jit lowered for this process's platform
        is lowered again by jax for a target's other platform first (jax lowers some bodies per platform: a remat
        policy's host offloading is dropped on CPU), as ``jax.jit`` lowers for the platform of the devices named."""
        base = self._lowered
        if target is not None:
            target = make_target(target, base.num_partitions)
            base = base.for_platform(target.platform)
        lowered = base if passes is None else Lowered(base).run_passes(passes)._lowered
        if target is not None:
            lowered = bind_target(lowered, target)
        return Compiled(lowered, compile_lowered(lowered, overrides=compiler_options))


def _spec_text(sharding: Any) -> str:
    """How a card names a sharding: its PartitionSpec where it has one, else its kind; ``chosen by the compiler``
    for none."""
    if sharding is None:
        return "chosen by the compiler"
    spec = getattr(sharding, "spec", None)
    return str(spec) if spec is not None else type(sharding).__name__


def load(
    source: Any,
    *,
    mesh: Any = None,
    devices: Sequence[Any] | None = None,
    entry: str | None = None,
    module: int | None = None,
    allow_unregistered: bool = False,
) -> Lowered:
    """A ``Lowered`` of StableHLO from anywhere: MLIR text, MLIR or StableHLO (VHLO) bytecode, XLA's HLO text, a
    ``jax.export.Exported`` or its serialized bytes, or a path to a file of any of these.

    The program is ``@main``, or the function ``entry`` names; ``module`` picks one of a file's several top-level
    modules; ``allow_unregistered`` drops attributes of other frontends' dialects (tt-mlir's ``#ttcore...``), which
    XLA cannot take, and warns naming them. Shardings come from the entry's arguments and results
    (``sdy.sharding`` or ``mhlo.sharding``). The program runs on the first ``mhlo.num_partitions`` devices unless
    ``devices`` (in partition order) or ``mesh`` (a Mesh with the axes of the module's mesh) says otherwise;
    docs/loading.md lists what loads and what is refused.

    Examples:
        >>> lowered = sk.load('''
        ...   module attributes {mhlo.num_partitions = 8 : i32} {
        ...     sdy.mesh @mesh = <["x"=4, "y"=2]>
        ...     func.func @main(%a: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>})
        ...         -> tensor<8x2xf32> {
        ...       %0 = stablehlo.add %a, %a : tensor<8x2xf32>
        ...       return %0 : tensor<8x2xf32>
        ...     }
        ...   }''')
        >>> lowered.in_shardings
        ((NamedSharding(mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto)), spec=P('x',), memory_kind=device),), {})
        >>> y = lowered.compile()(np.ones((8, 2), np.float32))
        >>> np.asarray(y).sum(), y.sharding.spec
        (np.float32(32.0), P('x',))
    """
    return Lowered(
        load_module.load(
            source, mesh=mesh, devices=devices, entry=entry, module=module, allow_unregistered=allow_unregistered
        )
    )


class _Staged:
    """What ``jit(f)`` twice with equal options shares, as two ``jax.jit(f)`` do: the lowering, the compiled
    programs by call key, and jaxlib's C++ dispatch over them (``_jaxlib.cpp_dispatch``: a call whose signature it
    has a record of runs in C++; any other runs ``cache_miss``)."""

    __slots__ = ("lowering", "calls", "dispatch")

    def __init__(self, lowering: Lowering):
        self.lowering = lowering
        self.calls: dict[Any, Compiled] = {}
        options = lowering.options
        self.dispatch = _jaxlib.cpp_dispatch(
            lowering.name,
            self.call,
            self.cache_miss,
            options.static_argnums,
            options.static_argnames,
            "shardkit.jit",
            place,
            _DISPATCH_CACHE,
        )

    def call(self, *args: Any, **kwargs: Any) -> Any:
        """A call on the Python path alone (what jax runs under ``jax.disable_jit()``: shardkit still compiles)."""
        return self.cache_miss(*args, **kwargs)[0]

    def cache_miss(self, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """(outputs, C++ dispatch's record or None) of a call C++ dispatch has no record for."""
        lowering = self.lowering
        static, dyn, dyn_kwargs = lowering.split(args, kwargs)
        leaves, tree = flatten_call(dyn, dyn_kwargs)
        key = call_key(leaves, tree, static, current_mesh())
        try:
            compiled = self.calls.get(key)
        except TypeError:
            raise TypeError(f"Static arguments of {lowering.name} must be hashable, got {static!r}.") from None
        if compiled is None:
            if any(isinstance(x, jax.core.Tracer) for x in leaves):  # under jax.grad, jax.vmap, jax.jit, ...
                return lowering.traced(*args, **kwargs), None
            lowered = lowering.lower(args, kwargs)
            compiled = self.calls[key] = Compiled(lowered, compile_lowered(lowered))
        return compiled.call_flat(leaves)


# One cache of C++ dispatch records for every shardkit jit (jaxlib's LRU over entries of all of them);
# sk.clear_caches() empties it.
_DISPATCH_CACHE = _jaxlib.dispatch_cache(capacity=8192)
on_clear(_DISPATCH_CACHE.clear)


class Jitted:
    """A function staged for sharded compilation; see ``jit``."""

    # __weakref__: jax's control flow (lax.scan, fori_loop) caches the functions it traces by weak reference
    __slots__ = ("_staged", "_dispatch", "__wrapped__", "__name__", "__weakref__")

    def __init__(self, staged: _Staged):
        self._staged = staged
        self._dispatch = staged.dispatch
        self.__wrapped__ = staged.lowering.fun
        self.__name__ = staged.lowering.name

    def __repr__(self) -> str:
        return f"<shardkit.jit of {self.__name__} (partitioner={self._staged.lowering.partitioner!r})>"

    @property
    def _calls(self) -> dict[Any, Compiled]:
        """The compiled programs by call key."""
        return self._staged.calls

    @property
    def _lowering(self) -> Lowering:
        return self._staged.lowering

    def lower(self, *args: Any, **kwargs: Any) -> Lowered:
        """Lowers for these arguments (Arrays, numpy values or ShapeDtypeStructs; static ones as values)."""
        return Lowered(self._staged.lowering.lower(args, kwargs))

    # A call is jaxlib's C++ dispatch itself: Python looks ``__call__`` up on the class, and a C-level getter hands
    # back the dispatch callable, so no Python frame runs (a forwarding method cost ~0.4 us, 2% of a small call).
    __call__ = property(operator.attrgetter("_dispatch"), doc="Calls the function (see ``jit``).")


def jit(
    fun: Callable,
    in_shardings: Any = None,
    out_shardings: Any = None,
    *,
    static_argnums: int | Sequence[int] = (),
    static_argnames: str | Sequence[str] = (),
    donate_argnums: int | Sequence[int] = (),
    partitioner: str = "shardy",
    platform: str | None = None,
) -> Jitted:
    """Stages ``fun`` for sharded compilation: jax traces it, shardkit shards, lowers, compiles and calls it.

    Args:
        fun: a function of arrays (pytrees of them); static arguments may be anything hashable.
        in_shardings: a Sharding for every argument, or a tuple with one entry (a sharding or a prefix tree
            of them, None = follow the argument's own sharding) per positional argument. A sharding may be
            shardkit's, jax's, or a bare PartitionSpec read over the mesh of the ``with mesh:`` around the call.
        out_shardings: a sharding or a prefix tree of the outputs (the same kinds); None lets the compiler choose.
        static_argnums: positions of arguments that are compile-time constants.
        static_argnames: names of keyword arguments that are compile-time constants (as in ``jax.jit``, each
            of the two also covers the other's arguments where the signature says which is which).
        donate_argnums: positions of arguments whose buffers the computation may reuse. As under ``jax.jit``, a
            call deletes the donated Arrays that XLA reuses for an output; one that no output can reuse stays
            usable, and lowering warns about it in jax's words ("Some donated buffers were not usable: ...").
        partitioner: ``"shardy"`` (``sdy`` dialect) or ``"gspmd"`` (``mhlo.sharding`` strings).
        platform: the platform jax lowers the body for (``"tpu"``, ``"cpu"``, ``"cuda"``, ``"rocm"``), as
            ``jax.jit(f).trace(...).lower(lowering_platforms=...)``; default this process's, and a compile for a
            target of another platform (``compile(target="tpu-v5e:2x2")``) has jax lower the body again for it. A
            body with a Pallas TPU kernel lowered with ``platform="tpu"`` compiles for a TPU target from a machine
            without TPUs; a platform named here is kept for every compile.

    Arguments are Arrays (jax's; shardkit's are jax's), numpy arrays and scalars (placed as compiled; host
    scalars replicated, as jax does). A committed Array whose sharding is not equivalent to the one compiled for
    raises ValueError, as in jax: shardkit never reshards silently (``sk.device_put`` it first). Calls run as
    ``jax.jit``'s do: the first of each signature in Python (checks, lowering, compiling), the later ones in
    jaxlib's C++ dispatch, on shardkit's executable. Without
    ``in_shardings`` each call compiles for its arguments' own shardings, so there is nothing to mismatch.

    Under a jax trace (``jax.grad``, ``jax.vmap``, ``jax.jit``, ``lax.scan``, another ``sk.jit``) the function
    behaves as a nested ``jax.jit``: its in and out shardings become sharding constraints around the body.
    Host callbacks (``jax.debug.print``, ``pure_callback``, ``io_callback``, ordered or not) run as under jax.

    Examples:
        >>> mesh = sk.make_mesh((4, 2), ("x", "y"))
        >>> f = sk.jit(lambda x: x * 2, out_shardings=sk.NamedSharding(mesh, P("x", "y")))
        >>> print(f.lower(np.ones((8, 2), np.float32)).as_text())
        module @jit__lambda ... {
          sdy.mesh @mesh = <["x"=4, "y"=2]>
          func.func public @main(%arg0: tensor<8x2xf32>)
              -> (tensor<8x2xf32> {jax.result_info = "result", sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}) {
        ...
        >>> f(np.ones((8, 2), np.float32)).sharding.spec
        P('x', 'y')
    """
    options = JitOptions(
        in_shardings, out_shardings, static_argnums, static_argnames, donate_argnums, partitioner, platform
    )
    return Jitted(_shared(fun, options))


# jit(f) twice shares one _Staged, as jax.jit does; the function is held weakly.
_BY_FUNCTION: weakref.WeakKeyDictionary[Callable, dict[Any, _Staged]] = weakref.WeakKeyDictionary()
on_clear(_BY_FUNCTION.clear)


def _shared(fun: Callable, options: JitOptions) -> _Staged:
    key = options.key()
    try:
        per_fun = _BY_FUNCTION.setdefault(fun, {})
        hash(key)
    except TypeError:  # a function that cannot be weakly referenced, or unhashable settings: no sharing
        return _Staged(Lowering(fun, options))
    if key not in per_fun:
        per_fun[key] = _Staged(Lowering(fun, options))
    return per_fun[key]


# filter_jit's donate modes, as equinox.filter_jit names them: which of the staged function's array lists (the
# first positional argument's, the rest's) XLA may reuse. The "all" modes filter out lowering's warning about a
# donated array that XLA cannot reuse, as equinox's do, and the "warn" modes let it through; True and False are
# "all" and "none".
_DONATE = {"none": (), "all": (1, 2), "warn": (1, 2), "all-except-first": (2,), "warn-except-first": (2,)}


@contextlib.contextmanager
def _unusable_donations_ignored() -> Iterator[None]:
    """Where equinox.filter_jit's "all" modes make a call: a whole tree is donated, so some arrays that no output
    can reuse are expected, and jax's warning about them (which lowering gives in jax's words) is not shown."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        yield


def filter_jit(
    fun: Callable | None = None,
    *,
    donate: Literal["all", "all-except-first", "warn", "warn-except-first", "none"] | bool = "none",
    partitioner: str = "shardy",
) -> Callable:
    """``jit`` over any pytree, as ``equinox.filter_jit`` stages it: every array leaf (shardkit's, jax's or numpy's)
    is a traced argument, sharded as it is (or as the body's sharding constraints say, e.g.
    ``equinox.filter_shard``), and every other leaf (functions, ints, a module's static fields) is a compile-time
    constant, compared by equality. Results keep their non-array leaves too. As equinox's, it is also a decorator
    factory: ``@filter_jit(donate="all")``.

    Args:
        fun: a function of pytrees (an Equinox module, an optimizer state, ...).
        donate: which array arguments' buffers the computation may reuse, as ``equinox.filter_jit``'s: ``"all"``,
            ``"all-except-first"`` (not the first positional argument's, e.g. a model kept across steps),
            ``"none"``; ``"warn"``/``"warn-except-first"`` as ``"all"``/``"all-except-first"`` but showing jax's
            warning about donated arrays that no output can reuse (the others hide it); ``True``/``False`` as
            ``"all"``/``"none"``. A call deletes only the donated arrays XLA reused for an output (as ``jit``'s do):
            a batch that no output can reuse stays usable.
        partitioner: as for ``jit``.

    Examples:
        >>> mesh = sk.make_mesh((8,), ("batch",))
        >>> scale = sk.filter_jit(lambda x, how: how["f"](x) * how["k"])
        >>> y = scale(sk.device_put(np.ones(8), sk.NamedSharding(mesh, P("batch"))), {"f": jnp.negative, "k": 3})
        >>> y.sharding.spec, float(y.sum())
        (P('batch',), -24.0)
        >>> @sk.filter_jit(donate="all-except-first")
        ... def step(weights, x):
        ...     return weights * x
        >>> w, x = sk.device_put(np.ones(8), sk.NamedSharding(mesh, P("batch"))), np.arange(8.0)
        >>> float(step(w, x).sum()), w.is_deleted()
        (28.0, False)
    """
    mode = ("all" if donate else "none") if isinstance(donate, bool) else donate
    if not isinstance(mode, str) or mode not in _DONATE:
        raise ValueError(f"filter_jit's donate must be one of {', '.join(map(repr, _DONATE))}, got {donate!r}.")
    if fun is None:
        return functools.partial(filter_jit, donate=mode, partitioner=partitioner)
    except_first = mode.endswith("except-first")
    quiet = mode.startswith("all")
    out_statics: dict[Any, _Static] = {}

    def staged(static: _Static, first: list[Any], rest: list[Any]) -> list[Any]:
        arrays = first + rest
        args, kwargs = static.rebuild(arrays)
        out_static, out_arrays = _Static.split(fun(*args, **kwargs))
        out_statics[static, _signature(arrays)] = out_static
        return out_arrays

    jitted = jit(staged, static_argnums=0, donate_argnums=_DONATE[mode], partitioner=partitioner)

    @functools.wraps(fun)
    def call(*args: Any, **kwargs: Any) -> Any:
        static, arrays = _Static.split((args, kwargs))
        hash(static)  # an unhashable non-array argument is named here, not as a static argument of `staged`
        cut = len(_Static.split(args[0])[1]) if except_first and args else 0
        with _unusable_donations_ignored() if quiet else contextlib.nullcontext():
            out = jitted(static, arrays[:cut], arrays[cut:])
        return out_statics[static, _signature(arrays)].rebuild(out)

    return call


def _signature(arrays: Sequence[Any]) -> tuple[Any, ...]:
    """Shapes and dtypes as the traced program sees them (a float64 numpy argument is traced as float32)."""
    return tuple((a.shape, jax.dtypes.canonicalize_dtype(a.dtype, allow_extended_dtype=True)) for a in arrays)


class _Static:
    """The non-array part of a ``filter_jit`` call: its tree, where the arrays go, and the other leaves (hashable,
    compared by equality, as static arguments are)."""

    __slots__ = ("tree", "keep", "leaves", "_hash")

    def __init__(self, tree: Any, keep: tuple[bool, ...], leaves: tuple[Any, ...]):
        self.tree, self.keep, self.leaves = tree, keep, leaves
        self._hash: int | None = None  # a call's part is hashed (it picks the program), a result's never

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Static) and (self.tree, self.keep, self.leaves) == (
            other.tree,
            other.keep,
            other.leaves,
        )

    def __hash__(self) -> int:
        if self._hash is None:
            try:
                self._hash = hash((self.tree, self.keep, self.leaves))
            except TypeError as e:
                raise TypeError(f"filter_jit's non-array arguments must be hashable: {e}") from None
        return self._hash

    @classmethod
    def split(cls, tree: Any) -> tuple[_Static, list[Any]]:
        """``tree``'s non-array part and its array leaves (shardkit's, jax's or numpy's), in order."""
        leaves, treedef = jax.tree_util.tree_flatten(tree)
        keep = tuple(isinstance(x, (jax.Array, np.ndarray, np.generic)) for x in leaves)
        static = cls(treedef, keep, tuple(None if k else x for k, x in zip(keep, leaves)))
        return static, [x for k, x in zip(keep, leaves) if k]

    def rebuild(self, arrays: Sequence[Any]) -> Any:
        """The tree ``split`` took apart, with ``arrays`` in the places of its array leaves."""
        it = iter(arrays)
        return jax.tree_util.tree_unflatten(self.tree, [next(it) if k else x for k, x in zip(self.keep, self.leaves)])
