"""Resharding by a compiled program (``shardkit.executor.reshard``) against jax, and the rule that picks it."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.executor import reshard
from shardkit.partition_spec import axes_of
from tests.jax_oracle import jax_named
from tests.test_array import assert_same_array

DEVS = jax.devices()


def _mesh(rng: np.random.Generator, devices: list) -> sk.Mesh:
    """A mesh of 1-3 axes over ``devices`` in the order given."""
    n, sizes = len(devices), []
    while n > 1 and len(sizes) < 2:
        size = int(rng.choice([s for s in (2, 4, 8) if n % s == 0]))
        sizes.append(size)
        n //= size
    sizes.append(n)
    names = tuple(rng.permutation(["x", "y", "z"])[: len(sizes)].tolist())
    return sk.Mesh(np.array(devices, dtype=object).reshape(sizes), names)


def _spec(rng: np.random.Generator, mesh: sk.Mesh, rank: int) -> P:
    free = [str(a) for a in rng.permutation(mesh.axis_names)]
    entries = []
    for _ in range(rank):
        kind = rng.integers(0, 3)
        if kind == 0 or not free:
            entries.append(None)
        elif kind == 1 or len(free) == 1:
            entries.append(free.pop())
        else:
            entries.append((free.pop(), free.pop()))
    return P(*entries)


def pairs(n: int, seed: int):
    """(source, target, shape, dtype): one device set, each side's own order and mesh, 1-3 dimensions."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        chosen = [DEVS[j] for j in rng.permutation(8)[: int(rng.choice([2, 4, 8]))]]
        reorder = i % 2 == 1  # every other pair lists the devices in another order on the target side
        one = _mesh(rng, chosen)
        two = _mesh(rng, [chosen[j] for j in rng.permutation(len(chosen))] if reorder else chosen)
        rank = int(rng.integers(1, 4))
        s1, s2 = sk.NamedSharding(one, _spec(rng, one, rank)), sk.NamedSharding(two, _spec(rng, two, rank))
        shape = tuple(
            int(
                np.lcm(
                    *(
                        int(np.prod([m.axis_size(a) for a in axes_of(s.spec, d)] or [1]))
                        for m, s in ((one, s1), (two, s2))
                    )
                )
            )
            * int(rng.integers(1, 3))
            for d in range(rank)
        )
        dtype = [np.float32, np.int32, np.bool_, np.float16][i % 4]
        out.append((s1, s2, shape, dtype))
    return out


@pytest.mark.parametrize("s1, s2, shape, dtype", pairs(32, seed=11))
def test_program_matches_jax(s1, s2, shape, dtype):
    data = (np.arange(np.prod(shape)) % 7).astype(dtype).reshape(shape)
    x = sk.device_put(data, s1)
    y = reshard.reshard_on_devices(x, s2, prefer="program")
    assert y is not None and y.sharding == s2
    assert_same_array(y, jax.device_put(jax.device_put(data, jax_named(s1)), jax_named(s2)))
    np.testing.assert_array_equal(np.asarray(x), data)  # the source is untouched


def test_program_is_cached_and_keeps_the_weak_type():
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    rows, cols = sk.NamedSharding(mesh, P("x")), sk.NamedSharding(mesh, P(None, "x"))
    x = sk.device_put(np.arange(64.0, dtype=np.float32).reshape(8, 8), rows)
    reshard.reshard_on_devices(x, cols, prefer="program")
    info = reshard.program.cache_info()
    reshard.reshard_on_devices(sk.device_put(np.ones((8, 8), np.float32), rows), cols, prefer="program")
    assert reshard.program.cache_info().hits == info.hits + 1
    weak = sk.device_put(np.ones((8, 8), np.float32), rows)
    weak = sk.array.new_array(weak.shape, weak.dtype, rows, weak._arrays, weak_type=True)
    assert reshard.reshard_on_devices(weak, cols, prefer="program").weak_type


def test_on_cpu_the_rule_takes_the_host_path():
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    data = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    x = sk.device_put(data, sk.NamedSharding(mesh, P("x", "y")))
    target = sk.NamedSharding(mesh, P("y", "x"))
    assert reshard.reshard_on_devices(x, target) is None  # the rule: the host path is faster on CPU
    calls = reshard.program.cache_info().misses
    assert_same_array(sk.device_put(x, target), jax.device_put(data, jax_named(target)))
    assert reshard.program.cache_info().misses == calls  # nothing compiled


def test_layouts_one_program_cannot_take_are_declined():
    data = np.arange(64.0, dtype=np.float32).reshape(8, 8)
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    x = sk.device_put(data, sk.NamedSharding(mesh, P("x", "y")))
    half = sk.Mesh(np.array(DEVS[:4]).reshape(2, 2), ("x", "y"))
    declined = [
        sk.NamedSharding(half, P("x", "y")),  # another device set
        sk.SingleDeviceSharding(DEVS[0]),
        sk.GSPMDSharding(DEVS, "{maximal device=3}"),
        sk.PmapSharding(DEVS, 0),
    ]
    for target in declined:
        assert reshard.reshard_on_devices(x, target, prefer="program") is None
        np.testing.assert_array_equal(np.asarray(sk.device_put(x, target)), data)  # the paths in shardkit.array
