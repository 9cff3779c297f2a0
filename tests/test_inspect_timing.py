"""The time model (shardkit/inspect/timing.py, hardware.py) against published measurements, and its interface.

Every validation case names its source; ``docs/performance_model.md`` has the same table, and
``test_docs_table_matches_model`` keeps the two equal. Cases the model misses by more than 25% are kept and
asserted to stay where the docs say they are, not tuned away.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import pathlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit.inspect.communication import Collective, CommunicationReport
from shardkit.inspect.hardware import PROFILES, Hardware, Topology, hardware
from shardkit.inspect.hlo import ArrayShape
from shardkit.inspect.timing import CollectiveTime, StepTime, collective_time, estimate

DOCS = os.path.join(os.path.dirname(__file__), "..", "docs", "performance_model.md")


def v5e_8x4() -> Topology:
    """libtpu's v5e 8x4 slice: device ``x + 8 y`` at chip ``(x, y)`` (test_topology_from_libtpu checks it)."""
    return Topology({x + 8 * y: (x, y) for x in range(8) for y in range(4)}, (8, 4), (False, False), {})


def v5e_8x16() -> Topology:
    """A v5e 8x16 slice, device ``x + 8 y`` at chip ``(x, y)``: the 16-chip dimension closes a ring."""
    return Topology({x + 8 * y: (x, y) for x in range(8) for y in range(16)}, (8, 16), (False, True), {})


def gather(dtype: str, per_device: tuple[int, ...], groups: list[list[int]], axes=("Y",)) -> Collective:
    """An all-gather along dimension 0 of ``per_device`` over ``groups``."""
    n = len(groups[0])
    result = (per_device[0] * n, *per_device[1:])
    return Collective(
        "all-gather",
        "ag",
        (ArrayShape(dtype, per_device),),
        (ArrayShape(dtype, result),),
        axes,
        n,
        tuple(map(tuple, groups)),
    )


def reduce(dtype: str, shape: tuple[int, ...], n: int) -> Collective:
    array = (ArrayShape(dtype, shape),)
    return Collective("all-reduce", "ar", array, array, ("x",), n, (tuple(range(n)),))


def one(c: Collective, num_devices: int, mesh=None, **kw) -> CommunicationReport:
    return CommunicationReport("xla", mesh, num_devices, (c,), **kw)


V5E_Y_GROUPS = [[x + 8 * y for y in range(4)] for x in range(8)]  # the 'Y' axis of an 8x4 mesh: 4 chips in a line
V5E_RING_GROUPS = [[x + 8 * y for y in range(16)] for x in range(8)]  # the 16 axis of an 8x16 mesh: a closed ring


