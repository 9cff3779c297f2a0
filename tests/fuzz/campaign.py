"""A fuzz campaign over the Python API's boundaries with jaxlib: generated inputs, well formed and not, for the
HLO and Shardy parsers and forms, meshes and shardings, host data, Arrays and calls, lowering and the
persistent cache; tuple shardings at every function that takes an HLO sharding, and every form XLA's sharding
parser accepts in every pass, in ``sk.load`` and in the reports.

Every input must end in a result or a named error: ValueError/TypeError (OverflowError for a Python int a
dtype cannot hold), an ``ir.MLIRError`` with a location, or jax's RuntimeError for a deleted Array. Results
are checked (index maps and values against jax, round trips against the input). Anything else is a finding.
A crash kills this process; the case being run is always in ``--marker``, so whoever ran it can name it.

Run: python -m tests.fuzz.campaign --seconds 60 [--seed N] [--marker PATH]; it prints a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import random
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from typing import Any

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=8")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
from hypothesis import (  # noqa: E402
    HealthCheck,
    given,
    seed,
    settings,
    strategies as st,
)
from jaxlib.mlir import ir  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P, _jaxlib  # noqa: E402
from shardkit._jaxlib import OpSharding, OpShardingType  # noqa: E402
from shardkit.dialects import context, mhlo, sdy as sdy_forms  # noqa: E402
from tests.jax_oracle import jax_gspmd, jax_named  # noqa: E402

DEVS = jax.devices()
MESH = sk.make_mesh((4, 2), ("x", "y"))
NAMED = (ValueError, TypeError, OverflowError)


class Finding(AssertionError):
    """An unclean error or a wrong result."""


class Campaign:
    """Counts cases and outcomes, and keeps the case being run in the marker file."""

    def __init__(self, marker: str | None):
        self.cases = 0
        self.outcomes: dict[str, int] = {}
        self.findings: list[str] = []
        self._marker = open(marker, "w") if marker else None  # noqa: SIM115 - kept open for the whole run

    def mark(self, target: str, case: Any) -> None:
        self.cases += 1
        if self._marker is not None:
            self._marker.seek(0)
            self._marker.write(f"{target}: {case!r}"[:20000])
            self._marker.truncate()
            self._marker.flush()

    def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()``; a named error is an outcome, any other exception a Finding."""
        try:
            out = fn()
        except NAMED as e:
            self._count(type(e).__name__)
            return e
        except ir.MLIRError as e:
            if not any(f":{n}:" in str(e) for n in range(1, 10)):
                raise Finding(f"MLIRError without a location: {e}") from e
            self._count("MLIRError")
            return e
        except RuntimeError as e:
            if "deleted" not in str(e):
                raise Finding(f"unclean {type(e).__name__}: {e}") from e
            self._count("RuntimeError(deleted)")
            return e
        except Exception as e:
            raise Finding(f"unclean {type(e).__name__}: {e}\n{traceback.format_exc()}") from e
        self._count("ok")
        return out

    def compared(self, what: str) -> None:
        """Counts a result checked against jax or the input."""
        self._count(f"checked: {what}")

    def _count(self, kind: str) -> None:
        self.outcomes[kind] = self.outcomes.get(kind, 0) + 1


C: Campaign  # set by main()

# -- strategies -----------------------------------------------------------------------------------------------

small_ints = st.one_of(st.integers(-2, 9), st.sampled_from([0, 1, 2, 4, 8, 16, 2**20, 2**31, 2**62, -(2**40)]))


def _ints(values: list[int]) -> str:
    return ",".join(map(str, values))


@st.composite
def hlo_texts(draw: Any) -> str:
    """HLO sharding text: mostly of XLA's grammar with random numbers, then randomly mutated."""

    def single() -> str:
        kind = draw(st.sampled_from(["replicated", "manual", "unknown", "unreduced", "maximal", "tiled", "tiled"]))
        if kind == "maximal":
            body = f"maximal device={draw(small_ints)}"
        elif kind == "tiled":
            fits = st.sampled_from([[2], [4], [8], [2, 4], [4, 2], [2, 2, 2], [1, 8], [2, 1, 4], [2, 2], [1, 2, 2]])
            dims = draw(fits if draw(st.integers(0, 3)) else st.lists(st.integers(-1, 5), min_size=1, max_size=4))
            n = max(1, int(np.prod([max(d, 0) for d in dims])))
            if draw(st.booleans()):
                reshape = draw(st.sampled_from([[n], dims, draw(st.lists(st.integers(-1, 5), min_size=1, max_size=3))]))
                body = f"devices=[{_ints(dims)}]<=[{_ints(reshape)}]"
                if draw(st.booleans()):
                    perm = (
                        draw(st.permutations(range(len(reshape))))
                        if draw(st.booleans())
                        else draw(st.lists(st.integers(-1, 4), min_size=1, max_size=4))
                    )
                    body += f"T({_ints(perm)})"
            else:
                devices = list(range(n)) if n <= 64 else [0, 1]
                if draw(st.booleans()):
                    devices = draw(st.permutations(devices))
                if draw(st.integers(0, 3)) == 0:
                    devices = draw(st.lists(small_ints, min_size=1, max_size=10))
                body = f"devices=[{_ints(dims)}]{_ints(devices)}"
            tail = draw(st.sampled_from(["", "", " last_tile_dim_replicate", " last_tile_dims={"]))
            if tail.endswith("{"):
                kinds = draw(st.lists(st.sampled_from(["manual", "replicated", "unreduced", "x"]), max_size=3))
                tail += ", ".join(kinds) + "}"
            body += tail
        else:
            body = kind
        if draw(st.integers(0, 4)) == 0:
            body += draw(st.sampled_from([' metadata={op_name="a}b"}', " shard_as 1", " shard_like 2", " metadata={"]))
        return "{" + body + "}"

    text = single()
    if draw(st.integers(0, 5)) == 0:
        text = "{" + ", ".join(single() for _ in range(draw(st.integers(0, 3)))) + "}"
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 2, 3]))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.integers(0, 2))
        if op == 0:
            text = text[:at] + text[at + 1 :]
        elif op == 1:
            text = text[:at] + draw(st.sampled_from(list("{}[](),=<T-0123456789 x\x00é"))) + text[at:]
        else:
            text = text[:at] + text[at:] * 2
    return text


