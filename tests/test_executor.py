"""Executor: Compiled's interface, output shardings, argument checks (crash hazards in a subprocess), the
in-memory caches and the persistent compilation cache."""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxlib import xla_client as xc

import shardkit as sk
from shardkit import P
from shardkit.executor import cache, compile_lowered, set_cache_dir
from tests.child import run_python

DEVS = jax.devices()
MESH = sk.make_mesh((4, 2), ("x", "y"))
F32 = np.float32


def ns(*spec, mesh=MESH):
    return sk.NamedSharding(mesh, P(*spec))


@pytest.fixture(scope="module")
def matmul():
    f = sk.jit(lambda a, b: a @ b, out_shardings=ns("x", "y"))
    a = sk.device_put(np.arange(32, dtype=F32).reshape(8, 4), ns("x", None))
    b = sk.device_put(np.ones((4, 6), F32), ns(None, "y"))
    return f.lower(a, b).compile(), a, b


def test_compiled_interface(matmul):
    compiled, a, b = matmul
    assert "num_partitions=8" in compiled.as_text() and "f32[2,3]" in compiled.as_text()
    assert compiled.input_shardings == ((ns("x", None), ns(None, "y")), {})
    assert compiled.output_shardings == ns("x", "y")
    assert compiled.cost_analysis()["flops"] > 0
    assert compiled.memory_analysis().output_size_in_bytes == 2 * 3 * 4
    out = compiled(a, b)
    assert isinstance(out, sk.Array) and out.sharding == ns("x", "y")
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a) @ np.ones((4, 6), F32))
    shard = out.addressable_shards[3]
    assert shard.device == DEVS[3] and shard.index == (slice(2, 4), slice(3, 6))


def test_compiler_chosen_shardings_are_named_over_the_users_mesh():
    x = sk.device_put(np.ones((8, 4), F32), ns(None, "y"))
    out = sk.jit(lambda a: (a + 1, a.sum(axis=1)))(x)
    assert out[0].sharding == ns(None, "y") and out[1].sharding == ns()
    compiled = sk.jit(lambda a, b: a * b).lower(x, np.ones((8, 4), F32)).compile()
    assert compiled.input_shardings[0][1].is_equivalent_to(ns(None, "y"), 2)


def test_call_errors(matmul):
    compiled, a, b = matmul
    with pytest.raises(
        TypeError, match=r"takes \(args, kwargs\) structured as .* \(2 arrays\), but was called with .* \(1 arrays\)"
    ):
        compiled(a)
    with pytest.raises(
        TypeError,
        match=r"Argument args\[1\] has shape \(4, 5\) and dtype float32, but the "
        r"computation was compiled for shape \(4, 6\) and dtype float32",
    ):
        compiled(a, np.ones((4, 5), F32))
    with pytest.raises(TypeError, match=r"Argument args\[0\] has shape \(8, 4\) and dtype int32"):
        compiled(np.ones((8, 4), np.int32), b)
    with pytest.raises(
        ValueError,
        match=r"Argument args\[0\] is sharded as .*P\('x', 'y'\).* but the computation "
        r"takes .*P\('x', None\).*sk.device_put",
    ):
        compiled(sk.device_put(np.asarray(a), ns("x", "y")), b)
    with pytest.raises(TypeError, match=r"Argument args\[0\] of type str is not an array"):
        compiled("a", b)


def test_equivalent_sharding_passes_buffers_through(matmul):
    compiled, a, b = matmul
    same = sk.device_put(np.asarray(a), sk.GSPMDSharding(DEVS, "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"))
    np.testing.assert_array_equal(np.asarray(compiled(same, b)), np.asarray(compiled(a, b)))


def test_numpy_inputs_are_placed(matmul):
    compiled, a, b = matmul
    np.testing.assert_array_equal(np.asarray(compiled(np.asarray(a), np.ones((4, 6), F32))), np.asarray(compiled(a, b)))


def test_donated_arguments_are_deleted_and_rejected():
    f = sk.jit(lambda x: x + 1, out_shardings=ns("x"), donate_argnums=0)
    x = sk.device_put(np.ones((8, 4), F32), ns("x"))
    assert "tf.aliasing_output = 0 : i32" in f.lower(x).as_text()
    f(x)
    assert x.is_deleted()
    with pytest.raises(ValueError, match=r"Argument args\[0\] has been deleted"):
        f(x)


