"""The sharding model's documented behaviour (the jax.sharding reference) and every promised error."""

import pickle

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit._jaxlib import HloSharding
from shardkit.dialects import mhlo, sdy as sdy_forms
from shardkit.sharding import from_hlo, from_jax as sharding_from_jax
from tests.jax_oracle import jax_named

DEVS = jax.devices()
MESH = sk.Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"))


# -- PartitionSpec -------------------------------------------------------------------------------------


def test_partition_spec_is_jax_s_class():
    """shardkit's P is jax's: jax's type checks (shard_map's in_specs, NamedSharding) take it."""
    assert P is jax.sharding.PartitionSpec and sk.UNCONSTRAINED is jax.sharding.PartitionSpec.UNCONSTRAINED
    assert repr(P("x", None)) == "P('x', None)" and repr(P("x")) == "P('x',)"
    assert P(("x",)) == P("x")
    assert P(["x", "y"]) == P(("x", "y"))
    assert P(()) == P(None)
    assert P("x", None)[1] is None and len(P("x", None)) == 2
    assert repr(P(P.UNCONSTRAINED, "y")) == "P(UNCONSTRAINED, 'y')"


def test_partition_spec_equality_like_jax():
    assert P("x", None) != P("x")  # different specs, as in jax
    assert P("x") != ("x",)  # only a spec equals a spec
    assert P("x", "y") == P("x", "y") and hash(P("x", "y")) == hash(P("x", "y"))


def test_partition_spec_pickle_add_and_errors():
    spec = P(("x", "y"), P.UNCONSTRAINED, None)
    assert pickle.loads(pickle.dumps(spec)) == spec
    assert pickle.loads(pickle.dumps(spec))[1] is sk.UNCONSTRAINED
    assert P("x") + (None, "y") == P("x", None, "y")
    assert ("x",) + P("y") == P("x", "y")
    with pytest.raises(TypeError, match="Subclassing"):
        type("Mine", (P,), {})


@pytest.mark.parametrize(
    "spec, error, match",
    [
        (lambda: P(1.5), TypeError, r"entry 0 must be None, an axis name.*got 1\.5 of type float"),
        (lambda: P("a", ("x", None)), TypeError, r"entry 1 must hold mesh axis names \(str\), got None"),
        (lambda: P("x", unreduced={"y"}), ValueError, "unreduced or reduced axes, which shardkit does not model"),
    ],
)
def test_named_sharding_checks_the_entries_jax_s_spec_accepts(spec, error, match):
    """jax's PartitionSpec takes any entry; shardkit refuses what names no mesh axis where it uses the spec."""
    with pytest.raises(error, match=match):
        sk.NamedSharding(sk.make_mesh((4, 2), ("x", "y")), spec())


# -- NamedSharding errors --------------------------------------------------------------------------------


def test_unknown_axis_names_axis_and_mesh():
    with pytest.raises(ValueError, match=r"Resource axis: z of P\('z',\) is not found in mesh: \('x', 'y'\)"):
        sk.NamedSharding(MESH, P("z"))


def test_axis_used_twice():
    with pytest.raises(sk.DuplicateSpecError, match=r"P\('x', \('y', 'x'\)\) uses 'x' more than once"):
        sk.NamedSharding(MESH, P("x", ("y", "x")))


def test_spec_longer_than_rank():
    s = sk.NamedSharding(MESH, P("x", None, "y"))
    with pytest.raises(
        ValueError, match="only valid for values of rank at least 3, but was applied to a value of rank 2"
    ):
        s.shard_shape((8, 4))
    with pytest.raises(ValueError, match="For scalars the PartitionSpec should be P()"):
        sk.NamedSharding(MESH, P("x")).devices_indices_map(())