@st.composite
def op_shardings(draw: Any, depth: int = 0) -> OpSharding:
    p = OpSharding()
    kinds = [OpShardingType.OTHER] * 3 + list(OpShardingType.__members__.values())
    p.type = draw(st.sampled_from(kinds))
    dims = draw(st.lists(st.integers(-2, 5), max_size=4))
    p.tile_assignment_dimensions = dims
    n = int(np.prod(dims)) if dims and all(d > 0 for d in dims) else 2
    if draw(st.booleans()):
        p.iota_reshape_dims = draw(st.sampled_from([[n], dims, [n, 1]]))
        p.iota_transpose_perm = draw(st.sampled_from([list(range(len(p.iota_reshape_dims))), [0], [1, 1]]))
    else:
        p.tile_assignment_devices = draw(st.sampled_from([list(range(n)), list(range(n))[::-1], [0, 0], [-1, 3]]))
    p.replicate_on_last_tile_dim = draw(st.booleans())
    p.last_tile_dims = draw(st.lists(st.sampled_from([OpShardingType.MANUAL, OpShardingType.REPLICATED]), max_size=2))
    if p.type == OpShardingType.TUPLE and depth == 0:
        p.tuple_shardings = draw(st.lists(op_shardings(depth=1), max_size=3))
    return p


names = st.sampled_from(["x", "y", "z", "", 'x"y', "a\\b", "é", "_axis_0", "mesh"])


@st.composite
def sdy_meshes(draw: Any) -> Any:
    axes = draw(st.lists(st.tuples(names, st.sampled_from([-1, 0, 1, 2, 3, 4, 8, 2**40])), max_size=3))
    size = int(np.prod([s for _, s in axes])) if axes else 1
    ids = draw(
        st.sampled_from([None, None, tuple(range(size))[::-1] if size <= 64 else None, (0,), (5, 7), (0, 0), ()])
    )
    return axes, ids


@st.composite
def sdy_refs(draw: Any) -> Any:
    sub = draw(st.sampled_from([None, None, (1, 2), (2, 2), (0, 2), (1, 1), (1, 3), (2, 4), (1, 8)]))
    return sdy_forms.SdyAxisRef(draw(names), sub)


@st.composite
def sdy_shardings(draw: Any) -> Any:
    axes, ids = draw(sdy_meshes())
    mesh: Any = draw(st.sampled_from(["mesh", "m", "", "a b", 'mesh"', "1x", "x.y$z", "é", "a\\b"]))
    if draw(st.booleans()):
        mesh = sdy_forms.SdyMesh(tuple(axes), ids)  # may raise: drawn inside the case
    dims = tuple(
        sdy_forms.SdyDim(
            tuple(draw(st.lists(sdy_refs(), max_size=2))), draw(st.booleans()), draw(st.sampled_from([None, 0, 3]))
        )
        for _ in range(draw(st.integers(0, 3)))
    )
    return sdy_forms.SdyTensorSharding(mesh, dims, tuple(draw(st.lists(sdy_refs(), max_size=2))))


device_like = st.sampled_from([*DEVS, 0, 3, "cpu:0", None, 2.5])
axis_names = st.lists(st.sampled_from(["x", "y", "z"]), max_size=3).map(tuple) | st.sampled_from(
    [None, "x", 3, ("x", 1)]
)
spec_entries = st.sampled_from(
    [None, "x", "y", "z", ("x", "y"), ("y", "x"), ("x", "x"), sk.UNCONSTRAINED, 3, ("x", None)]
)
shapes = st.one_of(
    st.lists(st.sampled_from([0, 1, 2, 4, 8, 16, 3, 6, -1]), max_size=4).map(tuple), st.sampled_from([None, 3, (2.5,)])
)

# -- targets ---------------------------------------------------------------------------------------------------


def hlo_text_target(text: str) -> None:
    C.mark("hlo_text", text)
    hlo = C.run(lambda: mhlo.parse(text))
    if isinstance(hlo, Exception):
        if not isinstance(hlo, mhlo.HloParseError):
            raise Finding(f"mhlo.parse raised {type(hlo).__name__}, not HloParseError: {hlo}")
        return
    again = mhlo.parse(repr(hlo))  # what XLA prints, shardkit's check accepts
    if again != hlo and mhlo.parse(repr(again)) != again:  # XLA may normalize once (all-subgroup tilings)
        raise Finding(f"{text!r} -> {hlo!r} -> {again!r} does not settle")
    if hlo.tuple_elements() or hlo.is_manual() or hlo.is_unknown() or hlo.is_unreduced():
        return
    devices = [] if hlo.is_replicated() else hlo.tile_assignment_devices()
    if len(devices) > 8 or (hlo.is_maximal() and devices and devices[0] >= 8):
        return
    n = len(devices) if devices and not hlo.is_maximal() else 8
    s = C.run(lambda: sk.GSPMDSharding(DEVS[:n], hlo))
    if isinstance(s, Exception) or hlo.is_maximal():
        return
    dims = hlo.tile_assignment_dimensions()
    extra = 1 if hlo.replicate_on_last_tile_dim() else len(hlo.subgroup_types())
    tiling = C.run(lambda: mhlo.tiling(hlo, len(dims) - extra))
    if isinstance(tiling, Exception) or tiling is None:
        return
    parts, _ = tiling
    shape = tuple(2 * p for p in parts)
    want = jax_gspmd(DEVS[:n], repr(hlo)).devices_indices_map(shape)
    C.compared("GSPMDSharding index map")
    if dict(s.devices_indices_map(shape)) != want:
        raise Finding(f"GSPMDSharding({text!r}) places pieces unlike jax for shape {shape}")


def op_sharding_target(proto: OpSharding, k: int) -> None:
    C.mark("op_sharding", (str(proto), k))
    C.run(lambda: sk.GSPMDSharding(DEVS[:k], proto).shard_shape((8,) * max(1, len(proto.tile_assignment_dimensions))))


def sdy_text_target(text: str) -> None:
    C.mark("sdy_text", text)
    t = C.run(lambda: sdy_forms.SdyTensorSharding.parse(text, context()))
    if isinstance(t, Exception):
        return
    with context():
        built = C.run(t.build)
        if not isinstance(built, Exception) and sdy_forms.SdyTensorSharding.from_attr(built) != t:
            raise Finding(f"{text!r} builds an attribute that reads back differently")


@st.composite
def sdy_texts(draw: Any) -> str:
    try:
        t = draw(sdy_shardings()) if draw(st.booleans()) else None
    except (ValueError, TypeError):  # a refused value has no text; mutate a fixed one instead
        t = None
    text = str(t) if t is not None else draw(st.sampled_from(["", " ", "#sdy.sharding<@mesh, [{}]>", "#sdy.mesh<[]>"]))
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(list('<>[]{}"?,:()@=pé0-9') + ["", "mesh<"])) + text[at + 1 :]
    return text


