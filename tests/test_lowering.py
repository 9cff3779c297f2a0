"""Lowering: the tour's example, Lowered's interface, the lowering cache (AbstractMesh hits), and every error."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jaxlib.mlir import ir

import shardkit as sk
from shardkit import P

DEVS = jax.devices()
MESH = sk.make_mesh((4, 2), ("x", "y"))
MESH_B = sk.Mesh(np.array(DEVS[::-1], dtype=object).reshape(4, 2), ("x", "y"))
ABSTRACT = sk.AbstractMesh((4, 2), ("x", "y"))
F32 = np.float32


def ns(*spec, mesh=MESH):
    return sk.NamedSharding(mesh, P(*spec))


@pytest.fixture(scope="module")
def tour():
    """The tour's example: jit(lambda x: x * 2, out_shardings=NamedSharding(mesh, P('x', 'y'))) on (8, 2)."""
    s = ns("x", "y")
    x = sk.device_put(np.arange(16, dtype=F32).reshape(8, 2), s)
    return sk.jit(lambda x: x * 2, out_shardings=s), x


def test_tour_example_text(tour):
    f, x = tour
    text = f.lower(x).as_text()
    assert 'sdy.mesh @mesh = <["x"=4, "y"=2]>' in text
    main = next(line for line in text.splitlines() if "func.func public @main" in line)
    arg, result = main.split("->")
    assert '%arg0: tensor<8x2xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>}' in arg
    assert 'sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>' in result
    assert "mhlo.num_partitions = 8 : i32" in text and "mhlo.num_replicas = 1 : i32" in text


def test_tour_example_gspmd_text(tour):
    _, x = tour
    text = sk.jit(lambda x: x * 2, out_shardings=ns("x", "y"), partitioner="gspmd").lower(x).as_text()
    assert "sdy." not in text
    assert text.count('mhlo.sharding = "{devices=[4,2]<=[8]}"') == 2


def test_lowered_interface(tour):
    f, x = tour
    lowered = f.lower(x)
    assert lowered.mesh is MESH
    assert lowered.in_shardings == ((ns("x", "y"),), {})
    assert lowered.out_shardings == ns("x", "y")
    assert "loc(" in lowered.as_text(debug_info=True) and "loc(" not in lowered.as_text()


def test_compiler_ir_is_a_copy(tour):
    f, x = tour
    lowered = f.lower(x)
    module = lowered.compiler_ir()
    with module.context:
        module.operation.attributes["shardkit.test"] = ir.UnitAttr.get()
    assert "shardkit.test" in str(module)
    assert "shardkit.test" not in lowered.as_text() and "shardkit.test" not in f.lower(x).as_text()


def test_shape_dtype_struct_lowering():
    s = ns("x")
    text = sk.jit(lambda a: a + 1).lower(sk.ShapeDtypeStruct((8, 4), jnp.bfloat16, sharding=s)).as_text()
    assert 'tensor<8x4xbf16> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}' in text
    assert repr(sk.ShapeDtypeStruct((2,), np.int32)) == "ShapeDtypeStruct(shape=(2,), dtype=int32)"


def test_repeated_lower_hits_the_cache(tour):
    f, x = tour
    assert f.lower(x)._lowered.module is f.lower(x)._lowered.module
    assert len(f._lowering._entries) == 1


def _constrained(mesh):
    return lambda a: sk.with_sharding_constraint(a * 2, sk.NamedSharding(mesh, P("x", None))) + 1


def test_abstract_mesh_constraint_hits_across_meshes():
    f = sk.jit(_constrained(ABSTRACT))
    a = sk.device_put(np.ones((8, 4), F32), ns("x", mesh=MESH))
    b = sk.device_put(np.ones((8, 4), F32), ns("x", mesh=MESH_B))
    la, lb = f.lower(a), f.lower(b)
    assert la._lowered.module is lb._lowered.module  # one trace, one module
    assert la._lowered.device_assignment == tuple(DEVS) and lb._lowered.device_assignment == tuple(DEVS[::-1])
    assert 'sdy.sharding_constraint %1 <@mesh, [{"x"}, {}]>' in la.as_text()
    assert "device" not in la.as_text()
    np.testing.assert_array_equal(np.asarray(f(b)), np.full((8, 4), 3.0))
    assert f(b).sharding.mesh is MESH_B


def test_abstract_mesh_constraint_binds_with_mesh_context():
    f = sk.jit(_constrained(ABSTRACT))
    with pytest.raises(ValueError, match="AbstractMesh"):
        f.lower(np.ones((8, 4), F32)).compile()
    with MESH_B:
        out = f(np.ones((8, 4), F32))
    np.testing.assert_array_equal(np.asarray(out), np.full((8, 4), 3.0))