def test_indivisible_dimension_names_dim_size_and_product():
    with pytest.raises(
        sk.IndivisibleError,
        match=r"Dimension 0 of shape \(6, 4\) has size 6, which is not divisible by 8.*\('x', 'y'\) \(sizes 4\*2\)",
    ) as e:
        sk.NamedSharding(MESH, P(("x", "y"))).shard_shape((6, 4))
    assert (e.value.dim, e.value.size, e.value.parts) == (0, 6, 8)
    with pytest.raises(sk.IndivisibleError, match="Dimension 1 of shape"):
        sk.NamedSharding(MESH, P(None, "y")).devices_indices_map((4, 3))


def test_memory_kind_unknown_to_device():
    with pytest.raises(
        ValueError, match=r"Memory kind 'bogus' is unknown to device .*: it can address device, pinned_host"
    ):
        sk.NamedSharding(MESH, P(), memory_kind="bogus")
    s = sk.NamedSharding(MESH, P("x"))
    assert s.memory_kind == "device"
    pinned = s.with_memory_kind("pinned_host")
    assert pinned.memory_kind == "pinned_host" and pinned != s and not pinned.is_equivalent_to(s, 2)
    assert sk.NamedSharding(MESH, P("x"), memory_kind="device") == s


def test_unconstrained_needs_an_auto_axis():
    explicit = sk.Mesh(np.array(DEVS).reshape(4, 2), ("x", "y"), axis_types=sk.AxisType.Explicit)
    with pytest.raises(ValueError, match="cannot use P.UNCONSTRAINED"):
        sk.NamedSharding(explicit, P(P.UNCONSTRAINED))


def test_non_mesh_and_non_spec_arguments():
    with pytest.raises(TypeError, match="needs a Mesh or AbstractMesh"):
        sk.NamedSharding("mesh", P())
    with pytest.raises(TypeError, match="needs a PartitionSpec"):
        sk.NamedSharding(MESH, "x")


# -- NamedSharding behaviour -------------------------------------------------------------------------------


def test_named_sharding_repr_hash_eq_and_pickle():
    s = sk.NamedSharding(MESH, P("x", "y"))
    assert repr(s) == repr(jax_named(s))
    assert s == sk.NamedSharding(MESH, ["x", "y"]) and hash(s) == hash(sk.NamedSharding(MESH, P("x", "y")))
    assert pickle.loads(pickle.dumps(s)) == s


def test_reference_example_placement():
    # The jax.sharding reference: an (8, 2) array over a 4x2 mesh with P('x', 'y').
    s = sk.NamedSharding(MESH, P("x", "y"))
    indices = s.devices_indices_map((8, 2))
    assert indices[DEVS[0]] == (slice(0, 2), slice(0, 1))
    assert indices[DEVS[7]] == (slice(6, 8), slice(1, 2))
    assert s.shard_shape((8, 2)) == (2, 1)


def test_index_maps_are_cached_and_read_only():
    s = sk.NamedSharding(MESH, P("x"))
    first = s.devices_indices_map((8, 2))
    assert s.devices_indices_map([8, 2]) is first
    with pytest.raises(TypeError):
        first[DEVS[0]] = None
    sk.clear_caches()
    assert s.devices_indices_map((8, 2)) is not first


def test_abstract_mesh_sharding_has_shapes_but_no_devices():
    abstract = sk.NamedSharding(sk.AbstractMesh((4, 2), ("x", "y")), P("x"))
    assert abstract.shard_shape((8, 2)) == (2, 2)
    assert abstract.num_devices == 8 and abstract.memory_kind is None
    for attr in ["device_set", "addressable_devices", "is_fully_addressable"]:
        with pytest.raises(ValueError, match="AbstractMesh"):
            getattr(abstract, attr)
    with pytest.raises(ValueError, match="AbstractMesh"):
        abstract.devices_indices_map((8, 2))
    other = sk.NamedSharding(sk.AbstractMesh((4, 2), ("x", "y")), P("x", None))
    assert abstract.is_equivalent_to(other, 2)
    assert not abstract.is_equivalent_to(sk.NamedSharding(MESH, P("x")).with_memory_kind("device"), 2)


