"""The model across processes: 2 x 4 and 4 x 2 virtual CPU devices joined by jax's distributed runtime."""

import time

import pytest

from tests.multiprocess import check_ok, run_workers

MODEL_SCRIPT = """
devs = sk.devices()
local = sk.local_devices()
mesh = sk.make_mesh((4, 2), ("x", "y"))
jmesh = jax.sharding.Mesh(mesh.devices, ("x", "y"))
out = {
    "process_index": sk.process_index(), "process_count": sk.process_count(),
    "global": [d.id for d in devs], "local": [d.id for d in local],
    "mesh_local_devices": [d.id for d in mesh.local_devices],
    "local_mesh": [[d.id for d in row] for row in mesh.local_mesh.devices],
    "local_mesh_jax": [[d.id for d in row] for row in jmesh.local_mesh.devices],
    "is_multi_process": mesh.is_multi_process,
}
checks = []
for spec in [("x", "y"), ("x",), (None, "y"), (("x", "y"),), ()]:
    s = sk.NamedSharding(mesh, P(*spec))
    j = jax.sharding.NamedSharding(jmesh, jax.sharding.PartitionSpec(*spec))
    checks.append([
        s.addressable_devices == j.addressable_devices,
        dict(s.addressable_devices_indices_map((8, 4))) == j.addressable_devices_indices_map((8, 4)),
        dict(s.devices_indices_map((8, 4))) == j.devices_indices_map((8, 4)),
        s.is_fully_addressable == j.is_fully_addressable,
        list(s._addressable_device_assignment) == [d for d in mesh.devices.flat if d in set(local)],
    ])
out["checks"] = checks
# This process's devices in opposite corners (the rest in between): no contiguous subcube.
others = [d for d in devs if d not in local[:2]]
order = [local[0], *others, local[1]]
try:
    sk.Mesh(np.array(order).reshape(2, 4), ("a", "b")).local_mesh
    out["subcube_error"] = None
except ValueError as e:
    out["subcube_error"] = str(e)
report(out)
"""


@pytest.mark.parametrize("processes,devices", [(2, 4), (4, 2)])
def test_model_across_processes(processes, devices):
    results = check_ok(run_workers(MODEL_SCRIPT, processes, devices))
    for i, (out,) in enumerate(results):
        assert out["process_index"] == i and out["process_count"] == processes
        assert len(out["global"]) == 8 and len(out["local"]) == devices
        assert out["mesh_local_devices"] == out["local"]
        assert out["local_mesh"] == out["local_mesh_jax"]
        assert sorted(sum(out["local_mesh"], [])) == sorted(out["local"])
        assert out["is_multi_process"] is True
        assert all(all(c) for c in out["checks"]), out["checks"]
        assert "contiguous subcube" in out["subcube_error"]


FAULT_SCRIPT = """
import time
if PROCESS_ID == 1:
    os._exit(7)  # dies right after joining
time.sleep(60)  # the survivor must be stopped by the runtime long before this ends
report("still running")
"""


def test_a_peer_that_dies_stops_the_others_quickly():
    start = time.monotonic()
    workers = run_workers(FAULT_SCRIPT, 2, 4, timeout=45, env={0: {"HEARTBEAT_TIMEOUT": "3"}})
    elapsed = time.monotonic() - start
    survivor = workers[0]
    assert workers[1].returncode == 7
    assert survivor.returncode not in (0, None), "the survivor must not finish or hang"
    assert survivor.results == []
    assert "another task died" in survivor.stderr or "unhealthy" in survivor.stderr, survivor.stderr[-2000:]
    assert elapsed < 40


def test_a_peer_that_never_arrives_fails_initialize_within_its_timeout():
    start = time.monotonic()
    workers = run_workers("report('joined')", 2, 4, timeout=45,
                          env={0: {"INIT_TIMEOUT": "4"}, 1: {"NEVER_ARRIVE": "1"}})
    elapsed = time.monotonic() - start
    waiting = workers[0]
    assert waiting.returncode not in (0, None) and waiting.results == []
    assert "DEADLINE_EXCEEDED" in waiting.stderr or "Deadline Exceeded" in waiting.stderr, waiting.stderr[-2000:]
    assert elapsed < 30
