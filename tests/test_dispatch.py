"""The dispatch paths: the first call of a signature runs in Python (checks, compile) and hands jaxlib's C++
dispatch a record of it; later calls of the signature run in C++, give jax's results, and every other call (a new
signature, or one C++ cannot check) runs the Python path again."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P, _jaxlib
from shardkit.executor.compiled import Compiled
from tests.child import run_python
from tests.jax_oracle import jax_named

MESH = sk.make_mesh((4, 2), ("x", "y"))
XY = sk.NamedSharding(MESH, P("x", "y"))
VALUE = np.arange(64, dtype=np.float32).reshape(8, 8)


@pytest.fixture
def python_calls(monkeypatch):
    """How many calls ran the Python path (``Compiled.call_flat``) since the fixture was made."""
    count = [0]
    original = Compiled.call_flat

    def counting(self, leaves):
        count[0] += 1
        return original(self, leaves)

    monkeypatch.setattr(Compiled, "call_flat", counting)
    return count


@pytest.mark.parametrize(
    "fun, make_args",
    [
        (lambda a: a * 2, lambda x: (x,)),
        (lambda a, b: (a @ b.T, a - b), lambda x: (x, sk.device_put(VALUE + 1, sk.NamedSharding(MESH, P("y"))))),
        (lambda t: {"sum": t["a"] + t["b"][0], "max": t["b"][1].max()}, lambda x: ({"a": x, "b": [x, x]},)),
    ],
)
def test_repeated_calls_run_in_cpp_and_match_jax(fun, make_args, python_calls):
    x = sk.device_put(VALUE, XY)
    args = make_args(x)
    f = sk.jit(fun)
    first = f(*args)
    again = f(*args)
    assert python_calls[0] == 1  # the second call ran in C++
    want = jax.jit(fun)(*args)  # jax takes shardkit's arrays as its own
    for got in (first, again):
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            assert type(g) is type(w)
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)
            assert isinstance(g.sharding, sk.Sharding) and g.sharding.is_equivalent_to(w.sharding, g.ndim)
    for g, h in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(again)):
        assert h.sharding is g.sharding  # C++ hands back the record's sharding objects


def test_another_context_mesh_is_another_signature():
    # A bare PartitionSpec in a constraint resolves against the `with mesh:` context, so the same Arrays under
    # another context mesh need another program: jax's mesh context is part of C++ dispatch's signature.
    x = sk.device_put(VALUE, XY)
    f = sk.jit(lambda a: sk.with_sharding_constraint(a * 2, P("x")))
    wide = sk.make_mesh((2, 4), ("x", "y"))
    with MESH:
        f(x)
        f(x)
    with wide:
        np.testing.assert_array_equal(np.asarray(f(x)), VALUE * 2)
        assert len(f._calls) == 2
        assert '<@mesh_0, [{"x"}, {}]>' in f.lower(x).as_text()  # the constraint is over the 2x4 mesh
    with MESH:
        assert len(f.lower(x).compile().as_text()) and len(f._calls) == 2


def test_outputs_feed_the_next_call_in_cpp(python_calls):
    f = sk.jit(lambda a: a + 1, out_shardings=XY)
    y = f(sk.device_put(VALUE, XY))
    for _ in range(4):
        y = f(y)
    np.testing.assert_array_equal(np.asarray(y), VALUE + 5)
    assert python_calls[0] == 1  # an output's sharding equals the argument's: one signature
    compiled = f.lower(y).compile()
    for _ in range(3):
        y = compiled(y)
    np.testing.assert_array_equal(np.asarray(y), VALUE + 8)
    assert python_calls[0] == 2


def test_every_new_signature_runs_the_python_path(python_calls):
    f = sk.jit(lambda a: a * 2)
    x = sk.device_put(VALUE, XY)
    f(x)
    equal = sk.NamedSharding(MESH, P("x", "y"))  # equal, not the same object: the same signature
    f(sk.device_put(VALUE, equal))
    assert python_calls[0] == 1
    other = [
        sk.device_put(VALUE, sk.NamedSharding(MESH, P("y"))),
        sk.device_put(VALUE.astype(np.int32), XY),
        sk.device_put(VALUE[:4], XY),
        jax.device_put(VALUE, jax_named(XY)),  # jax's sharding: a signature of its own, and a program too
        VALUE,
    ]
    for n, arg in enumerate(other, start=2):
        np.testing.assert_array_equal(np.asarray(f(arg)), np.asarray(arg) * 2)
        assert python_calls[0] == n
        f(arg)
        assert python_calls[0] == n  # now in C++, a numpy argument placed by shardkit
    replicated = sk.NamedSharding(MESH, P())
    weak, strong = sk.device_put(2.0, replicated), sk.device_put(np.float32(2.0), replicated)
    g = sk.jit(lambda a: a * 2)
    assert g(weak).weak_type and g(weak).weak_type
    assert not g(strong).weak_type and not g(strong).weak_type
    assert g(weak).weak_type


def test_gda_arguments_take_the_array_path(python_calls):
    f = sk.jit(lambda a: a * 2)
    gda = sk.compat.GlobalDeviceArray.from_callback(VALUE.shape, MESH, P("x", "y"), lambda i: VALUE[i])
    np.testing.assert_array_equal(np.asarray(f(gda)), VALUE * 2)
    np.testing.assert_array_equal(np.asarray(f(gda)), VALUE * 2)
    assert python_calls[0] == 1


def test_a_donating_loop_runs_in_cpp_and_deletes_what_it_donates(python_calls):
    step = sk.jit(lambda a, b: (a * 2 + b, b[:4]), donate_argnums=0)
    x, b = sk.device_put(VALUE, XY), sk.device_put(VALUE, sk.NamedSharding(MESH, P("x")))  # other pieces: no sharing
    for _ in range(5):
        previous = x
        x, _ = step(x, b)
        assert previous.is_deleted() and not b.is_deleted()
    assert python_calls[0] == 1
    expected = VALUE
    for _ in range(5):
        expected = np.asarray(jax.jit(lambda a, c: a * 2 + c)(expected, VALUE))
    np.testing.assert_array_equal(np.asarray(x), expected)


def test_a_donated_array_that_may_share_buffers(python_calls):
    """A donated argument whose pieces have the shape, dtype and devices of another argument's may share a buffer
    with it (the same array twice, or one built over the other's pieces). The first call of a signature is checked
    here; on jaxlib 0.10, whose runtime crashes on a buffer donated and read in one call, every call of such a
    signature is; later releases' XLA refuses it itself (a ValueError, the arrays intact), so C++ dispatch runs the
    later calls."""
    x = sk.device_put(VALUE, XY)
    fresh = sk.jit(lambda a, b: a + b, donate_argnums=0)
    with pytest.raises(ValueError, match=r"args\[0\] is donated, but the same array is also passed as args\[1\]"):
        fresh(x, x)
    view = sk.make_array_from_single_device_arrays(x.shape, x.sharding, [s.data for s in x.addressable_shards])
    with pytest.raises(ValueError, match=r"args\[1\] is donated, but its buffer on cpu:0 is also passed as args\[0\]"):
        sk.jit(lambda a, b: a + b, donate_argnums=1)(view, x)
    assert not x.is_deleted()
    step = sk.jit(lambda a, b: a + b, donate_argnums=0)
    y = sk.device_put(VALUE, XY)  # pieces of one shape, dtype and devices as x's: possibly shared
    before = python_calls[0]
    for _ in range(3):
        x = step(x, y)
    np.testing.assert_array_equal(np.asarray(x), VALUE * 4)
    if _jaxlib.DONATED_TWICE_RAISES:
        assert python_calls[0] == before + 1  # the first call, then C++
        with pytest.raises(ValueError, match="previously donated in the same call"):
            step(x, x)  # XLA's own refusal, in C++
        assert not x.is_deleted()
        np.testing.assert_array_equal(np.asarray(step(x, y)), VALUE * 5)
    else:
        assert python_calls[0] == before + 3
        with pytest.raises(ValueError, match=r"args\[0\] is donated, but the same array is also passed"):
            step(x, x)


LINE = sk.NamedSharding(sk.make_mesh((8,), ("d",)), P("d"))
ONE = sk.SingleDeviceSharding(jax.devices()[0])


def _donating_calls(jit, kwargs, sharding, how):
    """What ``jit`` does with a donated ``w`` (float32[8], reused for the output) and a donated ``x`` (int32[16],
    which no output of that program can reuse) over two calls of one signature: per step (``lower`` for a
    ``Compiled``, then each call), the warnings' first lines, which arguments the call deleted and its result."""
    f = jit(lambda w, x: w + x.sum().astype(jnp.float32), donate_argnums=(0, 1), **kwargs)  # new: no cache shared
    steps = []
    for step in (["lower"] if how == "compiled" else []) + ["call", "call"]:
        args = jax.device_put(np.ones(8, np.float32), sharding), jax.device_put(np.arange(16, dtype=np.int32), sharding)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            if step == "lower":
                f = f.lower(*args).compile()
            else:
                out = np.asarray(f(*args))
        said = [str(w.message).splitlines()[0] for w in caught]
        steps.append((said,) if step == "lower" else (said, tuple(a.is_deleted() for a in args), out.tolist()))
    return steps


@pytest.mark.parametrize("how", ["jit", "compiled"])
@pytest.mark.parametrize(
    "kwargs, sharding, warned",
    [
        ({}, LINE, False),  # on 8 devices with the outputs left to XLA, x goes to XLA as a donor: no warning
        ({"out_shardings": LINE}, LINE, True),
        ({}, ONE, True),
    ],
    ids=["8 devices", "8 devices, out_shardings", "1 device"],
)
def test_donation_deletes_what_xla_reuses_and_warns_as_jax_jit(kwargs, sharding, warned, how, python_calls):
    """A call deletes the donated arguments whose buffers XLA reused (w), not the one no output can reuse (x), on the
    first call (the Python path) and the next (C++); lowering warns about x in jax's words, once."""
    ours = _donating_calls(sk.jit, kwargs, sharding, how)
    assert python_calls[0] == 1  # the second call of the signature ran in C++
    assert ours == _donating_calls(jax.jit, kwargs, sharding, how)
    calls = ours[-2:]
    assert [c[1] for c in calls] == [(True, False)] * 2 and calls[0][2] == [121.0] * 8
    piece = f"int32[{16 // sharding.num_devices}]"
    assert ours[0][0] == ([f"Some donated buffers were not usable: {piece}."] if warned else [])
    assert calls[-1][0] == [] and (how == "jit" or calls[0][0] == [])


@pytest.mark.parametrize("how", ["jit", "compiled"])
@pytest.mark.parametrize(
    "in_shardings",
    [None, sk.SingleDeviceSharding(jax.devices()[3]), XY],
    ids=["1 device, left to XLA", "1 device, in_shardings", "8 devices"],
)
@pytest.mark.parametrize("dtype", [">f4", ">i4", ">f8"])
def test_a_non_native_byte_order_is_converted_on_every_call(dtype, in_shardings, how, python_calls):
    """jaxlib keys a numpy dtype by kind and width, so a big-endian array has the signature of its native twin, and
    on one device C++ dispatch would place its bytes as they lie (under jax.jit too: garbage, where jax.jit's first
    call refuses the dtype). shardkit converts it on every call: the first of a signature (either order first) and
    the later ones in C++, which hands it to ``place``; the values are jax.jit's on the native-order copy."""
    big = VALUE.astype(dtype)
    native = big.astype(big.dtype.newbyteorder("="))
    want = np.asarray(jax.jit(lambda a: a * 2 - 1)(native))
    with pytest.raises(TypeError) as refused:
        jax.jit(lambda a: a * 2 - 1)(big)
    assert f"Dtype {dtype} is not a valid JAX array type" in str(refused.value.__context__)
    for first in (native, big):
        f = sk.jit(lambda a: a * 2 - 1, in_shardings=in_shardings)
        if how == "compiled":
            f = f.lower(first).compile()
        before = python_calls[0]
        for arg in (first, big, big, native):
            np.testing.assert_array_equal(np.asarray(f(arg)), want)
        assert python_calls[0] == before + 1  # the later calls ran in C++


def test_a_big_endian_0d_array_after_a_numpy_scalar(python_calls):
    """A numpy scalar is always native, but a 0-d big-endian array has its signature: C++ hands it over too."""
    f = sk.jit(lambda a: a * 2)
    assert [float(f(a)) for a in (np.float32(3), np.array(3, ">f4"), np.array(3, ">f4"))] == [6.0] * 3
    assert python_calls[0] == 1


def test_static_arguments_are_part_of_the_signature(python_calls):
    scale = sk.jit(lambda a, n: a * n, static_argnums=1)
    y = sk.device_put(VALUE, XY)
    for n in (3, 3, 4, 4, 3):
        np.testing.assert_array_equal(np.asarray(scale(y, n)), VALUE * n)
    assert python_calls[0] == 2
    with pytest.raises(ValueError, match=r"Non-hashable static arguments .* <class 'list'>, \[1\]"):
        scale(y, [1])  # jax's C++ dispatch hashes them first, with jax's message


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


def test_disable_jit_still_compiles_with_shardkit():
    f = sk.jit(lambda a: a * 2, out_shardings=sk.NamedSharding(MESH, P("y")))
    with jax.disable_jit():
        out = f(sk.device_put(VALUE, XY))
    assert out.sharding == sk.NamedSharding(MESH, P("y"))
    np.testing.assert_array_equal(np.asarray(out), VALUE * 2)


SPOIL_SCRIPT = """
import os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax
import numpy as np
import shardkit as sk
from shardkit import P
s = sk.NamedSharding(sk.make_mesh((4, 2), ("x", "y")), P("x", "y"))
spoil = {
    "deleted": lambda x: x.delete(),
    "donated": lambda x: sk.jit(lambda a: a + 1, donate_argnums=0)(x),
    "deleted shard": lambda x: x.addressable_shards[3].data.delete(),  # is_deleted() reads the first buffer
}[sys.argv[1]]
f = {"sk.jit": sk.jit(lambda a: a * 2), "jax.jit": jax.jit(lambda a: a * 2)}[sys.argv[2]]
if sys.argv[3] == "compiled":
    f = f.lower(sk.device_put(np.ones((8, 4), np.float32), s)).compile()
x = sk.device_put(np.ones((8, 4), np.float32), s)
f(x), f(x)  # the second call ran in C++
spoil(x)
try:
    f(x)
except (ValueError, RuntimeError) as e:
    print(type(e).__name__, str(e).splitlines()[0][:60])
else:
    print("no error")
"""


@pytest.mark.parametrize("how", ["sk.jit", "compiled"])
@pytest.mark.parametrize("spoil", ["deleted", "donated"])
def test_a_deleted_argument_raises_after_cpp_calls(spoil, how):
    proc = run_python(SPOIL_SCRIPT, spoil, "sk.jit", how)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("ValueError Argument args[0] has been deleted"), proc.stdout


@pytest.mark.parametrize("how", ["sk.jit", "compiled"])
def test_a_deleted_piece_fares_as_under_jax_jit(how):
    # An Array whose one piece was freed through a shard's data is jax's hazard: jax's is_deleted() reads the
    # first buffer, and XLA then meets a freed buffer; jaxlib 0.12 raises a ValueError (and hangs later work), 0.10
    # crashes the process. shardkit's arrays are jax's, so sk.jit fares as jax.jit (docs/differences-from-jax.md).
    ours = run_python(SPOIL_SCRIPT, "deleted shard", "sk.jit", how)
    theirs = run_python(SPOIL_SCRIPT, "deleted shard", "jax.jit", how)
    assert ours.returncode == theirs.returncode
    assert ours.stdout.split(" ")[0] == theirs.stdout.split(" ")[0]
