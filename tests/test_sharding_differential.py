"""Differential tests of the whole index math and both attribute forms against jax 0.10 (seeded random cases)."""

import numpy as np
import pytest

import shardkit as sk
from shardkit.dialects import sdy as sdy_forms
from tests.jax_oracle import (
    jax_gspmd,
    jax_hlo_text,
    jax_named,
    jax_replica_ids,
    jax_sdy_text,
    random_case,
)

N_CASES = 520
CASES = [random_case(np.random.default_rng(seed)) for seed in range(N_CASES)]


def _ids(case):
    mesh, spec, shape = case
    return f"{mesh.shape_tuple}-{spec}-{shape}"


@pytest.mark.parametrize("case", CASES[:N_CASES], ids=[_ids(c) for c in CASES])
def test_named_sharding_matches_jax(case):
    mesh, spec, shape = case
    mine = sk.NamedSharding(mesh, spec)
    theirs = jax_named(mine)
    ndim = len(shape)
    assert dict(mine.devices_indices_map(shape)) == theirs.devices_indices_map(shape)
    assert dict(mine.addressable_devices_indices_map(shape)) == theirs.addressable_devices_indices_map(shape)
    assert mine.shard_shape(shape) == theirs.shard_shape(shape)
    assert dict(mine.replica_ids(shape)) == jax_replica_ids(theirs, shape)
    assert mine.is_fully_replicated == theirs.is_fully_replicated
    assert mine.is_fully_addressable == theirs.is_fully_addressable
    assert mine.device_set == theirs.device_set
    assert mine.addressable_devices == theirs.addressable_devices
    assert mine.num_devices == theirs.num_devices
    assert mine.memory_kind == theirs.memory_kind
    assert repr(mine.to_hlo(ndim)) == jax_hlo_text(theirs, ndim)
    sdy_mesh, tensor = mine.to_sdy(ndim)
    inlined = sdy_forms.SdyTensorSharding(sdy_mesh, tensor.dims, tensor.replicated, tensor.unreduced)
    assert str(inlined) == jax_sdy_text(theirs, ndim)


def _equivalence_pairs():
    rng = np.random.default_rng(1234)
    pairs = []
    for i in range(0, N_CASES, 2):
        (m1, s1, shape), (m2, s2, _) = CASES[i], CASES[i + 1]
        # Unrelated pairs (mostly not equivalent), and a same-placement respelling (equivalent):
        pairs.append((m1, s1, m2, s2, len(shape)))
        respelled = sk.P(*s1, *([None] * (len(shape) - len(s1))))
        pairs.append((m1, s1, m1, respelled, len(shape)))
        # Same spec on the same devices in another order: equal HLO, different device lists.
        perm = rng.permutation(m1.size)
        shuffled = sk.Mesh(np.array(m1.flat_devices, dtype=object)[perm].reshape(m1.axis_sizes), m1.axis_names)
        pairs.append((m1, s1, shuffled, s1, len(shape)))
    return pairs


def test_is_equivalent_to_matches_jax():
    outcomes = set()
    for m1, s1, m2, s2, ndim in _equivalence_pairs():
        a, b = sk.NamedSharding(m1, s1), sk.NamedSharding(m2, s2)
        try:
            expected = jax_named(a).is_equivalent_to(jax_named(b), ndim)
        except (ValueError, IndexError):
            continue
        assert a.is_equivalent_to(b, ndim) == expected, (a, b, ndim)
        outcomes.add(expected)
    assert outcomes == {True, False}


@pytest.mark.parametrize("case", CASES[::10], ids=[_ids(c) for c in CASES[::10]])
def test_gspmd_sharding_matches_jax(case):
    mesh, spec, shape = case
    named = sk.NamedSharding(mesh, spec)
    text = repr(named.to_hlo(len(shape)))
    mine = sk.GSPMDSharding(mesh.flat_devices, text)
    theirs = jax_gspmd(mesh.flat_devices, text)
    assert dict(mine.devices_indices_map(shape)) == theirs.devices_indices_map(shape)
    assert mine.shard_shape(shape) == theirs.shard_shape(shape)
    assert dict(mine.replica_ids(shape)) == jax_replica_ids(theirs, shape)
    assert mine.is_fully_replicated == theirs.is_fully_replicated
    assert mine.is_equivalent_to(named, len(shape)) and named.is_equivalent_to(mine, len(shape))
    assert theirs.is_equivalent_to(jax_named(named), len(shape))