def sdy_model_target(data: Any) -> None:
    t = C.run(lambda: data.draw(sdy_shardings()))
    C.mark("sdy_model", t)
    if isinstance(t, Exception):
        return
    text = str(t)
    with context():
        built = C.run(t.build)
        if isinstance(built, Exception):
            return
        C.compared("sdy text and MLIR's print")
        if str(built) != text:
            raise Finding(f"{t!r} prints {text} but MLIR prints {built}")
        if sdy_forms.SdyTensorSharding.from_attr(built) != t:
            raise Finding(f"{t!r} reads back differently")
    if isinstance(t.mesh, sdy_forms.SdyMesh) and not t.mesh.is_maximal:
        hlo = C.run(lambda: t.to_hlo(t.mesh))
        if not isinstance(hlo, Exception):
            C.run(lambda: sdy_forms.hlo_to_sdy(hlo, len(t.dims)))


def mesh_target(data: Any) -> None:
    if data.draw(st.booleans()):  # well formed: a mesh over some permutation of the devices
        sizes = data.draw(st.sampled_from([(8,), (4, 2), (2, 4), (2, 2, 2), (1, 8), (2,), (1,)]))
        devices = data.draw(st.permutations(DEVS))[: int(np.prod(sizes))]
        names_ = ("x", "y", "z")[: len(sizes)]
    else:
        devices = data.draw(st.lists(device_like, max_size=9) | st.just(DEVS))
        sizes = data.draw(shapes)
        names_ = data.draw(axis_names)
    entries = data.draw(st.lists(spec_entries, max_size=3)) if data.draw(st.booleans()) else data.draw(spec_entries)
    shape = data.draw(shapes)
    C.mark("mesh", (devices, sizes, names_, entries, shape))
    try:
        grid = np.array(devices, dtype=object).reshape(sizes)
    except (ValueError, TypeError):
        grid = np.array(devices, dtype=object)
    mesh = C.run(lambda: sk.make_mesh(sizes, names_, devices=devices))
    if isinstance(mesh, Exception):
        mesh = C.run(lambda: sk.Mesh(grid, names_))
    if isinstance(mesh, Exception):
        return
    spec = C.run(lambda: P(*entries) if isinstance(entries, list) else entries)
    if isinstance(spec, Exception):
        return
    s = C.run(lambda: sk.NamedSharding(mesh, spec))
    if isinstance(s, Exception):
        return
    got = C.run(lambda: s.devices_indices_map(shape))
    if isinstance(got, Exception) or sk.UNCONSTRAINED in s.spec:
        return
    C.compared("NamedSharding index map")
    if dict(got) != jax_named(s).devices_indices_map(shape):
        raise Finding(f"NamedSharding({mesh}, {spec}) places pieces of {shape} unlike jax")


def abstract_mesh_target(data: Any) -> None:
    """Abstract meshes of any sizes (products past what XLA's tile arithmetic can count killed the process with
    SIGFPE), shardings over them, and the empty mesh's whole interface."""
    sizes = data.draw(st.lists(small_ints, max_size=3))
    names_ = data.draw(axis_names)
    entries = data.draw(st.lists(spec_entries, max_size=3))
    C.mark("abstract_mesh", (sizes, names_, entries))
    mesh = C.run(lambda: sk.AbstractMesh(tuple(sizes), names_))
    if not isinstance(mesh, Exception):
        s = C.run(lambda: sk.NamedSharding(mesh, P(*entries)))
        if not isinstance(s, Exception):
            C.run(lambda: s.to_hlo(len(entries)))
            C.run(lambda: s.to_sdy(len(entries)))
            C.run(lambda: s.shard_shape((mesh.size,) * len(entries)))
    empty = sk.make_mesh((), ())
    what = data.draw(st.sampled_from(["is_multi_process", "local_devices", "flat_devices", "pickle", "str", "size"]))
    read = {"pickle": lambda: pickle.loads(pickle.dumps(empty)), "str": lambda: str(empty)}
    out = C.run(read.get(what, lambda: getattr(empty, what)))
    C.compared("the empty mesh")
    if what == "pickle" and out is not empty:
        raise Finding("the empty mesh unpickles as another object")


@st.composite
def target_specs(draw: Any) -> str:
    """Compile-target names: mostly of the grammar (generations, dimensions, slices, cpu counts), then mutated."""
    gen = draw(st.sampled_from(["v4", "v5p", "v5e", "v6e", "v5", "v9", "", "V5E"]))
    dims = "x".join(str(d) for d in draw(st.lists(st.sampled_from([0, 1, 2, 4, 3, 16, 10**20]), max_size=4)))
    slices = draw(st.sampled_from(["", ",slices=2", ",slices=0", ",slices=-1", ",slices=99999"]))
    count = draw(st.sampled_from(["", ":0", ":1", ":8", ":16", ":4097", ":-3", ":x"]))
    spec = draw(st.sampled_from([f"tpu-{gen}:{dims}{slices}", f"cpu{count}", f" cpu{count} ", f"tpu-{gen}"]))
    if draw(st.booleans()):
        i = draw(st.integers(0, len(spec)))
        spec = spec[:i] + draw(st.text(max_size=3)) + spec[i:]
    return spec


def target_target(spec: str) -> None:
    """A target name is a target or a named error; a program compiled for a small one reports and refuses calls."""
    from shardkit.executor import targets

    C.mark("target", spec)
    t = C.run(lambda: targets.target(spec, partitions=4))
    if isinstance(t, Exception) or len(t.devices) > 16:
        return
    n = len(t.devices)
    s = sk.NamedSharding(sk.AbstractMesh((n,), ("x",)), P("x"))
    lowered = sk.jit(lambda a: (a * 2).sum()).lower(sk.ShapeDtypeStruct((2 * n, 3), np.float32, sharding=s))
    compiled = C.run(lambda: lowered.compile(target=t))
    if isinstance(compiled, Exception):
        return
    kinds = {c.kind for c in compiled.communication().collectives}
    if n > 1 and "all-reduce" not in kinds:
        raise Finding(f"a sum over {n} devices of {spec!r} compiled without an all-reduce: {kinds}")
    held = compiled.memory().arguments  # TPU layouts pad small arrays to their tiles
    if held < 2 * 3 * 4 or (t.platform == "cpu" and held != 2 * 3 * 4):
        raise Finding(f"{spec!r}: each device holds 2x3 f32, but memory() says {held} bytes")
    C.compared("a target's collectives and memory")
    if not isinstance(C.run(lambda: compiled(np.ones((2 * n, 3), np.float32))), ValueError):
        raise Finding(f"a program compiled for {spec!r} ran")