def test_abstract_in_shardings_bind_to_argument_devices():
    f = sk.jit(
        lambda a: a * 2,
        in_shardings=sk.NamedSharding(ABSTRACT, P("x")),
        out_shardings=sk.NamedSharding(ABSTRACT, P("y")),
    )
    out = f(sk.device_put(np.ones((8, 4), F32), ns("x", mesh=MESH_B)))
    assert out.sharding == ns("y", mesh=MESH_B)


def test_concrete_constraint_sets_the_devices():
    f = sk.jit(_constrained(MESH_B))
    lowered = f.lower(np.ones((8, 4), F32))
    assert lowered._lowered.device_assignment == tuple(DEVS[::-1])
    assert "mhlo.num_partitions = 8" in lowered.as_text()


def test_constraint_outside_jit_places_the_value():
    out = sk.with_sharding_constraint({"a": np.ones((8, 2), F32)}, ns("x"))
    assert isinstance(out["a"], sk.Array) and out["a"].sharding == ns("x")


def test_run_passes_copies_the_module(tour):
    f, x = tour
    lowered = f.lower(x)
    before = lowered.as_text()
    after = lowered.run_passes("canonicalize")
    assert lowered.as_text() == before and after._lowered.module is not lowered._lowered.module
    with pytest.raises(ValueError, match="no-such-pass"):
        lowered.run_passes("no-such-pass")
    assert lowered.as_text() == before


@pytest.mark.parametrize("pipeline, shardy", [("canonicalize", True), ("export-gspmd", False)])
def test_compile_with_passes(tour, pipeline, shardy):
    from shardkit.dialects.irx import uses_shardy

    f, x = tour
    lowered = f.lower(x)
    assert uses_shardy(lowered.run_passes(pipeline).compiler_ir()) is shardy  # the partitioner follows the form
    out = lowered.compile(passes=pipeline)(x)
    np.testing.assert_array_equal(np.asarray(out), np.asarray(x) * 2)
    assert out.sharding == ns("x", "y")


# -- errors ------------------------------------------------------------------------------------------------


def test_unknown_mesh_axis():
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh: \('x', 'y'\)"):
        sk.jit(lambda a: a, in_shardings=ns("z"))


def test_rank_mismatch_names_the_argument():
    f = sk.jit(lambda a, b: a + b, in_shardings=(ns(), ns("x", "y")))
    with pytest.raises(ValueError, match=r"args\[1\] of shape \(8,\): .*only valid for values of rank at least 2"):
        f.lower(np.ones(8, F32), np.ones(8, F32))


def test_indivisible_names_argument_dim_and_sizes():
    f = sk.jit(lambda d: d["w"] * 2, in_shardings=({"w": ns("x")},))
    with pytest.raises(
        sk.IndivisibleError, match=r"args\[0\]\['w'\] of shape \(6, 2\): Dimension 0 .* size 6, .*divisible by 4"
    ):
        f.lower({"w": np.ones((6, 2), F32)})


def test_indivisible_result():
    with pytest.raises(sk.IndivisibleError, match=r"result 0 of shape \(6,\)"):
        sk.jit(lambda a: a[:6], out_shardings=ns("x")).lower(np.ones(8, F32))


def test_different_device_sets():
    left = sk.make_mesh((4,), ("x",), devices=DEVS[:4])
    right = sk.make_mesh((4,), ("x",), devices=DEVS[4:])
    f = sk.jit(lambda a, b: a + b, in_shardings=(sk.NamedSharding(left, P("x")), sk.NamedSharding(right, P("x"))))
    with pytest.raises(
        ValueError,
        match=r"same devices in the same order, but args\[0\] is on devices \[0, 1, 2, 3\] "
        r"and args\[1\] is on devices \[4, 5, 6, 7\]",
    ):
        f.lower(np.ones(8, F32), np.ones(8, F32))


def test_non_array_argument():
    with pytest.raises(TypeError, match=r"Argument args\[0\] of type str is not an array"):
        sk.jit(lambda a: a).lower("hello")


def test_argument_on_other_devices_than_in_shardings():
    x = sk.device_put(np.ones(8, F32), sk.NamedSharding(sk.make_mesh((4,), ("x",), devices=DEVS[4:]), P("x")))
    with pytest.raises(
        ValueError,
        match=r"args\[0\] is on devices \[0, 1, .*\] and args\[0\] \(the argument "
        r"itself\) is on devices \[4, 5, 6, 7\]",
    ):
        sk.jit(lambda a: a, in_shardings=ns("x")).lower(x)