def test_size_one_axes_shard_nothing():
    mesh = sk.Mesh(np.array(DEVS).reshape(8, 1), ("x", "one"))
    s = sk.NamedSharding(mesh, P("one", "x"))
    assert s.is_equivalent_to(sk.NamedSharding(mesh, P(None, "x")), 2)
    assert sk.NamedSharding(mesh, P("one")).is_fully_replicated


# -- the other kinds, through equivalence with a NamedSharding -------------------------------------------


def test_single_device_sharding():
    s = sk.SingleDeviceSharding(DEVS[3])
    theirs = jax.sharding.SingleDeviceSharding(DEVS[3])
    assert repr(s) == repr(theirs)
    assert dict(s.devices_indices_map((4, 2))) == theirs.devices_indices_map((4, 2))
    assert s.is_fully_replicated and s.is_fully_addressable and s.device_set == {DEVS[3]}
    one = sk.NamedSharding(sk.Mesh(np.array([DEVS[3]]), ("x",)), P("x"))
    assert s.is_equivalent_to(one, 2) and one.is_equivalent_to(s, 2)
    assert not s.is_equivalent_to(sk.SingleDeviceSharding(DEVS[2]), 2)
    assert pickle.loads(pickle.dumps(s)) == s


def test_positional_sharding_matches_named_placements():
    pos = sk.PositionalSharding(DEVS).reshape(4, 2)
    assert pos.shape == (4, 2) and pos.ndim == 2
    assert pos.is_equivalent_to(sk.NamedSharding(MESH, P("x", "y")), 2)
    assert pos.replicate(1).is_equivalent_to(sk.NamedSharding(MESH, P("x")), 2)
    assert pos.replicate(0).is_equivalent_to(sk.NamedSharding(MESH, P(None, "y")), 2)
    assert pos.replicate().is_fully_replicated
    assert pos.replicate().is_equivalent_to(sk.NamedSharding(MESH, P()), 2)
    # The transpose puts mesh axis y on dim 0 and x on dim 1.
    assert pos.T.is_equivalent_to(sk.NamedSharding(MESH, P("y", "x")), 2)
    assert dict(pos.T.devices_indices_map((4, 8))) == dict(
        sk.NamedSharding(MESH, P("y", "x")).devices_indices_map((4, 8))
    )
    assert pos.replicate(1, keepdims=False).shape == (4,)
    assert "PositionalSharding([[{CPU 0} {CPU 1}]" in repr(pos)
    assert pickle.loads(pickle.dumps(pos.replicate(1))) == pos.replicate(1)


def test_positional_sharding_errors():
    with pytest.raises(ValueError, match="only valid for values of rank 2, but was applied to a value of rank 1"):
        sk.PositionalSharding(DEVS).reshape(4, 2).shard_shape((8,))
    with pytest.raises(ValueError, match="at least one device"):
        sk.PositionalSharding([])
    with pytest.raises(sk.IndivisibleError, match="PositionalSharding axis 0"):
        sk.PositionalSharding(DEVS).reshape(4, 2).shard_shape((6, 2))


def test_pmap_sharding_default_and_equivalence():
    s = sk.PmapSharding.default((8, 3))
    assert s.shard_shape((8, 3)) == (3,)
    assert s.devices_indices_map((8, 3))[DEVS[5]] == (5, slice(None))
    assert s.is_equivalent_to(sk.NamedSharding(sk.Mesh(np.array(DEVS), ("i",)), P("i")), 2)
    assert set(s.replica_ids((8, 3)).values()) == {0}
    replicated = sk.PmapSharding(DEVS[:4], None)
    assert replicated.is_fully_replicated and replicated.shard_shape((8, 3)) == (8, 3)
    assert list(replicated.replica_ids((8, 3)).values()) == [0, 1, 2, 3]
    assert sk.PmapSharding.default((3, 4), sharded_dim=1).devices_indices_map((3, 4))[DEVS[2]] == (slice(None), 2)
    assert pickle.loads(pickle.dumps(s)) == s


def test_pmap_sharding_errors():
    with pytest.raises(ValueError, match=r"dimension 0 of shape \(4, 3\) has size 4, but there are 8 devices"):
        sk.PmapSharding.default((8, 3)).shard_shape((4, 3))
    with pytest.raises(ValueError, match="needs 16 devices"):
        sk.PmapSharding.default((16,))