@st.composite
def mhlo_sharding_values(draw: Any) -> bytes:
    """What an ``mhlo.sharding`` attribute may hold: HLO text, a serialized OpSharding (perhaps cut or bit-flipped),
    whitespace, or bytes that are neither."""
    kind = draw(st.sampled_from(["text", "proto", "proto", "blank", "bytes"]))
    if kind == "text":
        return draw(hlo_texts()).encode()
    if kind == "blank":
        return draw(st.sampled_from([b"", b" ", b"\n\t"]))
    if kind == "bytes":
        return draw(st.binary(max_size=24))
    data = bytearray(draw(op_shardings()).SerializeToString())
    for _ in range(draw(st.integers(0, 2))):
        if data:
            at = draw(st.integers(0, len(data) - 1))
            data[at] ^= 1 << draw(st.integers(0, 7))
    return bytes(data[: draw(st.integers(0, len(data)))]) if draw(st.booleans()) else bytes(data)


def mhlo_sharding_target(value: bytes) -> None:
    """``mhlo.read`` reads every form XLA reads, or names what is wrong; a proto it accepts means what the same
    proto, checked and converted, means."""
    C.mark("mhlo_sharding", value)
    with context():
        got = C.run(lambda: mhlo.read(ir.StringAttr.get(value)))
    if isinstance(got, Exception) or got is None or value.lstrip().startswith(b"{"):
        return
    proto = OpSharding()
    proto.ParseFromString(value)
    C.compared("a proto mhlo.sharding against its OpSharding")
    if got != mhlo.checked(proto):
        raise Finding(f"mhlo.sharding proto {value!r} reads as {got!r}, its OpSharding as {mhlo.checked(proto)!r}")


def other_shardings_target(data: Any) -> None:
    devices = data.draw(st.lists(device_like, max_size=9) | st.just(DEVS))
    ops = data.draw(
        st.lists(st.tuples(st.sampled_from(["reshape", "replicate", "T", "transpose"]), small_ints), max_size=3)
    )
    shape = data.draw(shapes)
    pmap_dim = data.draw(st.sampled_from([0, 1, None, -1, "a"]))
    hlo = data.draw(st.sampled_from(["{replicated}", "{devices=[2]0,1}", "{maximal device=1}"]))
    C.mark("other_shardings", (devices, ops, shape, pmap_dim, hlo))
    for make in (
        lambda: sk.PositionalSharding(devices),
        lambda: sk.PmapSharding(devices, pmap_dim),
        lambda: sk.SingleDeviceSharding(devices[0] if devices else None),
        lambda: sk.GSPMDSharding(devices, hlo),
    ):
        s = C.run(make)
        if isinstance(s, sk.PositionalSharding):
            for op, arg in ops:
                step = {
                    "reshape": lambda s=s, arg=arg: s.reshape(arg, -1),
                    "replicate": lambda s=s, arg=arg: s.replicate(arg),
                    "T": lambda s=s: s.T,
                    "transpose": lambda s=s, arg=arg: s.transpose(arg),
                }[op]
                nxt = C.run(step)
                if not isinstance(nxt, Exception):
                    s = nxt
        if isinstance(s, sk.Sharding):
            C.run(lambda s=s: s.devices_indices_map(shape))
            C.run(lambda s=s: sk.device_put(np.zeros(shape if isinstance(shape, tuple) else ()), s))


dtypes = st.sampled_from(
    ["<f4", ">f4", ">i4", "<i8", ">f8", "?", "u1", ">c8", "<c16", "f2", ml_dtypes.bfloat16, "O", "<U2", "M8[s]", "V4"]
)


@st.composite
def host_values(draw: Any) -> np.ndarray:
    shape = tuple(draw(st.lists(st.sampled_from([0, 1, 2, 4, 8, 3]), max_size=3)))
    dtype = np.dtype(draw(dtypes))
    base = np.arange(max(1, int(np.prod(shape))) * 4)
    if dtype.kind in "biufc" or dtype == ml_dtypes.bfloat16:
        value = (base % 7).astype(dtype)[: int(np.prod(shape))].reshape(shape)
    else:
        value = np.zeros(shape, dtype)
    view = draw(st.sampled_from(["none", "reverse", "stride", "broadcast", "transpose", "fortran"]))
    if view == "reverse" and value.ndim:
        value = value[::-1]
    elif view == "stride" and value.ndim:
        value = np.repeat(value, 2, axis=0)[::2]
    elif view == "broadcast" and value.ndim:
        value = np.broadcast_to(value[:1], value.shape)
    elif view == "transpose":
        value = value.T
    elif view == "fortran":
        value = np.asfortranarray(value)
    return value


def device_put_target(value: np.ndarray, spec: Any, kind: int) -> None:
    C.mark("device_put", (value, value.dtype, value.strides, spec, kind))
    shardings = {
        0: lambda: sk.NamedSharding(MESH, P(*spec)),
        1: lambda: sk.SingleDeviceSharding(DEVS[3]),
        2: lambda: sk.PositionalSharding(DEVS).reshape((8,) + (1,) * max(0, value.ndim - 1)),
        3: lambda: sk.GSPMDSharding(DEVS, "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"),
    }
    s = C.run(shardings[kind])
    if isinstance(s, Exception):
        return
    x = C.run(lambda: sk.device_put(value, s))
    if isinstance(x, Exception):
        return
    native = value.astype(x.dtype)
    C.compared("device_put value")
    if not np.array_equal(np.asarray(x), native, equal_nan=True):
        raise Finding(f"device_put of {value.dtype} {value.shape} strides {value.strides} came back different")
    for shard in x.addressable_shards:
        if not np.array_equal(np.asarray(shard.data), native[shard.index]):
            raise Finding(f"device_put of {value.dtype} {value.shape}: the piece on {shard.device} is wrong")


def _fresh() -> sk.Array:
    return sk.device_put(np.arange(32, dtype=np.float32).reshape(8, 4), sk.NamedSharding(MESH, P("x", "y")))


_ADD = sk.jit(lambda a, b: a + b)
_ADD_DONATE = sk.jit(lambda a, b: a + b, donate_argnums=(0,))
_ADD_DONATE_BOTH = sk.jit(lambda a, b: a + b, donate_argnums=(0, 1))


