"""jax 0.10 as the oracle: the same mesh and spec built on jax's side, and jax's answers (private calls allowed
here only, because tests compare against jax's own internals where they have no public form)."""

from __future__ import annotations

import contextlib

import jax
import numpy as np
from jax._src import sharding_impls as jax_sharding_impls
from jaxlib import xla_client as xc

import shardkit as sk
from shardkit.partition_spec import axes_of

DEVS = jax.devices()


def jax_mesh(mesh: sk.Mesh) -> jax.sharding.Mesh:
    return jax.sharding.Mesh(mesh.devices, mesh.axis_names)


def jax_spec(spec: sk.PartitionSpec) -> jax.sharding.PartitionSpec:
    return jax.sharding.PartitionSpec(
        *(jax.sharding.PartitionSpec.UNCONSTRAINED if e is sk.UNCONSTRAINED else e for e in spec)
    )


def jax_named(s: sk.NamedSharding) -> jax.sharding.NamedSharding:
    return jax.sharding.NamedSharding(jax_mesh(s.mesh), jax_spec(s.spec))


def jax_gspmd(devices, hlo_text: str):
    return jax_sharding_impls.GSPMDSharding(tuple(devices), xc.HloSharding.from_string(hlo_text))


def jax_replica_ids(s, shape):
    return jax_sharding_impls.device_replica_id_map(s, shape)


def jax_hlo_text(s: jax.sharding.NamedSharding, ndim: int) -> str:
    return repr(s._to_xla_hlo_sharding(ndim))


def jax_sdy_text(s: jax.sharding.NamedSharding, ndim: int) -> str:
    from jax.interpreters import mlir

    with mlir.make_ir_context():
        return str(s._to_sdy_sharding(ndim).build({}))


def random_case(rng: np.random.Generator):
    """A mesh over 1-3 axes of permuted devices, a valid spec and a shape it divides."""
    n_axes = int(rng.integers(1, 4))
    sizes = []
    budget = 8
    for _ in range(n_axes):
        choices = [s for s in (1, 2, 4, 8) if budget % s == 0 and s <= budget]
        size = int(rng.choice(choices))
        sizes.append(size)
        budget //= size
    names = tuple(rng.permutation(["x", "y", "z", "w"])[:n_axes].tolist())
    count = int(np.prod(sizes))
    order = rng.permutation(8)[:count]
    mesh = sk.Mesh(np.array([DEVS[i] for i in order], dtype=object).reshape(sizes), names)
    rank = int(rng.integers(1, 4))
    free = [str(n) for n in rng.permutation(names)]  # plain str: jax interns specs, np.str_ would leak into reprs
    entries = []
    for _ in range(int(rng.integers(0, rank + 1))):
        kind = rng.integers(0, 4)
        if kind == 0 or not free:
            entries.append(None)
        elif kind == 1 or len(free) == 1:
            entries.append(free.pop())
        elif kind == 2:
            entries.append((free.pop(), free.pop()))
        else:
            entries.append(sk.UNCONSTRAINED)
    spec = sk.P(*entries)
    shape = []
    for dim in range(rank):
        parts = int(np.prod([mesh.axis_size(a) for a in axes_of(spec, dim)] or [1]))
        shape.append(parts * int(rng.integers(1, 4)))
    return mesh, spec, tuple(shape)


@contextlib.contextmanager
def gspmd_mode():
    """jax lowers to GSPMD (``mhlo.sharding``) inside the block, for the oracle of shardkit's gspmd form."""
    jax.config.update("jax_use_shardy_partitioner", False)
    try:
        yield
    finally:
        jax.config.update("jax_use_shardy_partitioner", True)