def figure_point(total: int, bytes_per_second: float, agrees: bool = True) -> tuple:
    """A point of the scaling book's figure "AllGather Bandwidth on an 8x16 TPU v5e pod" (part 3; part 12, appendix
    B): ``total`` bytes gathered along the 16-chip ring at ``bytes_per_second`` (its orange "bytes / runtime" marker,
    read against the axes' gridlines); the measured time is their ratio."""
    c = gather("bf16", (total // 32,), V5E_RING_GROUPS)
    return ("tpu-v5e", c, v5e_8x16(), total / bytes_per_second, None, agrees)


# (case, hardware, collective, topology, measured seconds, XLA's optimal_seconds or None, model agrees within 25%)
CASES = {
    # scaling book part 3 ("Sharded matrices"), pop quiz 2: AllGather_Y([E_Y, F]), TPU v5e, mesh {'X': 8, 'Y': 4},
    # bf16; "an actual profile ... shows 680us"
    "v5e AllGather bf16[2048,8192] over 4 chips": (
        "tpu-v5e",
        gather("bf16", (512, 8192), V5E_Y_GROUPS),
        v5e_8x4(),
        680e-6,
        1.4783e-4,
        True,
    ),
    # the same quiz, E = F = 256: "In practice, it's closer to 8us" (one of the three points the TPU latency terms
    # are fitted to: CALIBRATION)
    "v5e AllGather bf16[256,256] over 4 chips": (
        "tpu-v5e",
        gather("bf16", (64, 256), V5E_Y_GROUPS),
        v5e_8x4(),
        8e-6,
        5.775e-7,
        True,
    ),
    # scaling book part 3: on a v5e 8x16 slice, an AllGather along the 16 axis (a full ring) reaches "about 95%
    # of the peak claimed bandwidth (4.5e10)" from about 10MB: the time that bandwidth gives for 10 MiB
    "v5e AllGather 10 MiB over a 16-chip ring": (
        "tpu-v5e",
        gather("bf16", (320, 1024), V5E_RING_GROUPS),
        v5e_8x16(),
        (15 / 16) * 10 * 2**20 / (2 * 0.95 * 4.5e10),
        None,
        True,
    ),
    # the figure itself (the two readings of each marker, in the two copies of the figure, agree to 1% from 128 KiB
    # up). 8 KiB sits 3 pixels above the axis (3.0e8 to 3.7e8 B/s: 22 to 27 us) and takes longer than 128 KiB.
    "v5e AllGather 8 KiB over a 16-chip ring": figure_point(2**13, 3.4e8, agrees=False),
    "v5e AllGather 128 KiB over a 16-chip ring": figure_point(2**17, 8.5e9),  # CALIBRATION
    "v5e AllGather 512 KiB over a 16-chip ring": figure_point(2**19, 2.72e10),  # CALIBRATION
    "v5e AllGather 4 MiB over a 16-chip ring": figure_point(2**22, 7.24e10),
    "v5e AllGather 16 MiB over a 16-chip ring": figure_point(2**24, 8.65e10),
    "v5e AllGather 1 GiB over a 16-chip ring": figure_point(2**30, 9.01e10),
    # scaling book part 12 (GPUs), quiz 2 question 3: AllGather of bf16[4096, 65536] on an 8xH100 node,
    # "in practice it takes about 1.5ms"
    "H100 AllGather bf16[4096,65536] over 8 GPUs": (
        "h100",
        gather("bf16", (512, 65536), [list(range(8))], ("x",)),
        None,
        1.5e-3,
        None,
        True,
    ),
    # NVIDIA/nccl-tests issue 326: all_gather_perf -b 128M -e 16384M -g 8 on 8 H100s "saturated at ~360 GB/s
    # for busbw"; NCCL's maintainer: "360 GB/s is exactly what we'd expect on H100". Time at 16 GiB, f32.
    "H100 AllGather 16 GiB over 8 GPUs (nccl-tests)": (
        "h100",
        gather("f32", (2**29,), [list(range(8))], ("x",)),
        None,
        (7 / 8) * 2**34 / 360e9,
        None,
        True,
    ),
    # scaling book part 12: AllReduce on an 8xH100 node with SHARP disabled, "we do achieve close to 370GB/s
    # [bus bandwidth] ... although only around 10GB"
    "H100 AllReduce 10 GB over 8 GPUs, ring": (
        "h100",
        reduce("f32", (2_500_000_000,), 8),
        None,
        2 * (7 / 8) * 10e9 / 370e9,
        None,
        True,
    ),
    # scaling book part 12: "an AllReduce over ... LLaMA-3 70B's MLPs (... bf16[8192, 3584] = 58MB) can achieve
    # only around 150GB/s compared to the peak 450GB/s"
    "H100 AllReduce bf16[8192,3584] over 8 GPUs": (
        "h100",
        reduce("bf16", (8192, 3584), 8),
        None,
        2 * (7 / 8) * 8192 * 3584 * 2 / 150e9,
        None,
        False,
    ),
    # NVIDIA/nccl-tests issue 212, NCCL's maintainer: with NVLink SHARP (NCCL's default for all-reduce on H100)
    # "On 8 GPUs, you should reach a peak busBw of ~480GB/s". Time at 8 GiB, f32.
    "H100 AllReduce 8 GiB over 8 GPUs, NVLS (default)": (
        "h100",
        reduce("f32", (2**31,), 8),
        None,
        2 * (7 / 8) * 2**33 / 480e9,
        None,
        False,
    ),
}


# the published small AllGathers on TPU v5e that hardware.py fits the TPU latency terms to (not independent checks)
CALIBRATION = (
    "v5e AllGather bf16[256,256] over 4 chips",
    "v5e AllGather 128 KiB over a 16-chip ring",
    "v5e AllGather 512 KiB over a 16-chip ring",
)


def modelled(case: str) -> float:
    name, c, topology, *_ = CASES[case]
    topology = topology or Topology.default(range(8), name)
    return collective_time(c, hardware(name), topology).seconds


def error(case: str) -> float:
    return modelled(case) / CASES[case][3] - 1


@pytest.mark.parametrize("case", [c for c, v in CASES.items() if v[5]])
def test_model_within_25_percent(case: str) -> None:
    assert abs(error(case)) <= 0.25, f"{case}: model {modelled(case):.3g} s, measured {CASES[case][3]:.3g} s"


@pytest.mark.parametrize("case", [c for c, v in CASES.items() if not v[5]])
def test_documented_disagreements_stand(case: str) -> None:
    """The docs say the model misses these by more than 25%: if a change fixes one, the docs must say so."""
    assert abs(error(case)) > 0.25, f"{case} now agrees ({error(case):+.0%}): update docs/performance_model.md"


def test_tpu_cases_use_the_documented_links() -> None:
    """560us is the scaling book's own estimate for the 8x4 case: 3 hops one way at 4.5e10 (no wraparound)."""
    hw = hardware("tpu-v5e")
    _, c, topo, *_ = CASES["v5e AllGather bf16[2048,8192] over 4 chips"]
    t = collective_time(c, hw, topo)
    assert (t.links, t.hops, t.bandwidth) == ("ici", 3, 4.5e10)
    assert t.seconds == pytest.approx(hw.latency + 3 * hw.hop_latency + 3 * 512 * 8192 * 2 / 4.5e10)
    _, c, topo, *_ = CASES["v5e AllGather 10 MiB over a 16-chip ring"]
    t = collective_time(c, hw, topo)
    assert (t.hops, t.bandwidth) == (8, 9e10)  # both directions of a closed ring, 16 // 2 hops


def test_tpu_latency_terms_are_fitted_to_the_published_gathers() -> None:
    """The fixed cost and the cost per hop of every TPU profile are the least-squares line through the published
    small v5e AllGathers (CALIBRATION), which the model then meets within 1%; with the book's 1 us per hop, the quiz
    and the figure would need fixed costs more than 2x apart (why both terms are fitted)."""
    from shardkit.inspect.hardware import _V5E_SMALL_GATHERS

    assert sorted(t for _, t, _ in _V5E_SMALL_GATHERS) == pytest.approx(sorted(CASES[c][3] for c in CALIBRATION))
    hw = hardware("tpu-v5e")
    for hops, measured, transfer in _V5E_SMALL_GATHERS:
        assert hw.latency + hops * hw.hop_latency + transfer == pytest.approx(measured, rel=0.01)
    assert [round(x * 1e6, 2) for x in (hw.latency, hw.hop_latency)] == [0.94, 1.62]
    assert "| `tpu-v5e` |" in (text := pathlib.Path(DOCS).read_text()) and "0.94 us + 1.62 us per hop" in text
    assert {(h.latency, h.hop_latency) for h in PROFILES.values() if h.kind == "tpu"} == {(hw.latency, hw.hop_latency)}
    fixed_at_1us = [measured - transfer - hops * 1e-6 for hops, measured, transfer in _V5E_SMALL_GATHERS]
    assert min(fixed_at_1us[1:]) > 2 * fixed_at_1us[0]
    for case in CALIBRATION:
        assert abs(error(case)) < 0.01, case


def test_docs_table_matches_model() -> None:
    """Each case's row in docs/performance_model.md shows the measured and modelled microseconds and the error."""
    text = pathlib.Path(DOCS).read_text()
    for case, (_, _, _, measured, optimal, _) in CASES.items():
        row = next((line for line in text.splitlines() if line.startswith(f"| {case} |")), None)
        assert row is not None, f"docs/performance_model.md has no row for {case!r}"
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert cells[3] == _us(measured), (case, cells[3])
        assert cells[4] == _us(modelled(case)), (case, cells[4])
        assert cells[5] == ("-" if optimal is None else f"{_us(optimal)} ({optimal / measured - 1:+.0%})")
        assert cells[6] == f"{error(case):+.0%}", (case, cells[6])


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f}"


# -- the TPU cases as real programs ---------------------------------------------------------------------------


def test_v5e_cases_from_shardkit_reports() -> None:
    """shardkit lowers the quiz's program and compiles it for a compile-only v5e 8x4 slice: its report holds
    the collective the cases above assume, and the model prices it the same; jax compiling the same program
    for the same devices is the oracle for XLA's cost analysis."""
    from jax.experimental import topologies

    devices = topologies.get_topology_desc("v5e:8x4", platform="tpu").devices
    topo = Topology.from_devices(devices, "tpu-v5e")
    mesh = sk.AbstractMesh((8, 4), ("X", "Y"))
    jmesh = jax.sharding.Mesh(np.array(devices).reshape(4, 8).T, ("X", "Y"))
    for case, (e, f) in {
        "v5e AllGather bf16[2048,8192] over 4 chips": (2048, 8192),
        "v5e AllGather bf16[256,256] over 4 chips": (256, 256),
    }.items():
        x = sk.ShapeDtypeStruct((e, f), jnp.bfloat16, sharding=sk.NamedSharding(mesh, sk.P("Y", None)))
        lowered = sk.jit(lambda a: a, out_shardings=sk.NamedSharding(mesh, sk.P())).lower(x)
        report = lowered.compile(target="tpu-v5e:8x4").communication()
        (c,) = report.collectives
        assumed = CASES[case][1]
        assert (c.kind, c.axes, c.wire_bytes, sorted(c.groups)) == (
            "all-gather",
            ("Y",),
            assumed.wire_bytes,
            sorted(assumed.groups),
        )
        step = report.time("tpu-v5e", topology=topo)
        assert step.collectives[0].seconds == pytest.approx(modelled(case))

        jx = jax.ShapeDtypeStruct((e, f), jnp.bfloat16, sharding=jax.sharding.NamedSharding(jmesh, jax.P("Y", None)))
        oracle = jax.jit(lambda a: a, out_shardings=jax.sharding.NamedSharding(jmesh, jax.P())).lower(jx).compile()
        assert oracle.cost_analysis()["optimal_seconds"] == pytest.approx(CASES[case][4], rel=1e-3)


def test_topology_from_libtpu() -> None:
    from jax.experimental import topologies

    topo = Topology.from_devices(topologies.get_topology_desc("v5e:8x4", platform="tpu").devices, "tpu-v5e")
    assert (dict(topo.coords), topo.shape, topo.wraps) == (dict(v5e_8x4().coords), (8, 4), (False, False))
    assert Topology.from_devices(
        topologies.get_topology_desc("v5e:16x16", platform="tpu").devices, "tpu-v5e"
    ).wraps == (
        True,
        True,
    )
    cube = topologies.get_topology_desc("v5p:4x4x8", platform="tpu", chip_config_name="megacore").devices
    assert Topology.from_devices(cube, "tpu-v5p").wraps == (True, True, True)
    two = topologies.get_topology_desc("v5e:4x4", platform="tpu", num_slices=2).devices
    topo = Topology.from_devices(two, "tpu-v5e")
    assert sorted(set(topo.slices.values())) == [0, 1] and topo.shape == (4, 4)


def test_groups_across_slices_use_dcn() -> None:
    """An all-reduce over 2 slices of 4x4: the ICI part inside each slice and the DCN part across overlap."""
    coords = {s * 16 + x + 4 * y: (x, y) for s in range(2) for x in range(4) for y in range(4)}
    topo = Topology(coords, (4, 4), (False, False), {d: d // 16 for d in coords})
    c = dataclasses.replace(reduce("f32", (1 << 20,), 32), groups=(tuple(range(32)),))
    t = collective_time(c, hardware("tpu-v5e"), topo)
    dcn = 2 * (1 / 2) * (4 << 20) / 16 / 3.125e9
    ici = 2 * (15 / 16) * (4 << 20) / (2 * 4.5e10)
    hw = hardware("tpu-v5e")
    assert t.links == "ici+dcn" and t.seconds == pytest.approx(max(dcn, ici) + hw.latency + 2 * 6 * hw.hop_latency)


def test_gpu_groups_across_nodes_use_infiniband() -> None:
    c = dataclasses.replace(reduce("f32", (1 << 28,), 16), groups=(tuple(range(16)),))
    t = collective_time(c, hardware("h100"), Topology.default(range(16), "h100"))
    nvlink = 2 * (7 / 8) * (1 << 30) / 370e9
    ib = 2 * (1 / 2) * (1 << 30) / 8 / 50e9
    assert t.links == "nvlink+ib"
    assert t.seconds == pytest.approx(8.4e-6 + 14 * 3.4e-6 + 2 * 14e-6 + max(nvlink, ib))


# -- the step ---------------------------------------------------------------------------------------------------


def test_step_overlap_rule() -> None:
    """Async collectives hide behind compute in program order until it is used up; synchronous ones never do."""
    c = reduce("f32", (1 << 24,), 8)
    report = CommunicationReport(
        "xla", None, 8, (dataclasses.replace(c, is_async=True), c, dataclasses.replace(c, is_async=True))
    )
    each = collective_time(c, hardware("h100"), Topology.default(range(8), "h100")).seconds
    compute = 1.5 * each
    step = report.time("h100", cost={"flops": compute * 9.9e14, "bytes accessed": 0.0})
    assert [t.exposed for t in step.collectives] == pytest.approx([0, each, 0.5 * each])
    assert step.step == pytest.approx(compute + 1.5 * each) and step.compute == pytest.approx(compute)
    assert report.time("h100").step == pytest.approx(3 * each)  # no cost analysis: all exposed
    memory = report.time("h100", cost={"flops": 0, "bytes accessed": 3.35e12 * each})
    assert memory.memory == pytest.approx(each) and memory.exposed == pytest.approx(2 * each)


def test_report_fields_are_defaults() -> None:
    c = reduce("f32", (1024,), 8)
    topo = Topology.default(range(8), "h100")
    report = CommunicationReport("xla", None, 8, (c,), topology=topo, cost={"flops": 9.9e14, "bytes accessed": 0})
    assert report.time("h100").compute == pytest.approx(1.0)
    assert report.time("h100", cost={"flops": 0.0}).compute == 0.0


def test_cpu_compiled_report_and_outputs(tmp_path) -> None:
    """The time of an 8-CPU-device program's report, with XLA's cost analysis: table, JSON, picture."""
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    w = sk.ShapeDtypeStruct((64, 32), np.float32, sharding=sk.NamedSharding(mesh, sk.P("y", "x")))
    x = sk.ShapeDtypeStruct((16, 64), np.float32, sharding=sk.NamedSharding(mesh, sk.P("x", "y")))
    compiled = sk.jit(lambda w, x: (x @ w).sum()).lower(w, x).compile()
    report = compiled.communication()
    step = report.time("tpu-v5e", cost=compiled.cost_analysis())
    assert isinstance(step, StepTime) and all(isinstance(t, CollectiveTime) for t in step.collectives)
    assert len(step.collectives) == len(report.collectives) > 0
    assert step.flops == compiled.cost_analysis()["flops"] > 0
    text = str(step)
    assert text.startswith("XLA's partitioned program on tpu-v5e: step ") and "by mesh axes:" in text
    data = json.loads(step.to_json())
    assert data["step_seconds"] == pytest.approx(step.step)
    assert [d["seconds"] for d in data["collectives"]] == pytest.approx([t.seconds for t in step.collectives])
    assert set(data["by_axes"]) == {t.collective.over for t in step.collectives}
    for name in ("t.png", "t.svg"):
        step.save_image(tmp_path / name)
    assert (tmp_path / "t.png").read_bytes()[:4] == b"\x89PNG"
    assert b"<svg" in (tmp_path / "t.svg").read_bytes()[:400]


# -- errors ------------------------------------------------------------------------------------------------------


def test_unknown_hardware() -> None:
    with pytest.raises(ValueError, match=r"hardware='b200' is not a known profile; known: 'tpu-v4', .*'h200'"):
        hardware("b200")
    with pytest.raises(TypeError, match="hardware must be a profile name or a Hardware, got int: 3"):
        hardware(3)
    assert set(PROFILES) == {"tpu-v4", "tpu-v5e", "tpu-v5p", "tpu-v6e", "h100", "h200"}
    assert all(isinstance(h, Hardware) and h.name == n for n, h in PROFILES.items())


def test_bad_arguments() -> None:
    report = one(reduce("f32", (1024,), 8), 8)
    with pytest.raises(TypeError, match="topology must be a Topology or None, got dict"):
        report.time("h100", topology={})
    with pytest.raises(TypeError, match="cost must be the program.s cost"):
        report.time("h100", cost=3.0)
    with pytest.raises(ValueError, match=r"cost\['flops'\]=-1 must be a number >= 0"):
        report.time("h100", cost={"flops": -1})
    with pytest.raises(ValueError, match=r"topology does not place devices \[8, 9\]"):
        estimate(one(reduce("f32", (8,), 10), 10), "h100", Topology.default(range(8), "h100"))
    with pytest.raises(ValueError, match="names no device groups"):
        one(dataclasses.replace(reduce("f32", (8,), 8), groups=()), 8).time("h100")
    with pytest.raises(ValueError, match=r"no default TPU layout for 8 devices on a mesh of shape \(2, 2, 2\)"):
        one(reduce("f32", (8,), 8), 8, mesh=(("a", 2), ("b", 2), ("c", 2))).time("tpu-v5e")


def test_nothing_to_move_costs_nothing() -> None:
    c = dataclasses.replace(reduce("f32", (8,), 1), groups=((0,),))
    assert collective_time(c, hardware("h100"), Topology.default([0], "h100")).seconds == 0.0


def test_transformer_step_times() -> None:
    """The GPT step of examples/transformer.py on every profile: one time per collective, finite and positive."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "transformer", os.path.join(os.path.dirname(DOCS), "..", "examples", "transformer.py")
    )
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    report = _gpt_report(gpt)
    for name in PROFILES:
        step = report.time(name)
        assert len(step.collectives) == len(report.collectives)
        assert all(math.isfinite(t.seconds) and t.seconds >= 0 for t in step.collectives)
        assert step.step > 0


def _gpt_report(gpt) -> CommunicationReport:
    shardings = {k: s for k, (_, s) in gpt.PARAMS.items()}
    structs = {k: sk.ShapeDtypeStruct(shape, np.float32, sharding=s) for k, (shape, s) in gpt.PARAMS.items()}
    batch = sk.ShapeDtypeStruct((gpt.BATCH, gpt.SEQ), np.int32, sharding=gpt.BATCH_SHARDING)
    scalar = sk.ShapeDtypeStruct((), np.float32, sharding=gpt.named())
    step = sk.jit(
        gpt.train_step,
        in_shardings=(shardings, shardings, shardings, gpt.named(), gpt.BATCH_SHARDING, gpt.BATCH_SHARDING),
    )
    return step.lower(structs, structs, structs, scalar, batch, batch).compile().communication()


def test_docs_name_every_profile_and_source() -> None:
    text = pathlib.Path(DOCS).read_text()
    for name in PROFILES:
        assert f"`{name}`" in text
    for source in ("jax-ml.github.io/scaling-book/tpus", "jax-ml.github.io/scaling-book/gpus", "nccl-tests/issues/212"):
        assert source in text
    assert re.search(r"tuning\.cc", text)


# -- XLA's schedule -------------------------------------------------------------------------------------------


def scheduled(ops, seconds, hw="tpu-v5e", lanes=None):
    """Walks ``schedule.Op``s on a profile with ``seconds`` per collective by name (on ``lanes``' links)."""
    from shardkit.inspect.timing import walk

    return walk(ops, hardware(hw), seconds, lanes)


def compute(name: str, seconds: float, hw="tpu-v5e"):
    """An op that keeps the device busy ``seconds`` on its matmul units."""
    from shardkit.inspect.schedule import Op

    p = hardware(hw)
    return Op(name, "compute", matmul=seconds * p.flops * p.matmul_efficiency)


def test_schedule_hides_what_the_ops_between_start_and_done_cover() -> None:
    """An async collective runs while the ops scheduled between its start and its done run; its done waits for the
    rest (exposed). A synchronous one holds the device for all of its time."""
    from shardkit.inspect.schedule import Op

    start, done = Op("s", "start", collective="ag", key="k"), Op("d", "done", key="k")
    hidden = scheduled([start, compute("mm", 3.0), done], {"ag": 2.0})
    assert hidden.t == pytest.approx(3.0) and hidden.exposed["ag"] == 0
    short = scheduled([start, compute("mm", 0.5), done], {"ag": 2.0})
    assert short.t == pytest.approx(2.0) and short.exposed["ag"] == pytest.approx(1.5)
    sync = scheduled([compute("mm", 1.0), Op("ar", "collective", collective="ar")], {"ar": 2.0})
    assert sync.t == pytest.approx(3.0) and sync.exposed["ar"] == pytest.approx(2.0)
    assert sync.busy["matmul"] == pytest.approx(1.0)


def test_schedule_runs_collectives_on_the_same_links_one_at_a_time() -> None:
    """Two collectives in flight on the same links: the second starts when the first ends; on other links, at
    once."""
    from shardkit.inspect.schedule import Op

    ops = [
        Op("s1", "start", collective="a", key="1"),
        Op("s2", "start", collective="b", key="2"),
        compute("mm", 1.0),
        Op("d1", "done", key="1"),
        Op("d2", "done", key="2"),
    ]
    clock = scheduled(ops, {"a": 1.0, "b": 1.0})
    assert clock.t == pytest.approx(2.0) and clock.exposed["b"] == pytest.approx(1.0) and clock.exposed["a"] == 0
    apart = scheduled(ops, {"a": 1.0, "b": 1.0}, lanes={"a": "x", "b": "y"})  # on different links: at once
    assert apart.t == pytest.approx(1.0) and sum(apart.exposed.values()) == 0


def test_schedule_loop_steady_state_carries_a_collective_into_the_next_trip() -> None:
    """A loop body that starts a collective at its end and waits for it after some compute of the next trip (XLA's
    pipelining of a scan's gathers): the previous trip's collective runs under the next trip's first compute."""
    from shardkit.inspect.schedule import Op

    def loop(first: float):
        body = (
            compute("a", first),
            Op("d", "done", key="k"),
            compute("b", 1.0),
            Op("s", "start", collective="ag", key="k"),
        )
        return scheduled([Op("loop", "loop", body=body, trips=10)], {"ag": 1.5})

    hidden = loop(2.0)  # 2 s of compute before the wait covers the 1.5 s gather
    assert hidden.t == pytest.approx(10 * 3.0 + 1.5) and hidden.exposed["ag"] == pytest.approx(1.5)  # the last only
    partly = loop(1.0)  # 1 s covers two thirds of it: 0.5 s exposed per trip
    assert partly.t == pytest.approx(10 * 2.5 + 1.5) and partly.exposed["ag"] == pytest.approx(10 * 0.5 + 1.5)


def test_collectives_still_in_flight_are_each_charged_what_they_add_to_the_step() -> None:
    """At a loop's end (and the program's) the walk waits for what is in flight in the order it finishes: two
    collectives on other links running at once are exposed by what each adds, so the exposed totals and the busy
    time sum to the step (charging each its whole remaining time counted the overlap twice)."""
    from shardkit.inspect.schedule import Op

    body = (
        Op("d1", "done", key="1"),
        Op("d2", "done", key="2"),
        compute("mm", 1.0),
        Op("s1", "start", collective="a", key="1"),
        Op("s2", "start", collective="b", key="2"),
    )
    clock = scheduled([Op("loop", "loop", body=body, trips=10)], {"a": 2.0, "b": 3.0}, lanes={"a": "x", "b": "y"})
    # each trip waits 2 s for the last trip's a and 1 s more for its b before 1 s of compute; the last pair ends
    # 3 s after the loop's last trip: a adds 2 s of it, b 1 s (the old walk charged b 3 s there: 2 s twice)
    assert clock.t == pytest.approx(10 * 4.0 + 3.0)
    assert clock.exposed["a"] == pytest.approx(10 * 2.0 + 2.0) and clock.exposed["b"] == pytest.approx(10 * 1.0 + 1.0)
    assert sum(clock.exposed.values()) + sum(clock.busy.values()) == pytest.approx(clock.t)
    tail = scheduled(body[3:], {"a": 2.0, "b": 3.0}, lanes={"a": "x", "b": "y"})
    assert tail.settle() == pytest.approx(3.0) and dict(tail.exposed) == pytest.approx({"a": 2.0, "b": 1.0})
    assert not tail.pending


def test_schedule_roofline_per_op() -> None:
    """Each op takes the longer of its matmul time (at the profile's matmul efficiency) and its memory time: a
    memory-bound op costs its bytes whatever its flops."""
    from shardkit.inspect.schedule import Op

    p = hardware("tpu-v5e")
    memory_bound = Op("add", "compute", matmul=1e9, bytes=8.1e11)  # 1 s of bytes, 5 us of MXU work
    clock = scheduled([memory_bound, Op("k", "kernel", bytes=8.1e10, estimated=False)], {})
    assert clock.t == pytest.approx(1.1) and clock.busy["memory"] == pytest.approx(1.0)
    assert clock.unestimated == {"k"} and clock.busy["kernels"] == pytest.approx(0.1)
    assert p.matmul_efficiency == pytest.approx(0.938, abs=1e-3)


def test_a_transpose_in_memory_takes_xlas_own_estimate() -> None:
    """A change of layout (a transpose in memory) is priced by XLA's TPU compiler's estimate of its cycles where that
    exceeds its bytes' time (no published rate for TPU transposes; the bytes alone give a tenth of XLA's figure)."""
    mesh = sk.AbstractMesh((4,), ("d",))
    x = sk.ShapeDtypeStruct((4096, 8192), jnp.bfloat16, sharding=sk.NamedSharding(mesh, sk.P()))
    compiled = sk.jit(lambda a: a.T + 1).lower(x).compile(target="tpu-v5e:2x2")
    ops = compiled.cost().schedule
    relayouts = [op for op in ops if op.cycles]
    assert relayouts
    step = compiled.communication().time("tpu-v5e")
    p = hardware("tpu-v5e")
    assert step.step >= sum(op.cycles for op in relayouts) / p.clock
    assert p.clock == pytest.approx(1.5e9, rel=0.01)  # the book's v5e clock, from its peak and MXUs