def calls_target(data: Any) -> None:
    steps = data.draw(
        st.lists(
            st.sampled_from(
                [
                    "delete_piece",
                    "delete",
                    "call",
                    "donate",
                    "donate_both",
                    "from_pieces",
                    "reshard",
                ]
            ),
            min_size=1,
            max_size=4,
        )
    )
    picks = data.draw(st.lists(st.integers(0, 7), min_size=8, max_size=8))
    C.mark("calls", (steps, picks))
    a, b = _fresh(), _fresh()
    expected = np.arange(32, dtype=np.float32).reshape(8, 4) * 2
    # A piece freed through a shard's data is jax's hazard in C++ dispatch (jax's is_deleted() reads the first
    # buffer): jaxlib 0.10 crashes, 0.12 raises and leaves the devices hung for every later computation, under
    # jax.jit too. shardkit's promise is its own checked path, so a call after such a step runs a fresh program,
    # whose first call is checked.
    spoiled = False
    for step, pick in zip(steps, picks):
        if step == "delete_piece":
            C.run(lambda pick=pick: a.addressable_data(pick).delete())
            spoiled = True
        elif step == "delete":
            a.delete()
        elif step == "from_pieces":
            pieces = C.run(lambda: [s.data for s in a.addressable_shards])
            if not isinstance(pieces, Exception):
                if pick % 2:
                    pieces = pieces[::-1]
                C.run(lambda pieces=pieces: sk.make_array_from_single_device_arrays(a.shape, a.sharding, pieces))
        elif step == "reshard":
            C.run(lambda: sk.device_put(a, sk.NamedSharding(MESH, P("y"))))
        else:
            f = {"call": _ADD, "donate": _ADD_DONATE, "donate_both": _ADD_DONATE_BOTH}[step]
            args = (a, a) if pick % 2 else (a, b)
            if spoiled:
                f = C.run(lambda f=f, args=args: f.lower(*args).compile())
                if isinstance(f, Exception):
                    continue
            out = C.run(lambda f=f, args=args: f(*args))
            if not isinstance(out, Exception) and not np.array_equal(np.asarray(out), expected):
                raise Finding(f"{step} gave a wrong result after {steps}")


def lowering_target(data: Any) -> None:
    in_s = data.draw(
        st.sampled_from([None, P("x"), "x", sk.NamedSharding(MESH, P("x")), sk.NamedSharding(MESH, P("x", "y"))])
    )
    out_s = data.draw(st.sampled_from([None, sk.NamedSharding(MESH, P("y")), sk.NamedSharding(MESH, P(None, "x")), 3]))
    donate = data.draw(st.sampled_from([(), 0, 1, (0, 0), -1, None, 5, "0"]))
    static = data.draw(st.sampled_from([(), None, 1, 2]))
    shape = data.draw(st.sampled_from([(8, 4), (8,), (3, 4), (), (0, 4), (8, 4, 2)]))
    dtype = data.draw(st.sampled_from([np.float32, np.int32, ">f4", object]))
    C.mark("lowering", (in_s, out_s, donate, static, shape, dtype))
    f = C.run(
        lambda: sk.jit(
            lambda a, b=1: a * 2, in_shardings=in_s, out_shardings=out_s, donate_argnums=donate, static_argnums=static
        )
    )
    if isinstance(f, Exception):
        return
    arg = C.run(lambda: np.ones(shape, dtype))
    if not isinstance(arg, Exception):
        out = C.run(lambda: f(arg))
        if (
            isinstance(out, sk.Array)
            and dtype in (np.float32, np.int32)
            and not np.array_equal(np.asarray(out), arg * 2)
        ):
            raise Finding(f"jit({in_s}, {out_s}) of {shape} {dtype} computed a wrong result")