def test_gspmd_sharding_kinds():
    tiled = sk.GSPMDSharding(DEVS, "{devices=[4,2]<=[8]}")
    assert tiled.is_equivalent_to(sk.NamedSharding(MESH, P("x", "y")), 2)
    partial = sk.GSPMDSharding(DEVS, "{devices=[4,1,2]<=[8] last_tile_dim_replicate}")
    assert partial.is_equivalent_to(sk.NamedSharding(MESH, P("x")), 2)
    subgroup = sk.GSPMDSharding(DEVS, "{devices=[4,1,2]<=[8] last_tile_dims={replicated}}")
    assert subgroup == partial
    replicated = sk.GSPMDSharding.get_replicated(DEVS)
    assert replicated.is_fully_replicated and replicated.is_equivalent_to(sk.NamedSharding(MESH, P()), 2)
    maximal = sk.GSPMDSharding(DEVS, "{maximal device=3}")
    assert maximal.is_fully_replicated and maximal.shard_shape((4, 2)) == (4, 2)
    explicit = sk.GSPMDSharding(DEVS, "{devices=[4,2]7,6,5,4,3,2,1,0}")
    assert explicit.devices_indices_map((8, 2))[DEVS[7]] == (slice(0, 2), slice(0, 1))
    assert pickle.loads(pickle.dumps(explicit)) == explicit
    assert repr(explicit) == "GSPMDSharding({devices=[4,2]7,6,5,4,3,2,1,0}, memory_kind=device)"


def test_gspmd_sharding_errors():
    with pytest.raises(ValueError, match="spans 8 devices, but 4 were given"):
        sk.GSPMDSharding(DEVS[:4], "{devices=[4,2]<=[8]}")
    with pytest.raises(ValueError, match="Cannot parse HLO sharding"):
        sk.GSPMDSharding(DEVS, "{devices=[4,2]<=[")
    with pytest.raises(ValueError, match="names device position 3, but only 2 devices"):
        sk.GSPMDSharding(DEVS[:2], "{maximal device=3}")
    with pytest.raises(ValueError, match="tiles 2 dimensions, but the array has rank 3"):
        sk.GSPMDSharding(DEVS, "{devices=[4,2]<=[8]}").shard_shape((8, 2, 2))
    with pytest.raises(ValueError, match="supports tiled, replicated and maximal"):
        sk.GSPMDSharding(DEVS, "{manual}")
    with pytest.raises(TypeError, match="needs a Sharding"):
        sk.GSPMDSharding(DEVS, "{replicated}").is_equivalent_to("x", 2)


# -- HLO shardings back onto the model ------------------------------------------------------------------


@pytest.mark.parametrize(
    "hlo, spec",
    [
        ("{devices=[4,1,2]<=[8] last_tile_dim_replicate}", P("x")),
        ("{devices=[1,2,4]<=[4,2]T(1,0) last_tile_dim_replicate}", P(None, "y")),
        ("{devices=[2,4]<=[4,2]T(1,0)}", P("y", "x")),
        ("{devices=[8,1]<=[8]}", P(("x", "y"))),
        ("{replicated}", P()),
    ],
)
def test_from_hlo_finds_the_named_sharding(hlo, spec):
    s = from_hlo(mhlo.parse(hlo), DEVS, MESH, 2)
    assert s == sk.NamedSharding(MESH, spec)


def test_from_hlo_without_named_equivalent_is_gspmd():
    hlo = mhlo.parse("{devices=[8,1]0,2,1,3,4,6,5,7}")
    s = from_hlo(hlo, DEVS, MESH, 2)
    assert isinstance(s, sk.GSPMDSharding) and s.hlo_sharding == hlo
    assert isinstance(from_hlo(hlo, (DEVS[0],), None, 2), sk.SingleDeviceSharding)


# -- a kind of one's own, and the conversions every kind owns ---------------------------------------------


