"""Mesh, AbstractMesh, make_mesh and the mesh context: jax's documented behaviour and every error."""

import pickle
import threading

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit.mesh import current_mesh

DEVS = jax.devices()


def grid(order, shape):
    return np.array([DEVS[i] for i in order], dtype=object).reshape(shape)


def test_mesh_properties_match_jax():
    devices = grid([0, 2, 4, 6, 1, 3, 5, 7], (4, 2))
    mine, theirs = sk.Mesh(devices, ("x", "y")), jax.sharding.Mesh(devices, ("x", "y"))
    assert mine.shape == theirs.shape
    assert mine.shape_tuple == theirs.shape_tuple
    assert mine.size == theirs.size == 8
    assert mine.axis_names == theirs.axis_names
    assert (mine.device_ids == theirs.device_ids).all()
    assert (mine.devices == theirs.devices).all()
    assert mine.local_devices == theirs.local_devices
    assert mine.is_multi_process is theirs.is_multi_process is False
    assert mine.empty is False
    assert repr(mine) == repr(theirs)
    assert str(mine) == str(theirs)
    assert [t.name for t in mine.axis_types] == [t.name for t in theirs.axis_types] == ["Auto", "Auto"]


def test_mesh_is_interned_immutable_and_hashable():
    a = sk.Mesh(grid(range(8), (4, 2)), ("x", "y"))
    b = sk.Mesh(grid(range(8), (4, 2)), ["x", "y"])
    assert a is b and hash(a) == hash(b)
    assert a != sk.Mesh(grid(range(8), (4, 2)), ("a", "b"))
    assert a != sk.Mesh(grid(range(8)[::-1], (4, 2)), ("x", "y"))
    assert a != sk.Mesh(grid(range(8), (4, 2)), ("x", "y"), axis_types=sk.AxisType.Explicit)
    with pytest.raises(AttributeError, match="immutable"):
        a.axis_names = ("p", "q")
    with pytest.raises(ValueError):
        a.devices[0, 0] = DEVS[1]
    assert pickle.loads(pickle.dumps(a)) is a


def test_mesh_errors_name_the_problem():
    with pytest.raises(ValueError, match=r"devices.ndim == 2 and len\(axis_names\) == 1"):
        sk.Mesh(grid(range(8), (4, 2)), ("x",))
    with pytest.raises(ValueError, match=r"unique.*\['x'\]"):
        sk.Mesh(grid(range(8), (4, 2)), ("x", "x"))
    with pytest.raises(ValueError, match=r"devices must be unique.*CpuDevice\(id=0\)"):
        sk.Mesh(grid([0, 1, 2, 3, 0, 1, 2, 3], (4, 2)), ("x", "y"))
    with pytest.raises(ValueError, match="axis names must be str"):
        sk.Mesh(grid(range(8), (8,)), (1,))
    with pytest.raises(ValueError, match="2 axis_types"):
        sk.Mesh(grid(range(8), (8,)), ("x",), axis_types=(sk.AxisType.Auto,) * 2)


def test_empty_mesh():
    empty = sk.Mesh(np.empty((), dtype=object), ())
    assert empty.empty and empty.size == 0 and current_mesh() is empty


def test_abstract_mesh_both_forms():
    old_form = sk.AbstractMesh((("x", 4), ("y", 2)))
    jax_form = sk.AbstractMesh((4, 2), ("x", "y"))
    assert old_form is jax_form
    theirs = jax.sharding.AbstractMesh((4, 2), ("x", "y"))
    assert old_form.shape_tuple == theirs.shape_tuple
    assert old_form.shape == theirs.shape
    assert old_form.size == theirs.size and old_form.axis_names == theirs.axis_names
    assert not old_form.empty
    assert repr(old_form) == "AbstractMesh('x': 4, 'y': 2, axis_types=(Auto, Auto))"
    mesh = sk.Mesh(grid(range(8), (4, 2)), ("x", "y"))
    # a concrete mesh's abstract mesh names its devices' kind, as jax's does: one abstract mesh with jax's
    concrete = mesh.abstract_mesh
    assert concrete.shape_tuple == old_form.shape_tuple and concrete.abstract_device.platform == "cpu"
    assert concrete == mesh.to_jax().abstract_mesh and hash(concrete) == hash(mesh.to_jax().abstract_mesh)
    assert concrete != old_form and repr(concrete).endswith("device_kind=cpu, platform=cpu)")
    assert concrete is sk.AbstractMesh.from_jax(mesh.to_jax().abstract_mesh)
    for m in (old_form, concrete):
        assert pickle.loads(pickle.dumps(m)) is m