def test_call_caches():
    f = sk.jit(lambda x, n: x * n, static_argnums=1)
    x = sk.device_put(np.ones((8, 4), F32), ns("x"))
    f(x, 2), f(x, 2), f(np.ones((8, 4), F32), 2)
    assert len(f._calls) == 2 and len(f._lowering._entries) == 2
    lowered = f.lower(x, 2)
    assert compile_lowered(lowered._lowered) is compile_lowered(f.lower(x, 2)._lowered)


CRASH_SCRIPT = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np, jax
import shardkit as sk
from tests.child import run_python
from shardkit import P
mesh = sk.make_mesh((4, 2), ("x", "y"))
other = sk.Mesh(np.array(jax.devices()[::-1]).reshape(4, 2), ("x", "y"))
s = sk.NamedSharding(mesh, P("x", "y"))
compiled = sk.jit(lambda a: a * 2, in_shardings=s, out_shardings=s).lower(np.ones((8, 4), np.float32)).compile()
good = sk.device_put(np.ones((8, 4), np.float32), s)
donating = sk.jit(lambda a: a + 1, in_shardings=s, out_shardings=s, donate_argnums=0)
donated = sk.device_put(np.ones((8, 4), np.float32), s)
donating(donated)
bad_calls = {
    "reuse a donated argument": lambda: donating(donated),
    "bad shard shape": lambda: compiled(sk.device_put(np.ones((16, 8), np.float32), s)),
    "wrong arg count": lambda: compiled(good, good),
    "buffer on the wrong device": lambda: compiled(
        sk.device_put(np.ones((8, 4), np.float32), sk.NamedSharding(other, P("x", "y")))
    ),
    "wrong dtype": lambda: compiled(sk.device_put(np.ones((8, 4), np.int32), s)),
}
for name, call in bad_calls.items():
    try:
        call()
    except (TypeError, ValueError) as e:
        print(name, "->", type(e).__name__)
    else:
        print(name, "-> no error")
