"""Arrays across 2 processes x 4 CPU devices, against jax on the same meshes (a smoke test; test_multiprocess.py
runs the full multi-process suite)."""

from tests.multiprocess import check_ok, run_workers

SCRIPT = """
from jax.experimental import multihost_utils
from shardkit import multihost

mesh = sk.make_mesh((4, 2), ("x", "y"))
jmesh = jax.sharding.Mesh(mesh.devices, ("x", "y"))
def J(*spec): return jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec(*spec))
def S(*spec): return sk.NamedSharding(mesh, P(*spec))
data = np.arange(32, dtype=np.float32).reshape(8, 4)
out = {}
def same(x, j):
    a = [(s.device.id, str(s.index), s.replica_id, np.asarray(s.data).tolist()) for s in x.addressable_shards]
    b = [(s.device.id, str(s.index), s.replica_id, np.asarray(s.data).tolist()) for s in j.addressable_shards]
    return a == b
local = data[PROCESS_ID * 4:(PROCESS_ID + 1) * 4]
x = sk.make_array_from_process_local_data(S("x"), local)
j = jax.make_array_from_process_local_data(J("x"), local)
out["pld_shape"] = [list(x.shape), list(j.shape)]
out["pld_same"] = same(x, j)
out["global_none"] = sum(s.data is None for s in x.global_shards)
for name, a, gather in [("asarray", x, np.asarray), ("asarray_jax", j, np.asarray), ("device_get", x, sk.device_get)]:
    try:
        gather(a); out[name] = "no error"
    except RuntimeError as e:
        out[name] = str(e)[:60]
out["repr"] = [repr(x), repr(j)]
cb = sk.make_array_from_callback((8, 4), S("x", "y"), lambda i: data[i])
out["cb_same"] = same(cb, jax.make_array_from_callback((8, 4), J("x", "y"), lambda i: data[i]))
r = sk.device_put(data, S())
out["replicated_value"] = np.asarray(r).tolist() == data.tolist()
out["put_same"] = same(sk.device_put(data, S(None, "y")), jax.device_put(data, J(None, "y")))
same_pieces = sk.GSPMDSharding(mesh.flat_devices, "{devices=[4,2]<=[8]}")
out["reshard_same_pieces"] = same(sk.device_put(cb, same_pieces), cb)
try:
    sk.device_put(cb, S("y", "x")); out["reshard_err"] = None
except ValueError as e:
    out["reshard_err"] = str(e)[:80]
rr = sk.device_put(r, S("x"))  # every piece is held locally (replicated source)
out["reshard_from_replicated"] = same(rr, jax.device_put(data, J("x")))
out["allgather"] = multihost.process_allgather(cb, tiled=True).tolist() == data.tolist()
out["allgather_stack"] = multihost.process_allgather(np.float32(PROCESS_ID)).tolist()
g = multihost.host_local_array_to_global_array(local, mesh, P("x"))
gj = multihost_utils.host_local_array_to_global_array(local, jmesh, jax.sharding.PartitionSpec("x"))
out["h2g"] = [list(g.shape), same(g, gj)]
l = multihost.global_array_to_host_local_array(g, mesh, P("x"))
lj = multihost_utils.global_array_to_host_local_array(gj, jmesh, jax.sharding.PartitionSpec("x"))
out["g2h"] = [list(l.shape), same(l, lj), np.asarray(l).tolist() == local.tolist()]
far = sk.Mesh(np.array([d for d in sk.devices() if d.process_index == 1]).reshape(2, 2), ("a", "b"))
f = sk.make_array_from_callback((4, 4), sk.NamedSharding(far, P("a")), lambda i: data[:4, :4][i], dtype=np.float32)
out["far"] = [len(f.addressable_shards), sum(s.data is None for s in f.global_shards), f.dtype.name, repr(f)]
report(out)
"""


def test_arrays_across_two_processes():
    outs = [r for (r,) in check_ok(run_workers(SCRIPT, 2, 4, timeout=150))]
    for out in outs:
        assert out["pld_shape"] == [[8, 4], [8, 4]] and out["pld_same"]
        assert out["global_none"] == 4  # the other process's shards, listed with data=None
        assert out["asarray"] == out["asarray_jax"] != "no error"  # jax's own gather and message
        assert out["device_get"].startswith("Fetching the value of an Array that spans non-addressable")
        assert out["repr"][0] == out["repr"][1] == "Array(shape=(8, 4), dtype=float32)"
        assert out["cb_same"] and out["put_same"] and out["replicated_value"]
        assert out["reshard_same_pieces"] and out["reshard_from_replicated"]
        assert out["reshard_err"].startswith("Cannot reshard an Array of shape (8, 4) that spans other processes")
        assert out["allgather"] and out["allgather_stack"] == [0.0, 1.0]
        assert out["h2g"] == [[8, 4], True] and out["g2h"] == [[4, 4], True, True]
    # an Array on process 1's devices only: process 0 holds none of it (so the dtype must be given)
    assert [o["far"][:3] for o in outs] == [[0, 4, "float32"], [4, 0, "float32"]]
    assert outs[0]["far"][3] == "Array(shape=(4, 4), dtype=float32)"