@pytest.mark.parametrize("attr", ["devices", "device_ids", "local_devices", "local_mesh", "is_multi_process"])
def test_abstract_mesh_has_no_devices(attr):
    with pytest.raises(ValueError, match=f"AbstractMesh does not implement {attr}"):
        getattr(sk.AbstractMesh((4, 2), ("x", "y")), attr)


def test_abstract_mesh_is_not_a_context_manager():
    with pytest.raises(ValueError, match="__enter__"), sk.AbstractMesh((4, 2), ("x", "y")):
        pass


def test_abstract_mesh_errors():
    with pytest.raises(ValueError, match="positive integer size"):
        sk.AbstractMesh((0, 2), ("x", "y"))
    with pytest.raises(ValueError, match="2 axis sizes"):
        sk.AbstractMesh((4, 2), ("x",))
    with pytest.raises(TypeError, match="shape tuple"):
        sk.AbstractMesh((4, 2))


def test_mesh_context_nests_and_shadows():
    outer = sk.Mesh(grid(range(8), (4, 2)), ("x", "y"))
    inner = sk.Mesh(grid(range(4), (4,)), ("x",))
    assert current_mesh().empty
    with outer as m:
        assert m is outer and current_mesh() is outer
        with inner:
            assert current_mesh() is inner  # the inner mesh shadows the outer one's axes
        assert current_mesh() is outer
    assert current_mesh().empty


def test_mesh_context_is_thread_local():
    mesh = sk.Mesh(grid(range(8), (8,)), ("x",))
    seen = []
    with mesh:
        t = threading.Thread(target=lambda: seen.append(current_mesh()))
        t.start()
        t.join()
    assert seen[0].empty


def test_local_mesh_single_process():
    mesh = sk.Mesh(grid(range(8), (4, 2)), ("x", "y"))
    assert mesh.local_mesh is mesh


class _FakeDevice:
    """A device of some process, for the subcube rule (only process_index and client are read)."""

    class _Client:
        def process_index(self):
            return 0

    client = _Client()

    def __init__(self, i, process):
        self.id, self.process_index = i, process

    def __repr__(self):
        return f"Fake(id={self.id}, p={self.process_index})"


def test_local_mesh_subcube_rule(monkeypatch):
    # Fake devices of other processes: Mesh's device check (jax Devices only) is lifted for them.
    monkeypatch.setattr(sk.mesh, "check_devices", lambda devices, what: tuple(devices))
    rows = sk.Mesh(np.array([_FakeDevice(i, i // 4) for i in range(8)], dtype=object).reshape(2, 4), ("x", "y"))
    local = rows.local_mesh
    assert local.shape_tuple == (("x", 1), ("y", 4))
    assert [d.id for d in local.devices.flat] == [0, 1, 2, 3]
    assert rows.is_multi_process
    checker = sk.Mesh(np.array([_FakeDevice(i, i % 2) for i in range(8)], dtype=object).reshape(2, 4), ("x", "y"))
    with pytest.raises(ValueError, match="contiguous subcube"):
        _ = checker.local_mesh


def test_make_mesh():
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    assert (mesh.devices == np.array(DEVS).reshape(4, 2)).all()
    assert mesh.axis_types == (sk.AxisType.Auto, sk.AxisType.Auto)
    assert sk.make_mesh((2,), ("x",), devices=DEVS[4:]).device_ids.tolist() == [4, 5]
    with pytest.raises(ValueError, match=r"needs 16 devices.*only 8"):
        sk.make_mesh((4, 4), ("x", "y"))
    with pytest.raises(ValueError, match="2 axis sizes"):
        sk.make_mesh((4, 2), ("x",))