class ReversedRows(sk.Sharding):
    """Dimension 0 cut over the devices in reverse order: a kind written against the base's hooks alone."""

    def __init__(self, devices):
        self._devices = tuple(devices)

    def __eq__(self, other):
        return isinstance(other, ReversedRows) and self._devices == other._devices

    def __hash__(self):
        return hash((ReversedRows, self._devices))

    def __repr__(self):
        return f"ReversedRows({len(self._devices)} devices)"

    @property
    def device_assignment(self):
        return self._devices

    def to_hlo(self, ndim):
        n = len(self._devices)
        return HloSharding.subgroup_with_device_ordering(np.arange(n)[::-1].reshape([n] + [1] * (ndim - 1)), [])

    is_fully_replicated = False
    memory_kind = "device"

    def with_memory_kind(self, kind):
        return self


def test_a_new_kind_works_everywhere_from_its_hooks():
    s = ReversedRows(DEVS)
    assert isinstance(s, sk.Sharding) and isinstance(s, jax.sharding.Sharding) and s.mesh is None
    data = np.arange(32.0, dtype=np.float32).reshape(8, 4)
    assert s.devices_indices_map((8, 4))[DEVS[0]] == (slice(7, 8), slice(None))
    assert s.is_equivalent_to(sk.GSPMDSharding(DEVS, "{devices=[8,1]7,6,5,4,3,2,1,0}"), 2)
    x = sk.device_put(data, s)
    np.testing.assert_array_equal(np.asarray(x), data)
    f = sk.jit(lambda a: a * 2, in_shardings=s, out_shardings=s)
    assert '<["_axis_0"=8], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>' in f.lower(x).as_text()
    y = f(x)
    assert y.sharding.is_equivalent_to(s, 2)
    np.testing.assert_array_equal(np.asarray(y), data * 2)
    np.testing.assert_array_equal(np.asarray(jax.device_put(x, DEVS[0])), data)  # jax moves it by the kind's map


def test_a_kind_has_one_base():
    with pytest.raises(TypeError, match="A Sharding kind has one base class, Sharding; Two has"):
        type("Two", (int, sk.Sharding), {})


@pytest.mark.parametrize(
    "s, shape",
    [
        (sk.NamedSharding(MESH, P("y", "x")), (4, 8)),
        (sk.NamedSharding(MESH, P(None, ("x", "y"))), (2, 8)),
        (sk.SingleDeviceSharding(DEVS[3]), (4,)),
        (sk.GSPMDSharding(DEVS, "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"), (4, 2)),
        (sk.PositionalSharding(DEVS).reshape(4, 2).replicate(1), (8, 2)),
    ],
)
def test_to_jax_places_pieces_alike(s, shape):
    theirs = s.to_jax(len(shape))
    assert dict(theirs.devices_indices_map(shape)) == dict(s.devices_indices_map(shape))
    assert sharding_from_jax(theirs, len(shape)).is_equivalent_to(s, len(shape))


def test_abstract_named_sharding_binds_and_converts():
    abstract = sk.NamedSharding(sk.AbstractMesh((4, 2), ("x", "y")), P("x"))
    assert (
        not abstract.is_concrete and abstract.abstract_key(2)[:3] == sk.NamedSharding(MESH, P("x")).abstract_key(2)[:3]
    )
    bound = abstract.bind(DEVS[::-1])
    assert bound.is_concrete and bound.mesh.device_ids.tolist() == [[7, 6], [5, 4], [3, 2], [1, 0]]
    assert isinstance(abstract.to_jax().mesh, jax.sharding.AbstractMesh)
    with pytest.raises(ValueError, match="has 8 positions, but 4 devices were given"):
        abstract.bind(DEVS[:4])
    assert sk.NamedSharding(MESH, P("x")).with_unconstrained_dim(1).spec == P("x", sk.UNCONSTRAINED)
    with pytest.raises(NotImplementedError, match="needs a NamedSharding"):
        sk.SingleDeviceSharding(DEVS[0]).with_unconstrained_dim(0)