def test_argument_sharding_differs_from_in_shardings():
    x = sk.device_put(np.ones((8, 4), F32), ns("x"))
    with pytest.raises(
        ValueError,
        match=r"Argument args\[0\] is sharded as .*P\('x',\).* but the computation takes "
        r".*P\(None, 'y'\).*sk.device_put",
    ):
        sk.jit(lambda a: a, in_shardings=ns(None, "y")).lower(x)


def test_unconstrained_in_jit_shardings():
    with pytest.raises(ValueError, match="Unconstrained dims are not allowed when passed to out_shardings"):
        sk.jit(lambda a: a, out_shardings=ns(sk.UNCONSTRAINED))


def test_bad_configuration():
    with pytest.raises(ValueError, match="partitioner must be one of"):
        sk.jit(lambda a: a, partitioner="xla")
    with pytest.raises(ValueError, match=r"Arguments \[0\] cannot be both static and donated"):
        sk.jit(lambda a: a, static_argnums=0, donate_argnums=0)
    with pytest.raises(TypeError, match="in_shardings must hold shardkit or jax Shardings, PartitionSpecs or None"):
        sk.jit(lambda a: a, in_shardings="x")
    with pytest.raises(TypeError, match="jit needs a callable"):
        sk.jit(3)


def test_in_shardings_tree_mismatch():
    f = sk.jit(lambda a, b: a + b, in_shardings=(ns(), ns(), ns()))
    with pytest.raises(ValueError, match="one entry .* per positional argument; 2 arguments do not match"):
        f.lower(np.ones(8, F32), np.ones(8, F32))


def test_static_arguments():
    f = sk.jit(lambda a, n: a * n, static_argnums=1)
    with pytest.raises(TypeError, match=r"static_argnums \(1,\), but was called with 1 positional"):
        f.lower(np.ones(2, F32))
    with pytest.raises(TypeError, match="must be hashable"):
        f.lower(np.ones(2, F32), [3])


def test_constraint_errors():
    with pytest.raises(
        ValueError,
        match=r"for x holds the bare PartitionSpec P\('x',\), which names mesh axes of no mesh: use it inside",
    ):
        sk.jit(lambda a: sk.with_sharding_constraint(a, P("x"))).lower(np.ones(8, F32))
    with pytest.raises(TypeError, match="with_sharding_constraint for x must hold shardkit or jax Shardings"):
        sk.jit(lambda a: sk.with_sharding_constraint(a, "x")).lower(np.ones(8, F32))
    with pytest.raises(
        ValueError,
        match=r"with_sharding_constraint on x\['w'\] of shape \(6,\): .* only valid for "
        r"values of rank at least 2",
    ):
        sk.jit(lambda d: sk.with_sharding_constraint(d, {"w": ns("x", "y")})).lower({"w": np.ones(6, F32)})
    with pytest.raises(sk.IndivisibleError, match=r"with_sharding_constraint on x of shape \(6,\)"):
        sk.with_sharding_constraint(np.ones(6, F32), ns("x"))  # eagerly an Array: jax's divisibility rule


def test_jit_of_one_function_shares_its_caches():
    def f(a):
        return a + 1

    s = ns("x")
    x = sk.ShapeDtypeStruct((8,), F32, sharding=s)
    assert sk.jit(f, out_shardings=s).lower(x)._lowered.module is sk.jit(f, out_shardings=s).lower(x)._lowered.module
    assert sk.jit(f).lower(x)._lowered.module is not sk.jit(f, out_shardings=s).lower(x)._lowered.module
    before = sk.jit(f, out_shardings=s)._lowering
    sk.clear_caches()
    assert sk.jit(f, out_shardings=s)._lowering is not before


def test_jax_constraint_inside_shares_the_mesh_symbol():
    jmesh = jax.sharding.Mesh(MESH.devices, ("x", "y"))
    inner = jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec(None, "y"))
    f = sk.jit(lambda a: jax.lax.with_sharding_constraint(a * 2, inner), out_shardings=ns("x"))
    text = f.lower(np.ones((8, 4), F32)).as_text()
    assert text.count("sdy.mesh @") == 1 and 'sdy.sharding_constraint %1 <@mesh, [{}, {"y"}]>' in text
    np.testing.assert_array_equal(np.asarray(f(np.ones((8, 4), F32))), np.full((8, 4), 2.0))