def cache_target(data: Any) -> None:
    """Entries swapped, copied over each other, truncated or flipped: every program still computes its own result."""
    damage = data.draw(st.sampled_from(["swap", "copy", "truncate", "flip", "empty", "none"]))
    k = data.draw(st.integers(2, 9))
    C.mark("cache", (damage, k))
    with tempfile.TemporaryDirectory() as d:
        sk.executor.set_cache_dir(d)
        try:
            x = np.ones((8, 4), np.float32)
            programs = [lambda a, k=k: a * k, lambda a, k=k: a + k]
            for fn in programs:
                sk.jit(fn)(x)
            entries = sorted(p for p in os.listdir(d) if p.endswith(".skx"))
            paths = [os.path.join(d, p) for p in entries]
            blobs = [_read(p) for p in paths]
            if damage == "swap":
                _write(paths[0], blobs[1])
                _write(paths[1], blobs[0])
            elif damage == "copy":
                _write(paths[1], blobs[0])
            elif damage == "truncate":
                _write(paths[0], blobs[0][: len(blobs[0]) // 2])
            elif damage == "flip":
                blob = bytearray(blobs[0])
                blob[len(blob) // 2] ^= 0xFF
                _write(paths[0], bytes(blob))
            elif damage == "empty":
                _write(paths[0], b"")
            sk.clear_caches()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for fn in programs:
                    got = C.run(lambda fn=fn: np.asarray(sk.jit(fn)(x)))
                    if isinstance(got, Exception) or not np.array_equal(got, fn(x)):
                        raise Finding(f"after {damage}, a cached program computed {got!r}")
        finally:
            sk.executor.set_cache_dir(None)
            sk.clear_caches()


@st.composite
def sharded_modules(draw: Any) -> str:
    """A StableHLO module of another compiler's kind, without ``mhlo.num_partitions``: a chain of ops on an
    8x8 value in @main, in called functions, in while loops (their state's tuple sharding) and in jax's GSPMD
    manual pattern, each sharding replicated, maximal, tiled over one device count (sometimes over another, or
    over one device), or none."""
    n = draw(st.sampled_from([2, 4, 8]))
    functions: list[str] = []

    def tiled(count: int) -> str:
        forms = [f"{{devices=[{count},1]<=[{count}]}}", f"{{devices=[1,{count}]<=[{count}]}}"]
        if count >= 4:
            forms += [f"{{devices=[2,{count // 2}]<=[{count}]}}", f"{{devices=[2,1,{count // 2}]<=[{count}] "]
            forms[-1] += "last_tile_dim_replicate}"
        return draw(st.sampled_from(forms))

    def sharding(scalar: bool = False) -> str | None:
        kind = draw(st.sampled_from(["none", "replicated", "maximal", "tiled", "tiled", "other", "one device"]))
        if kind == "maximal":
            return f"{{maximal device={draw(st.integers(0, n - 1) if draw(st.integers(0, 9)) else st.integers(0, 7))}}}"
        if kind == "tiled" and not scalar:
            return tiled(n)
        if kind == "other" and not scalar and draw(st.integers(0, 3)) == 0:
            return tiled(draw(st.sampled_from([2, 4, 8])))
        if kind == "one device" and not scalar:
            return "{devices=[1,1]<=[1]}"
        return None if kind == "none" else "{replicated}"

    def attr(s: str | None) -> str:
        return "" if s is None else f' {{mhlo.sharding = "{s}"}}'

    def chain(v: str, prefix: str, depth: int) -> tuple[list[str], str]:
        lines = []
        for i in range(draw(st.integers(1, 3))):
            out = f"%{prefix}{i}"
            step = draw(st.sampled_from(["op", "op", "constraint", "call", "while", "manual"] if depth < 2 else ["op"]))
            t = "tensor<8x8xf32>"
            if step == "op":
                op = draw(st.sampled_from(["negate", "abs", "add"]))
                operands = f"{v}, {v}" if op == "add" else v
                lines.append(f"{out} = stablehlo.{op} {operands}{attr(sharding())} : {t}")
            elif step == "constraint":
                s = sharding() or "{replicated}"
                lines.append(f'{out} = stablehlo.custom_call @Sharding({v}) {{mhlo.sharding = "{s}"}} : ({t}) -> {t}')
            elif step == "call":
                name = f"f{len(functions)}"
                functions.append("")  # reserve the name; a nested call takes the next one
                body, result = chain("%arg0", f"{name}_", depth + 1)
                arg, res = sharding(), sharding()
                functions[int(name[1:])] = (
                    f"func.func private @{name}(%arg0: {t}{attr(arg)}) -> ({t}{attr(res)}) {{\n  "
                    + "\n  ".join(body)
                    + f"\n  return {result} : {t}\n}}"
                )
                lines.append(f"{out} = call @{name}({v}) : ({t}) -> {t}")
            elif step == "while":
                counter, value = sharding(scalar=True) or "{replicated}", sharding() or "{replicated}"
                body, result = chain(f"%{prefix}x{i}", f"{prefix}b{i}_", depth + 1)
                lines += [
                    f"%{prefix}c{i} = stablehlo.constant dense<0> : tensor<i32>",
                    f"%{prefix}w{i}, {out} = stablehlo.while(%{prefix}i{i} = %{prefix}c{i}, %{prefix}x{i} = {v}) : "
                    f'tensor<i32>, {t} attributes {{mhlo.sharding = "{{{counter}, {value}}}"}}',
                    "cond {",
                    f"  %{prefix}k{i} = stablehlo.constant dense<2> : tensor<i32>",
                    f"  %{prefix}lt{i} = stablehlo.compare LT, %{prefix}i{i}, %{prefix}k{i} : "
                    "(tensor<i32>, tensor<i32>) -> tensor<i1>",
                    f"  stablehlo.return %{prefix}lt{i} : tensor<i1>",
                    "} do {",
                    f"  %{prefix}one{i} = stablehlo.constant dense<1> : tensor<i32>",
                    f"  %{prefix}n{i} = stablehlo.add %{prefix}i{i}, %{prefix}one{i}{attr(sharding(scalar=True))} : "
                    "tensor<i32>",
                    *(f"  {line}" for line in body),
                    f"  stablehlo.return %{prefix}n{i}, {result} : tensor<i32>, {t}",
                    "}",
                ]
            else:
                rows = f"tensor<{8 // n}x8xf32>"
                full = f"{{devices=[{n},1]<=[{n}]}}"
                lines += [
                    f'%{prefix}s{i} = stablehlo.custom_call @Sharding({v}) {{mhlo.sharding = "{full}"}} : ({t}) -> {t}',
                    f"%{prefix}m{i} = stablehlo.custom_call @SPMDFullToShardShape(%{prefix}s{i}) "
                    f'{{mhlo.sharding = "{{manual}}"}} : ({t}) -> {rows}',
                    f'%{prefix}a{i} = stablehlo.abs %{prefix}m{i} {{mhlo.sharding = "{{manual}}"}} : {rows}',
                    f"{out} = stablehlo.custom_call @SPMDShardToFullShape(%{prefix}a{i}) "
                    f'{{mhlo.sharding = "{full}"}} : ({rows}) -> {t}',
                ]
            v = out
        return lines, v

    body, result = chain("%arg0", "v", 0)
    t = "tensor<8x8xf32>"
    main = (
        f"func.func @main(%arg0: {t}{attr(sharding())}) -> ({t}{attr(sharding())}) {{\n  "
        + "\n  ".join(body)
        + f"\n  return {result} : {t}\n}}"
    )
    return "\n".join([main, *functions])


_LOAD_INPUT = np.arange(64, dtype=np.float32).reshape(8, 8) - 32


def load_target(text: str) -> None:
    """A module of shardings in bodies, tuples, maximal and replicated pieces loads on the partition count XLA
    takes it for and runs with XLA's numbers and output sharding where @main gives one (XLA alone: jaxlib's
    client, no shardkit); a module shardkit refuses, or whose compile XLA refuses, XLA takes for no partition
    count but 1."""
    from shardkit.lowering import load
    from tests.test_load_foreign import xla_run, xla_takes

    C.mark("load", text)
    lowered = C.run(lambda: sk.load(text))
    if isinstance(lowered, Exception):
        taken = [n for n in range(2, 9) if xla_takes(text, n)]
        if taken or not isinstance(lowered, load.LoadError):
            raise Finding(f"sk.load refused a module XLA compiles for {taken} partitions: {lowered}\n{text}")
        C.compared("a refused module against XLA")
        return
    n = load.partitions(text)
    try:
        compiled = lowered.compile()
    except jax.errors.JaxRuntimeError as e:
        taken = [k for k in range(2, 9) if xla_takes(text, k)]
        if taken:
            raise Finding(f"shardkit chose {n} partitions, XLA refused them but takes {taken}: {e}\n{text}") from e
        C.compared("a module XLA refuses")
        return
    got = C.run(lambda: compiled(_LOAD_INPUT))
    if isinstance(got, Exception):
        raise Finding(f"a loaded module did not run: {got}\n{text}")
    ((want, sharding),) = xla_run(text, n, [_LOAD_INPUT], [got.shape])
    C.compared("a loaded module against XLA")
    if not np.array_equal(np.asarray(got), want):
        raise Finding(f"a module loaded on {n} partitions computes other numbers than XLA:\n{text}")
    result_sharded = "-> (tensor<8x8xf32> {mhlo" in text.split("\n", 1)[0]  # else XLA chooses, as under jax
    if result_sharded and not got.sharding.is_equivalent_to(sharding, 2):
        raise Finding(f"a module loaded on {n} partitions gives {got.sharding}, XLA {sharding}:\n{text}")


# -- tuple shardings at every entry point; every HLO sharding form in every pass and report ---------------------

_SINGLES = [
    "{replicated}",
    "{manual}",
    "{unknown}",
    "{unreduced}",
    "{maximal device=1}",
    "{maximal device=9}",
    "{devices=[2]0,1}",
    "{devices=[2,4]<=[8]}",
    "{devices=[4,1,2]<=[8] last_tile_dim_replicate}",
    "{devices=[2,2,2]<=[8] last_tile_dims={manual}}",
    "{devices=[2,2,2]<=[8] last_tile_dims={unreduced}}",
    "{devices=[2,1,2,2]<=[8] last_tile_dims={manual, replicated}}",
    "{devices=[8,1]<=[8] shard_as 1}",
    "{devices=[1,8]<=[8] shard_like 2}",
    "{unknown shard_as 1}",
    "{unknown shard_like 2}",
    '{maximal device=3 metadata={op_name="a}b"}}',
]


def _proto(element: str, depth: int) -> OpSharding:
    """The OpSharding of ``element``, wrapped in ``depth`` tuples (XLA's parser takes no nested tuple; a proto can)."""
    proto = mhlo.parse(element).to_proto()
    for _ in range(depth):
        outer = OpSharding()
        outer.type = OpShardingType.TUPLE
        outer.tuple_shardings = [proto]
        proto = outer
    return proto


@st.composite
def tuple_shardings(draw: Any) -> tuple[str, Any]:
    """A tuple sharding as text, an HloSharding or an OpSharding proto; nested ones as jaxlib builds them from a
    proto (XLA's parser reads none)."""
    elements = draw(st.lists(st.sampled_from(_SINGLES), min_size=1, max_size=3))
    depth = draw(st.sampled_from([1, 1, 1, 2, 3]))
    form = draw(st.sampled_from(["text", "object", "proto"]) if depth == 1 else st.sampled_from(["object", "proto"]))
    if form == "text":
        return form, "{" + ", ".join(elements) + "}"
    proto = OpSharding()
    proto.type = OpShardingType.TUPLE
    proto.tuple_shardings = [_proto(e, depth - 1) for e in elements]
    return form, proto if form == "proto" else _jaxlib.HloSharding.from_proto(proto)


def _with_context(fn: Callable[[], Any]) -> Any:
    with context(), ir.Location.unknown():
        return fn()


def _tuple_entry_points(hlo: Any) -> dict[str, Callable[[], Any]]:
    """Every public function that takes an HloSharding, its text or its proto, on ``hlo`` (any of the three)."""
    from shardkit.sharding import from_hlo

    def obj() -> Any:
        return mhlo.parse(hlo) if isinstance(hlo, str) else mhlo.checked(hlo)

    def attr() -> Any:
        return ir.StringAttr.get(hlo if isinstance(hlo, str) else repr(obj()))

    return {
        "parse/checked": obj,
        "one_value": lambda: mhlo.one_value(obj(), "f"),
        "permuted": lambda: mhlo.permuted(obj(), list(range(8))),
        "with_trailing_dims": lambda: mhlo.with_trailing_dims(obj(), 1, 1),
        "tiling": lambda: mhlo.tiling(obj(), 2),
        "is_replicated": lambda: mhlo.is_replicated(obj()),
        "equivalent": lambda: mhlo.equivalent(obj(), obj()),
        "equivalent to one value": lambda: mhlo.equivalent(obj(), mhlo.parse("{replicated}")),
        "hlo_to_sdy": lambda: sdy_forms.hlo_to_sdy(obj(), 2),
        "GSPMDSharding": lambda: sk.GSPMDSharding(DEVS, hlo),
        "from_hlo": lambda: from_hlo(obj(), DEVS, MESH, 2),
        "NamedSharding.from_hlo": lambda: sk.NamedSharding.from_hlo(MESH, obj(), 2),
        "is_equivalent_to": lambda: sk.NamedSharding(MESH, P("x")).is_equivalent_to(
            _jaxlib.gspmd_sharding(DEVS, obj(), None), 2
        ),
        "GSPMDSharding.from_jax": lambda: sk.GSPMDSharding.from_jax(_jaxlib.gspmd_sharding(DEVS, obj(), None), 2),
        "read": lambda: _with_context(lambda: mhlo.read(attr())),
        "split": lambda: _with_context(lambda: mhlo.split(attr(), 2)),
        "join": lambda: _with_context(
            lambda: mhlo.join([attr(), attr()], [ir.RankedTensorType.get([8, 8], ir.F32Type.get())] * 2)
        ),
    }


def tuple_sharding_target(data: Any) -> None:
    """Each public function that takes an HloSharding refuses a tuple with a named error where one value's sharding
    is expected, or reads it element by element where a tuple is legal; never an abort (XLA aborts when asked for
    a tuple's devices or tiles: fuzz-2026-11c)."""
    form, hlo = data.draw(tuple_shardings())
    points = _tuple_entry_points(hlo)
    name = data.draw(st.sampled_from(sorted(points)))
    C.mark("tuple_sharding", (form, str(hlo), name))
    out = C.run(points[name])
    if isinstance(out, Exception):
        if name in ("parse/checked", "is_replicated", "equivalent", "read", "split") and form == "text":
            raise Finding(f"{name} refused the well-formed tuple {hlo!r}: {out}")
        return
    if name == "one_value" or name in ("hlo_to_sdy", "GSPMDSharding", "from_hlo", "NamedSharding.from_hlo"):
        raise Finding(f"{name} took the tuple sharding {hlo!r} for one value's: {out!r}")
    if name == "is_replicated":
        C.compared("a tuple's is_replicated against its elements'")
        if out != all(mhlo.is_replicated(e) for e in points["parse/checked"]().tuple_elements()):
            raise Finding(f"is_replicated({hlo!r}) is {out}, unlike its elements")
    if name == "equivalent" and out is not True:
        raise Finding(f"equivalent({hlo!r}, itself) is {out}")
    if name == "equivalent to one value" and out is not False:
        raise Finding(f"the tuple {hlo!r} is equivalent to one value's sharding")


_MANUAL = "manual"
_MANUAL_FORMS = [f for f in _SINGLES if _MANUAL in f]


def _proto_of(text: str) -> bytes:
    return mhlo.parse(text).to_proto().SerializeToString()


def _mlir_string(value: str | bytes) -> str:
    """``value`` as an MLIR string literal (a serialized proto's bytes as ``\\XX`` escapes)."""
    data = value.encode() if isinstance(value, str) else value
    return '"' + "".join(chr(b) if 0x20 <= b < 0x7F and b not in (0x22, 0x5C) else f"\\{b:02X}" for b in data) + '"'


@st.composite
def sharding_forms(draw: Any) -> str | bytes:
    """An ``mhlo.sharding`` of any form XLA's parser accepts (and a few it refuses): each single form, tuples of
    them (the empty one too), the mesh-axes text, a nested tuple's text, or a form's serialized proto."""
    kind = draw(st.sampled_from(["single", "single", "tuple", "v3", "odd", "proto"]))
    if kind == "single":
        return draw(st.sampled_from(_SINGLES))
    if kind == "tuple":
        return "{" + ", ".join(draw(st.lists(st.sampled_from(_SINGLES), max_size=3))) + "}"
    if kind == "v3":
        return draw(st.sampled_from(["{mesh['x'=8], [{'x'}, {}]}", "{mesh['x'=2,'y'=4], [{'y'}, {'x'}]}"]))
    if kind == "odd":
        return draw(st.sampled_from(["{{{replicated}}}", "{}", "", " ", "{replicated}{replicated}"]))
    return _proto_of(draw(st.sampled_from(_SINGLES)))


@st.composite
def form_modules(draw: Any) -> str:
    """A module whose arguments, results and ops (one result, and two: an optimization barrier) carry sharding
    forms, with or without ``mhlo.num_partitions``."""

    def attr() -> str:
        return "" if draw(st.integers(0, 2)) == 0 else f" {{mhlo.sharding = {_mlir_string(draw(sharding_forms()))}}}"

    t = "tensor<8x8xf32>"
    head = draw(st.sampled_from(["module", "module attributes {mhlo.num_partitions = 8 : i32}"]))
    lines = [
        f"{head} {{",
        f"func.func @main(%arg0: {t}{attr()}) -> ({t}{attr()}) {{",
        f"  %0 = stablehlo.negate %arg0{attr()} : {t}",
        f'  %1:2 = "stablehlo.optimization_barrier"(%0, %arg0){attr()} : ({t}, {t}) -> ({t}, {t})',
        f"  %2 = stablehlo.add %1#0, %1#1{attr()} : {t}",
        f"  return %2 : {t}",
        "}",
        "}",
    ]
    return "\n".join(lines)


def sharding_forms_target(data: Any) -> None:
    """Every shardkit pass, ``sk.load`` and the reports on a module of any sharding forms: a result, or a named
    error (a pass's diagnostics located at their ops); never an abort or a traceback of another kind. A loaded
    program computes -x + x = 0."""
    from shardkit import passes
    from shardkit.passes import registry

    text = data.draw(form_modules())
    name = data.draw(st.sampled_from([*registry.pass_names(), "load"]))
    C.mark("sharding_forms", (name, text))
    if name != "load":
        module = C.run(lambda: ir.Module.parse(text, context()))
        if isinstance(module, Exception):
            return
        out = C.run(lambda: passes.PassManager(name).run(module))
        if isinstance(out, passes.PassError) and out.what != "crashed":
            unlocated = [d for d in out.diagnostics if not d.located and "'" not in d.message[:40]]
            if any("Traceback" in d.message for d in out.diagnostics):
                raise Finding(f"pass {name} reported a traceback: {out}")
            if unlocated and name not in ("propagate", "auto-partition"):
                C.compared("an unlocated finding of a shardkit pass")
        return
    lowered = C.run(lambda: sk.load(text))
    if isinstance(lowered, Exception):
        return
    C.run(lambda: lowered.shardings())
    C.run(lambda: lowered.communication())
    if _MANUAL in text or any(f'"{_mlir_string(_proto_of(f))[1:-1]}"' in text for f in _MANUAL_FORMS):
        # XLA's GSPMD partitioner aborts on manual shardings outside its full-to-shard / shard-to-full pattern
        # (load_target generates that pattern); shardkit does not decide which programs follow it
        C.compared("a program with manual shardings, not compiled")
        return
    try:
        compiled = lowered.compile()
    except jax.errors.JaxRuntimeError:  # XLA refused the program, with its message
        C.compared("a program XLA refuses")
        return
    got = C.run(lambda: compiled(np.ones((8, 8), np.float32)))
    C.run(lambda: compiled.communication())
    if isinstance(got, Exception):
        return
    C.compared("a loaded program of any sharding forms")
    if not np.array_equal(np.asarray(got), np.zeros((8, 8), np.float32)):
        raise Finding(f"a program of sharding forms computed {np.asarray(got)!r}:\n{text}")


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _write(path: str, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)


# -- the campaign ---------------------------------------------------------------------------------------------

TARGETS: dict[str, tuple[Callable, dict[str, Any], float]] = {
    # name: (test body, its strategies, share of the time)
    "hlo_text": (hlo_text_target, {"text": hlo_texts()}, 3),
    "op_sharding": (op_sharding_target, {"proto": op_shardings(), "k": st.integers(1, 8)}, 1),
    "sdy_text": (sdy_text_target, {"text": sdy_texts()}, 2),
    "sdy_model": (sdy_model_target, {"data": st.data()}, 2),
    "mesh": (mesh_target, {"data": st.data()}, 2),
    "abstract_mesh": (abstract_mesh_target, {"data": st.data()}, 1),
    "mhlo_sharding": (mhlo_sharding_target, {"value": mhlo_sharding_values()}, 1),
    "other_shardings": (other_shardings_target, {"data": st.data()}, 1),
    "device_put": (
        device_put_target,
        {"value": host_values(), "spec": st.lists(spec_entries, max_size=2), "kind": st.integers(0, 3)},
        2,
    ),
    "calls": (calls_target, {"data": st.data()}, 2),
    "lowering": (lowering_target, {"data": st.data()}, 1),
    "cache": (cache_target, {"data": st.data()}, 1),
    "target": (target_target, {"spec": target_specs()}, 1),
    "load": (load_target, {"text": sharded_modules()}, 1),
    "tuple_sharding": (tuple_sharding_target, {"data": st.data()}, 1),
    "sharding_forms": (sharding_forms_target, {"data": st.data()}, 1),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--marker", default=None, help="file that always holds the case being run")
    parser.add_argument("--only", nargs="*", default=None, help="run only these targets")
    args = parser.parse_args(argv)
    global C
    C = Campaign(args.marker)
    base_seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    targets = {n: t for n, t in TARGETS.items() if args.only is None or n in args.only}
    total_share = sum(share for _, _, share in targets.values())
    per_target: dict[str, int] = {}
    for i, (name, (body, strategies, share)) in enumerate(targets.items()):
        deadline = time.monotonic() + args.seconds * share / total_share
        before = C.cases
        chunk = 0
        while time.monotonic() < deadline:
            test = settings(
                max_examples=25,
                deadline=None,
                database=None,
                derandomize=False,
                suppress_health_check=list(HealthCheck),
                report_multiple_bugs=False,
            )(given(**strategies)(body))
            try:
                seed(base_seed + 1000 * i + chunk)(test)()
            except Finding as e:
                C.findings.append(f"{name}: {e}")
                break
            except Exception as e:  # a strategy or the harness itself failed: report it, never hide it
                C.findings.append(f"{name}: harness error {type(e).__name__}: {e}\n{traceback.format_exc()}")
                break
            chunk += 1
        per_target[name] = C.cases - before
    json.dump(
        {"seed": base_seed, "cases": C.cases, "per_target": per_target, "outcomes": C.outcomes, "findings": C.findings},
        sys.stdout,
        indent=1,
    )
    print()
    return 1 if C.findings else 0


if __name__ == "__main__":
    sys.exit(main())
