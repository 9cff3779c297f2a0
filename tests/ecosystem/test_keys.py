"""Typed PRNG key arrays (extended dtypes) through sk.jit, sk.device_put and the lowering, against jax.jit: a key
array is sharded like any array, over its key data with the data's trailing dimension whole."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P

MESH = sk.make_mesh((8,), ("d",))
S = sk.NamedSharding(MESH, P("d"))
KEY = jax.random.key(0)
KEYS = jax.random.split(KEY, 8)


def same_keys(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(got)), np.asarray(jax.random.key_data(want)))
    assert got.sharding.is_equivalent_to(want.sharding, got.ndim)


@pytest.mark.parametrize("partitioner", ["shardy", "gspmd"])
def test_keys_in_and_out(partitioner):
    def f(k):
        a, b = jax.random.split(k)
        return jax.random.normal(a, (4,)), b

    got_x, got_k = sk.jit(f, partitioner=partitioner)(KEY)
    want_x, want_k = jax.jit(f)(KEY)
    np.testing.assert_array_equal(np.asarray(got_x), np.asarray(want_x))
    same_keys(got_k, want_k)
    made = sk.jit(lambda: jax.random.key(7), partitioner=partitioner)()
    same_keys(made, jax.random.key(7))


def test_sharded_keys_match_jax():
    def draw(ks):
        return jax.vmap(lambda k: jax.random.normal(k, (3,)))(ks)

    js = S.to_jax(1)
    got = sk.jit(draw, in_shardings=S, out_shardings=sk.NamedSharding(MESH, P("d")))(KEYS)
    want = jax.jit(draw, in_shardings=js, out_shardings=S.to_jax(2))(KEYS)
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    assert got.sharding.spec == P("d")
    split = sk.jit(lambda k: jax.random.split(k, 8), out_shardings=S)(KEY)
    same_keys(split, jax.jit(lambda k: jax.random.split(k, 8), out_shardings=js)(KEY))


def test_lowered_key_data_is_sharded_like_jax():
    """The program takes the key data (uint32, one more dimension), sharded on the key array's own dimensions."""
    bits = jax.vmap(jax.random.bits)
    text = sk.jit(bits, in_shardings=S).lower(KEYS).as_text()
    assert 'tensor<8x2xui32> {sdy.sharding = #sdy.sharding<@mesh, [{"d"}, {}]>}' in text
    gspmd = sk.jit(bits, in_shardings=S, partitioner="gspmd").lower(KEYS).as_text()
    assert 'tensor<8x2xui32> {mhlo.sharding = "{devices=[8,1]<=[8]}"}' in gspmd


def test_a_committed_key_array_keeps_its_sharding():
    placed = sk.device_put(KEYS, S)
    same_keys(placed, jax.device_put(KEYS, S.to_jax(1)))
    out = sk.jit(lambda ks: ks)(placed)
    same_keys(out, placed)
    other = sk.device_put(KEYS, sk.NamedSharding(MESH, P()))
    with pytest.raises(ValueError, match="sharded as"):
        sk.jit(lambda ks: ks, in_shardings=S)(other)


def test_keys_in_device_put_trees_and_gspmd_shardings():
    tree = sk.device_put({"k": KEYS, "x": np.ones(8, np.float32)}, S)
    same_keys(tree["k"], jax.device_put(KEYS, S.to_jax(1)))
    gspmd = sk.GSPMDSharding(MESH.flat_devices, "{devices=[8]<=[8]}")
    same_keys(sk.device_put(KEYS, gspmd), jax.device_put(KEYS, S.to_jax(1)))
    same_keys(sk.jit(lambda ks: ks, out_shardings=gspmd)(KEYS), jax.device_put(KEYS, S.to_jax(1)))


def test_a_key_array_is_not_a_shardkit_array():
    with pytest.raises(TypeError, match="stays jax's key array"):
        sk.asarray(KEY)


def test_float0_tangents_come_back_as_under_jax():
    def f(x, n):
        return (x * n).sum()

    grad = jax.grad(f, argnums=(0, 1), allow_int=True)
    x, n = np.ones(4, np.float32), np.arange(4, dtype=np.int32)
    got, want = sk.jit(grad)(x, n), jax.jit(grad)(x, n)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
    assert got[1].dtype == want[1].dtype == jax.dtypes.float0 and got[1].shape == want[1].shape