print("alive", float(np.asarray(compiled(good)).sum()))
"""


def test_crash_hazards_raise_clean_errors_in_a_subprocess():
    proc = run_python(CRASH_SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        "reuse a donated argument -> ValueError",
        "bad shard shape -> TypeError",
        "wrong arg count -> TypeError",
        "buffer on the wrong device -> ValueError",
        "wrong dtype -> TypeError",
        "alive 64.0",
    ]


# -- persistent compilation cache -----------------------------------------------------------------------


@pytest.fixture
def cache_dir(tmp_path):
    set_cache_dir(tmp_path)
    yield tmp_path
    set_cache_dir(None)


def _fresh_lowered():
    """A new jit each time, so only the persistent cache can make the compile a hit."""
    return sk.jit(lambda a: a * 3 + 1, out_shardings=ns("x")).lower(np.ones((8, 4), F32))._lowered


def _entries(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.skx"))


def test_persistent_cache_hit(cache_dir, monkeypatch):
    first = compile_lowered(_fresh_lowered())
    (entry,) = _entries(cache_dir)
    loads = []
    real_load = cache.load
    monkeypatch.setattr(cache, "load", lambda *a: loads.append(real_load(*a)) or loads[-1])
    second = compile_lowered(_fresh_lowered())
    assert loads and loads[0] is not None and second is not first
    out = sk.executor.Compiled(_fresh_lowered(), second)(np.ones((8, 4), F32))
    np.testing.assert_array_equal(np.asarray(out), np.full((8, 4), 4.0))


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_persistent_cache_survives_a_damaged_entry(cache_dir, damage):
    compile_lowered(_fresh_lowered())
    (entry,) = _entries(cache_dir)
    data = entry.read_bytes()
    entry.write_bytes({"truncate": data[: len(data) // 2], "garbage": b"\x00" * 100, "empty": b""}[damage])
    exe = compile_lowered(_fresh_lowered())
    out = sk.executor.Compiled(_fresh_lowered(), exe)(np.ones((8, 4), F32))
    np.testing.assert_array_equal(np.asarray(out), np.full((8, 4), 4.0))
    assert cache.load(cache_dir, entry.stem, xc.DeviceList(tuple(DEVS)), None) is not None  # rewritten whole


def test_persistent_cache_concurrent_writers(cache_dir):
    lowered = _fresh_lowered()
    exe = compile_lowered(lowered)
    (entry,) = _entries(cache_dir)
    key = entry.stem
    threads = [threading.Thread(target=cache.store, args=(cache_dir, key, exe)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [p.name for p in cache_dir.iterdir()] == [entry.name]  # no temporary files left
    assert cache.load(cache_dir, key, xc.DeviceList(tuple(DEVS)), None) is not None


def test_persistent_cache_in_a_new_process(tmp_path):
    script = textwrap.dedent("""
        import os, sys, time
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
        import numpy as np, shardkit as sk
        from shardkit import P
        from shardkit.executor import cache
        hits, real = [], cache.load

        def load(*args):
            exe = real(*args)
            hits.append(exe is not None)
            return exe

        cache.load = load
        mesh = sk.make_mesh((4, 2), ("x", "y"))
        f = sk.jit(lambda a: a * 3 + 1, out_shardings=sk.NamedSharding(mesh, P("x")))
        f(np.ones((8, 4), np.float32))
        out = f(np.ones((8, 4), np.float32))
        print(hits == [True], float(np.asarray(out).sum()))
    """)
    runs = [run_python(script, env={cache.ENV_VAR: str(tmp_path)}) for _ in range(2)]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr[-2000:]
    assert [r.stdout.split() for r in runs] == [["False", "128.0"], ["True", "128.0"]]


def test_shardings_changed_by_passes_come_from_the_executable():
    # A pass that rewrites argument shardings after lowering: the Compiled must expect what XLA compiled,
    # so a buffer laid out the old way is refused cleanly (feeding it to jaxlib would crash the process).
    s = sk.NamedSharding(MESH, P("x", "y"))
    value = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    x = sk.device_put(value, s)
    compiled = sk.jit(lambda a: a * 2 + 1, out_shardings=s).lower(x).compile(passes="strip-shardings")
    assert compiled.input_shardings[0][0].is_fully_replicated
    with pytest.raises(ValueError, match=r"Argument args\[0\] is sharded as .*but the computation takes"):
        compiled(x)
    np.testing.assert_array_equal(np.asarray(compiled(value)), value * 2 + 1)


def test_array_subclasses_follow_the_array_rule():
    # An Array subclass is keyed by its sharding as an Array is: a new sharding compiles anew instead of
    # failing against the program compiled for the first one; donating one deletes it.
    value = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    f = sk.jit(lambda a: a + 1)
    gda_x = sk.compat.GlobalDeviceArray.from_callback(value.shape, MESH, P("x"), lambda idx: value[idx])
    gda_y = sk.compat.GlobalDeviceArray.from_callback(value.shape, MESH, P("y"), lambda idx: value[idx])
    assert f(gda_x).sharding.is_equivalent_to(gda_x.sharding, 2)
    out = f(gda_y)
    assert out.sharding.is_equivalent_to(gda_y.sharding, 2)
    np.testing.assert_array_equal(np.asarray(out), value + 1)
    donated = sk.compat.GlobalDeviceArray.from_callback(value.shape, MESH, P("x"), lambda idx: value[idx])
    sk.jit(lambda a: a * 2, donate_argnums=0)(donated)
    assert donated.is_deleted()


def test_array_subclasses_and_jax_arrays_are_arguments():
    s = sk.NamedSharding(MESH, P("x", "y"))
    value = np.arange(16.0, dtype=np.float32).reshape(8, 2)
    f = sk.jit(lambda a: a + 1, in_shardings=s)
    gda = sk.compat.GlobalDeviceArray.from_callback(value.shape, MESH, P("x", "y"), lambda idx: value[idx])
    np.testing.assert_array_equal(np.asarray(f(gda)), value + 1)
    on_layout = jax.device_put(
        value,
        jax.sharding.NamedSharding(jax.sharding.Mesh(MESH.devices, ("x", "y")), jax.sharding.PartitionSpec("x", "y")),
    )
    np.testing.assert_array_equal(np.asarray(f(on_layout)), value + 1)
    handler = f.lower(on_layout).compile()._handlers[0]
    passed = handler(on_layout)  # the same device buffers, no host trip
    pointers = [s.data.unsafe_buffer_pointer() for s in passed.addressable_shards]
    assert pointers == [s.data.unsafe_buffer_pointer() for s in on_layout.addressable_shards]
    uncommitted = jnp.asarray(value)
    np.testing.assert_array_equal(np.asarray(f(uncommitted)), value + 1)  # placed like a numpy argument
    elsewhere = jax.device_put(value, jax.devices()[3])  # committed: held to its device, as jax.jit holds it
    with pytest.raises(ValueError, match="same devices"):
        f(elsewhere)
    with pytest.raises(ValueError):
        jax.jit(lambda a: a + 1, in_shardings=s.to_jax(2))(elsewhere)
