"""The steady-state dispatch path (``executor.arguments.LastCall``): a call repeating the last one's signature
runs without a key, gives jax's results, and every other call falls back to the keyed path with its checks."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.executor.arguments import MISS
from tests.child import run_python
from tests.jax_oracle import jax_named

MESH = sk.make_mesh((4, 2), ("x", "y"))
XY = sk.NamedSharding(MESH, P("x", "y"))
VALUE = np.arange(64, dtype=np.float32).reshape(8, 8)


def memo_hit(f, *args, **kwargs) -> bool:
    """Whether the call runs on the memo (it runs, then)."""
    last = f._last
    return last is not None and last.run(args, kwargs) is not MISS


@pytest.mark.parametrize(
    "fun, make_args",
    [
        (lambda a: a * 2, lambda x: (x,)),
        (lambda a, b: (a @ b.T, a - b), lambda x: (x, sk.device_put(VALUE + 1, sk.NamedSharding(MESH, P("y"))))),
        (lambda t: {"sum": t["a"] + t["b"][0], "max": t["b"][1].max()}, lambda x: ({"a": x, "b": [x, x]},)),
    ],
)
def test_repeated_calls_match_jax(fun, make_args):
    x = sk.device_put(VALUE, XY)
    args = make_args(x)
    f = sk.jit(fun)
    first = f(*args)
    assert memo_hit(f, *args)
    again = f(*args)
    want = jax.jit(fun)(*args)  # jax takes sk.Arrays as its own arrays
    for got in (first, again):
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            assert isinstance(g, sk.Array)
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
            assert g.sharding.is_equivalent_to(sk.asarray(w).sharding, g.ndim)


def test_another_context_mesh_is_not_the_last_call():
    # A bare PartitionSpec in a constraint resolves against the `with mesh:` context, so the same Arrays under
    # another context mesh need another program.
    x = sk.device_put(VALUE, XY)
    f = sk.jit(lambda a: sk.with_sharding_constraint(a * 2, P("x")))
    wide = sk.make_mesh((2, 4), ("x", "y"))
    with MESH:
        f(x)
        assert memo_hit(f, x)
    with wide:
        assert not memo_hit(f, x)
        np.testing.assert_array_equal(np.asarray(f(x)), VALUE * 2)
        assert len(f._calls) == 2
        assert '<@mesh_0, [{"x"}, {}]>' in f.lower(x).as_text()  # the constraint is over the 2x4 mesh
        assert memo_hit(f, x)


def test_outputs_feed_the_next_call_without_a_key():
    f = sk.jit(lambda a: a + 1, out_shardings=XY)
    y = f(sk.device_put(VALUE, XY))
    y = f(y)  # a new signature (the output's own sharding object): the keyed path, then memoized
    assert memo_hit(f, y)
    for _ in range(3):
        y = f(y)
    np.testing.assert_array_equal(np.asarray(y), VALUE + 5)
    compiled = f.lower(y).compile()
    compiled(y)
    assert memo_hit(compiled, y)
    np.testing.assert_array_equal(np.asarray(compiled(y)), VALUE + 6)


def test_other_signatures_take_the_keyed_path():
    f = sk.jit(lambda a: a * 2)
    x = sk.device_put(VALUE, XY)
    f(x)
    equal = sk.NamedSharding(MESH, P("x", "y"))  # equal, not the same object
    other = [
        sk.device_put(VALUE, equal),
        sk.device_put(VALUE, sk.NamedSharding(MESH, P("y"))),
        sk.device_put(VALUE.astype(np.int32), XY),
        sk.device_put(VALUE[:4], XY),
        sk.compat.GlobalDeviceArray.from_callback(VALUE.shape, MESH, P("x", "y"), lambda i: VALUE[i]),
        VALUE,
    ]
    for arg in other:
        assert not memo_hit(f, arg)
        np.testing.assert_array_equal(np.asarray(f(arg)), np.asarray(arg) * 2)
    assert not memo_hit(f, x, x) and not memo_hit(f, a=x)
    replicated = sk.NamedSharding(MESH, P())
    weak, strong = sk.device_put(2.0, replicated), sk.device_put(np.float32(2.0), replicated)
    g = sk.jit(lambda a: a * 2)
    assert g(weak).weak_type
    assert not memo_hit(g, strong) and not g(strong).weak_type
    assert not memo_hit(g, weak) and g(weak).weak_type


def test_a_donating_loop_runs_on_the_memo_and_deletes_what_it_donates():
    step = sk.jit(lambda a, b: (a * 2 + b, b), donate_argnums=0)
    x, b = step(*step(sk.device_put(VALUE, XY), sk.device_put(VALUE, XY)))  # the memo now holds outputs' objects
    for _ in range(3):
        previous = x
        out = step._last.run((x, b), {})
        assert out is not MISS
        x, b = out
        assert previous.is_deleted() and not b.is_deleted()
    expected = VALUE
    for _ in range(5):
        expected = np.asarray(jax.jit(lambda a, c: a * 2 + c)(expected, VALUE))
    np.testing.assert_array_equal(np.asarray(x), expected)


def test_the_memo_refuses_a_donated_array_passed_twice_or_shared():
    step = sk.jit(lambda a, b: a + b, donate_argnums=0)
    x = step(sk.device_put(VALUE, XY), sk.device_put(VALUE, XY))
    assert step._last is not None
    with pytest.raises(ValueError, match="is donated, but the same array is also passed as args"):
        step(x, x)
    assert not x.is_deleted()
    view = x.to_jax()  # x's buffers are now held by a jax Array too
    assert step._last.run((x, sk.asarray(view)), {}) is MISS
    with pytest.raises(ValueError, match="is donated, but its buffer on"):
        step(x, sk.asarray(view))


def test_no_memo_for_static_arguments_or_host_values():
    static = sk.jit(lambda a, n: a * n, static_argnums=1)
    y = sk.device_put(VALUE, XY)
    static(y, 3)
    assert static._last is None
    np.testing.assert_array_equal(np.asarray(static(y, 4)), VALUE * 4)
    host = sk.jit(lambda a: a * 2)
    host(VALUE)
    assert host._last is None


def test_the_mesh_context_does_not_change_a_call_with_array_arguments():
    f = sk.jit(lambda a: a * 2)
    x = sk.device_put(VALUE, XY)
    outside = f(x)
    other = sk.Mesh(np.array(jax.devices()[::-1]).reshape(2, 4), ("a", "b"))
    with other:
        inside = f(x)
    assert inside.sharding == outside.sharding
    np.testing.assert_array_equal(np.asarray(inside), np.asarray(outside))
    assert np.asarray(inside).tolist() == np.asarray(jax.device_put(VALUE, jax_named(XY)) * 2).tolist()


CRASH_SCRIPT = """
import os
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import numpy as np
import shardkit as sk
from tests.child import run_python
from shardkit import P
s = sk.NamedSharding(sk.make_mesh((4, 2), ("x", "y")), P("x", "y"))
f = sk.jit(lambda a: a * 2)
def deleted_whole(x):
    x.delete()
def deleted_shard(x):
    x.addressable_shards[0].data.delete()  # is_deleted() sees the first buffer only (jaxlib)
def donated_elsewhere(x):
    sk.jit(lambda a: a + 1, donate_argnums=0)(x)
for name, spoil in [("deleted", deleted_whole), ("deleted shard", deleted_shard), ("donated", donated_elsewhere)]:
    for call in (f, f.lower(sk.device_put(np.ones((8, 4), np.float32), s)).compile()):
        x = sk.device_put(np.ones((8, 4), np.float32), s)
        call(x), call(x)  # memoized
        spoil(x)
        try:
            call(x)
        except (ValueError, RuntimeError) as e:
            print(name, "->", type(e).__name__)
        else:
            print(name, "-> no error")
"""


def test_spoiled_arguments_of_a_memoized_call_raise_instead_of_crashing():
    proc = run_python(CRASH_SCRIPT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [
        f"{name} -> ValueError" for name in ("deleted", "deleted shard", "donated") for _ in range(2)
    ]