class FirstAxisRows(sk.Sharding):
    """A mesh-bound kind from the hooks alone: dimension 0 cut over the mesh's first axis."""

    def __init__(self, mesh):
        self.mesh = mesh

    def _key(self):
        return (self.mesh, None)

    @property
    def device_assignment(self):
        return self.mesh.flat_devices

    def to_hlo(self, ndim):
        return mhlo.tile(self.mesh.shape_tuple, [(self.mesh.axis_names[0],)] + [()] * (ndim - 1))

    def to_sdy(self, ndim):
        mesh = self.mesh.to_sdy()
        dims = [sdy_forms.SdyDim((self.mesh.axis_names[0],))] + [sdy_forms.SdyDim()] * (ndim - 1)
        return mesh, sdy_forms.SdyTensorSharding(mesh.default_name(), tuple(dims))

    is_fully_replicated = False

    def __repr__(self):
        return f"FirstAxisRows({self.mesh})"


def test_a_mesh_kind_lowers_once_per_mesh_not_per_shape():
    # Two meshes of one shape over the same devices, other axis names: the lowering cache must not hand the
    # second the first's sdy.mesh (the base's abstract_key includes a mesh kind's mesh).
    f = sk.jit(lambda a: a + 1)
    data = np.zeros((8, 4), np.float32)
    for names in (("x", "y"), ("rows", "cols")):
        s = FirstAxisRows(sk.Mesh(np.array(DEVS).reshape(4, 2), names))
        text = f.lower(sk.device_put(data, s)).as_text()
        assert f'sdy.mesh @mesh = <["{names[0]}"=4, "{names[1]}"=2]>' in text, text
        assert f'#sdy.sharding<@mesh, [{{"{names[0]}"}}, {{}}]>' in text


# -- what the Sharding base gives a kind ------------------------------------------------------------------


class Everywhere(sk.Sharding):
    """A kind as a newcomer writes one: its own logic and its ``_key``; equality, hashing, pickling and the
    memory kind come from the base."""

    def __init__(self, devices, *, memory_kind=None):
        self._devices, self._memory_kind = tuple(devices), memory_kind

    @property
    def device_assignment(self):
        return self._devices

    def to_hlo(self, ndim):
        return HloSharding.replicate()

    is_fully_replicated = True

    def __repr__(self):
        return f"Everywhere({len(self._devices)})"

    def _key(self):
        return (self._devices, self._memory_kind)


def test_a_kind_gets_equality_hashing_and_pickling_from_its_key():
    s = Everywhere(DEVS)
    assert s == Everywhere(DEVS) and hash(s) == hash(Everywhere(DEVS)) and s != Everywhere(DEVS[::-1])
    assert s.memory_kind is None and s.with_memory_kind("device").memory_kind == "device"
    assert s != s.with_memory_kind("device") and s != sk.GSPMDSharding.get_replicated(DEVS)
    assert pickle.loads(pickle.dumps(s)) == s and s.shard_shape((8, 2)) == (8, 2)
    assert s.mesh is None and s.spec is None


def test_only_a_mesh_kind_has_a_mesh_and_spec():
    named = sk.NamedSharding(MESH, P("x"))
    assert (named.mesh, named.spec) == (MESH, P("x"))
    for other in [
        sk.SingleDeviceSharding(DEVS[0]),
        sk.PmapSharding.default((8, 2)),
        sk.PositionalSharding(DEVS),
        sk.GSPMDSharding(DEVS, "{devices=[4,2]<=[8]}"),
    ]:
        assert other.mesh is None and other.spec is None


def test_equal_gspmd_shardings_hash_alike():
    """Every replicated form is one placement (``mhlo.equivalent``), so it is one key: equal and one hash; a
    pickle keeps the form it was given."""
    maximal, replicated = sk.GSPMDSharding(DEVS[:1], "{maximal device=0}"), sk.GSPMDSharding(DEVS[:1], "{replicated}")
    assert maximal == replicated and hash(maximal) == hash(replicated)
    assert repr(pickle.loads(pickle.dumps(maximal))) == repr(maximal)
