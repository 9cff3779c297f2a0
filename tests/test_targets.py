"""Compiling for machines not at hand: TPU slices through libtpu's compiler, ``cpu:N`` virtual devices, and
modules that need more devices than this process has. jax is the oracle: its own compile of the same program
for the same devices (TPU topology devices in this process; 256 CPU devices in a child process) has the same
collectives, shardings and memory figures."""

from __future__ import annotations

import dataclasses
import io
import json
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import topologies

import shardkit as sk
from shardkit.executor import targets
from shardkit.tools.lower import LowerMain
from tests.child import run_python

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))
import gpt_train_step as gpt  # noqa: E402


def f(a, b):
    return jnp.tanh(a @ b).sum(0)


def lowered_on(mesh, n=256):
    s = sk.NamedSharding(mesh, sk.P("x", "y"))
    arg = sk.ShapeDtypeStruct((n, n), jnp.float32, sharding=s)
    return sk.jit(f).lower(arg, arg)


def summary(report) -> list[tuple]:
    """What must agree between two compiles of one program: each collective's kind, axes and shapes."""
    return sorted((c.kind, c.axes, tuple(map(str, c.operands)), tuple(map(str, c.results))) for c in report.collectives)


# -- names ---------------------------------------------------------------------------------------------------


def test_target_names():
    assert targets.target("cpu:16").name == "cpu:16"
    assert len(targets.target("cpu:16").devices) == 16
    assert targets.target("cpu", partitions=4).name == "cpu:4"
    assert targets.target("cpu:16") is targets.target("cpu:16")  # one client per count
    v5e = targets.target("tpu-v5e:2x4")
    assert (v5e.platform, v5e.generation, len(v5e.devices)) == ("tpu", "v5e", 8)
    assert v5e.devices[0].device_kind == "TPU v5 lite"
    assert len(targets.target("tpu-v5e:2x2,slices=2").devices) == 8
    assert len(targets.target("tpu-v5p:2x2x2").devices) == 8  # megacore: one device per chip
    assert targets.target(v5e) is v5e


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("gpu:8", r"'gpu:8' is not a target name: expected 'tpu-<generation>:<chips>"),
        ("tpu-v9:4x4", r"unknown TPU generation 'v9'; expected one of v4, v5p, v5e, v6e"),
        ("tpu-v5p:4x4", r"a v5p slice has 3 dimensions of chips, e.g. '4x4x4'"),
        ("tpu-v5e:0x4", r"a v5e slice has 2 dimensions of chips"),
        ("tpu-v5e:3x5", r"libtpu makes no such slice"),
        ("tpu-v5e:16x16,slices=0", r"'tpu-v5e:16x16,slices=0': slices must be at least 1"),
        ("tpu-v5p:64x64x64", r"has 262,144 chips; a target may have at most 65,536"),
        ("tpu-v5e:99999999999999999999x2", r"a target may have at most 65,536"),
        ("cpu:0", r"cpu:0 must have between 1 and 4096 devices"),
        ("cpu:5000", r"cpu:5000 must have between 1 and 4096 devices"),
        ("cpu", r"target 'cpu' takes its device count from a program"),
    ],
)
def test_bad_target_names(spec, message):
    with pytest.raises(ValueError, match=message):
        targets.target(spec)


def test_target_type_error():
    with pytest.raises(TypeError, match=r"target must be a target name such as 'tpu-v5e:16x16'.*got 8"):
        targets.target(8)


def test_tpu_target_without_libtpu(monkeypatch):
    monkeypatch.setattr(targets.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ValueError, match=r"needs libtpu's TPU compiler.*pip install 'shardkit\[tpu\]'"):
        targets._tpu.__wrapped__("v5e", "2x2", 1)


# -- compiling for a target ----------------------------------------------------------------------------------


def test_cpu_target_is_compile_only():
    compiled = lowered_on(sk.AbstractMesh((4, 4), ("x", "y")), 64).compile(target="cpu:16")
    assert compiled.target == "cpu:16"
    (a, b), _ = compiled.input_shardings
    assert a.mesh.shape_tuple == (("x", 4), ("y", 4)) and a.spec == sk.P("x", "y")
    assert compiled.output_shardings.spec == sk.P("y")
    assert {c.kind for c in compiled.communication().collectives} == {"all-gather", "all-reduce"}
    assert compiled.cost_analysis()["flops"] > 0
    with pytest.raises(ValueError, match=r"compiled for target cpu:16, whose 16 devices this process does not have "):
        compiled(np.ones((64, 64), np.float32), np.ones((64, 64), np.float32))


def test_program_of_the_wrong_size_for_a_target():
    lowered = lowered_on(sk.AbstractMesh((4, 4), ("x", "y")), 64)
    with pytest.raises(ValueError, match=r"partitioned for 16 devices, but target tpu-v5e:2x4 has 8"):
        lowered.compile(target="tpu-v5e:2x4")


def test_abstract_lowering_without_a_target_names_the_way_out():
    with pytest.raises(ValueError, match=r"Compile it for a target \(compile\(target='cpu'\)"):
        lowered_on(sk.AbstractMesh((4, 4), ("x", "y")), 64).compile()


def test_tpu_target_against_jax():
    """shardkit's compile for a v5e slice and jax.jit's own for the same topology devices and mesh layout."""
    lowered = lowered_on(sk.AbstractMesh((2, 4), ("x", "y")))
    compiled = lowered.compile(target="tpu-v5e:2x4")
    assert compiled.target == "tpu-v5e:2x4"
    assert compiled.executable.__class__.__name__ == "Executable"  # compile-only: not loaded
    topology = topologies.get_topology_desc("v5e:2x4", platform="tpu")
    mesh = topologies.make_mesh(topology, (2, 4), ("x", "y"))
    s = jax.sharding.NamedSharding(mesh, jax.P("x", "y"))
    arg = jax.ShapeDtypeStruct((256, 256), jnp.float32, sharding=s)
    theirs = jax.jit(f).trace(arg, arg).lower().compile()
    assert [d.id for d in compiled.output_shardings.mesh.devices.flat] == [d.id for d in mesh.devices.flat]
    assert summary(compiled.communication()) == summary(
        sk.inspect.xla_report(theirs.runtime_executable().hlo_modules()[0], list(mesh.devices.flat), mesh)
    )
    ours, jaxs = compiled.memory(), theirs.memory_analysis()
    assert (ours.arguments, ours.outputs, ours.temporaries) == (
        jaxs.argument_size_in_bytes,
        jaxs.output_size_in_bytes,
        jaxs.temp_size_in_bytes,
    )
    assert ours.capacity == sk.inspect.hardware("tpu-v5e").hbm_bytes and ours.fits
    assert compiled.cost_analysis()["flops"] == theirs.cost_analysis()["flops"]


def test_concrete_program_keeps_its_mesh_positions_on_a_target():
    mesh = sk.make_mesh((4, 2), ("x", "y"), devices=jax.devices()[::-1])
    out = sk.NamedSharding(mesh, sk.P("x", "y"))
    compiled = sk.jit(lambda a: a * 2, out_shardings=out).lower(np.ones((8, 4), np.float32)).compile(target="cpu:8")
    placed = compiled.output_shardings
    assert placed.spec == sk.P("x", "y") and placed.mesh.shape_tuple == mesh.shape_tuple
    assert placed.mesh.devices.flat[0] is targets.target("cpu:8").devices[0]


def test_tpu_target_refuses_host_callbacks():
    def noisy(a):
        jax.debug.print("{}", a.sum())
        return a

    s = sk.NamedSharding(sk.AbstractMesh((2, 2), ("x", "y")), sk.P("x"))
    lowered = sk.jit(noisy).lower(sk.ShapeDtypeStruct((8, 8), jnp.float32, sharding=s))
    with pytest.raises(ValueError, match=r"calls back to Python on the host \(jax.debug.print"):
        lowered.compile(target="tpu-v5e:2x2")


# -- memory --------------------------------------------------------------------------------------------------


def too_big():
    def outer(a):
        return jnp.sin(jnp.outer(a, a)), jnp.cos(jnp.outer(a, a))

    s = sk.NamedSharding(sk.AbstractMesh((2, 2), ("x", "y")), sk.P())
    return sk.jit(outer).lower(sk.ShapeDtypeStruct((80_000,), jnp.float32, sharding=s))


def test_out_of_memory_is_a_report():
    with pytest.raises(sk.OutOfMemoryError) as caught:
        too_big().compile(target="tpu-v5e:2x2")
    report = caught.value.report
    assert report.fits is False and "exceeds available HBM" in report.error
    biggest = report.largest[0]
    assert (str(biggest.shape), biggest.bytes) == ("f32[80000,80000]", 80_000 * 80_000 * 4)
    assert biggest.source.startswith(f"{__file__}:") and biggest.op_name.startswith("jit(outer)/")
    text = str(caught.value)
    assert "DOES NOT FIT: XLA refused it: Ran out of memory" in text and "f32[80000,80000]" in text
    assert json.loads(report.to_json())["fits"] is False


def test_memory_report_reads_the_compiled_program():
    report = lowered_on(sk.AbstractMesh((4, 4), ("x", "y"))).compile(target="cpu:16").memory()
    assert report.capacity is None and report.fits is None and report.peak is None  # CPU: no peak, no HBM
    assert report.arguments == 2 * 64 * 64 * 4 and report.outputs == 64 * 4
    kinds = {b.kind for b in report.largest}
    assert {"argument", "output", "temporary"} <= kinds
    gathered = next(b for b in report.largest if b.kind == "temporary")
    assert gathered.source.startswith(f"{__file__}:") and gathered.bytes == max(b.bytes for b in report.largest)
    assert "Memory per device of the program compiled for cpu:16 (16 devices)" in str(report)


def test_memory_of_a_program_on_this_process():
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    compiled = lowered_on(mesh, 64).compile()
    report = compiled.memory()
    stats = compiled.memory_analysis()
    assert report.target is None and report.arguments == stats.argument_size_in_bytes
    assert report.temporaries == stats.temp_size_in_bytes


def test_a_cpu_program_prints_no_peak_of_xlas():
    """XLA's CPU backend reports a 'peak' of the arguments and outputs (and sometimes a few bytes more), without the
    temporaries: the report prints its upper bound, labelled so, never that figure as a peak."""

    def f(ws, x):  # a training step's shape: the weights donated and updated, a loss beside them
        loss = sum(jnp.tanh(x @ w).sum() for w in ws)
        return [w - 0.1 * jnp.sin(w) for w in ws], loss

    x = jax.ShapeDtypeStruct((64, 64), np.float32)
    compiled = sk.jit(f, donate_argnums=0).lower([x] * 20, x).compile()
    stats = compiled.memory_analysis()
    held = stats.argument_size_in_bytes + stats.output_size_in_bytes - stats.alias_size_in_bytes
    # what XLA's CPU backend calls its peak: a few bytes above what the arguments and outputs hold, no temporaries
    assert held < stats.peak_memory_in_bytes < stats.argument_size_in_bytes + stats.temp_size_in_bytes
    report = compiled.memory()
    assert report.peak is None and report.total >= report.arguments + report.temporaries
    assert "total (upper bound)" in str(report) and "peak" not in str(report).split("largest")[0]


def offloading_step():
    """A scanned layer whose remat policy offloads its activations to the host's memory, as MaxText's
    ``remat_policy=qkv_proj_offloaded`` does: jax lowers the offload for TPU and drops it on CPU."""
    from jax.ad_checkpoint import checkpoint_name

    policy = jax.checkpoint_policies.save_and_offload_only_these_names(
        names_which_can_be_saved=[],
        names_which_can_be_offloaded=["h"],
        offload_src="device",
        offload_dst="pinned_host",
    )

    def layer(w, x):
        return jnp.sin(checkpoint_name(jnp.tanh(x @ w), "h") @ w)

    def loss(ws, x):
        y, _ = jax.lax.scan(lambda c, w: (jax.checkpoint(layer, policy=policy)(w, c), None), x, ws)
        return (y**2).sum()

    return jax.grad(loss)


def offloading_args(sharding):
    return jax.ShapeDtypeStruct((16, 512, 512), jnp.float32, sharding=sharding), jax.ShapeDtypeStruct(
        (1024, 512), jnp.float32, sharding=sharding
    )


def test_a_body_lowered_here_is_lowered_again_for_a_targets_platform():
    """sk.jit lowers for this process (CPU), where jax drops a remat policy's host offloading; compiled for a TPU
    target, the body is lowered again for TPU, and the program is jax's own for those devices, offload included."""
    step = offloading_step()
    abstract = sk.NamedSharding(sk.AbstractMesh((2, 2), ("x", "y")), sk.P())
    lowered = sk.jit(step).lower(*offloading_args(abstract))
    assert "annotate_device_placement" not in lowered.as_text()  # jax's CPU lowering: no offload
    compiled = lowered.compile(target="tpu-v5e:2x2")
    mesh = topologies.make_mesh(topologies.get_topology_desc("v5e:2x2", platform="tpu"), (2, 2), ("x", "y"))
    theirs = jax.jit(step).trace(*offloading_args(jax.sharding.NamedSharding(mesh, jax.P()))).lower().compile()
    ours, jaxs = compiled.memory_analysis(), theirs.memory_analysis()
    fields = ("argument", "output", "temp", "host_temp")
    assert [getattr(ours, f"{k}_size_in_bytes") for k in fields] == [
        getattr(jaxs, f"{k}_size_in_bytes") for k in fields
    ]
    assert jaxs.host_temp_size_in_bytes == 16 * 1024 * 512 * 4  # every layer's activations, on the host
    assert lowered.compile(target="tpu-v5e:2x2").memory_analysis().host_temp_size_in_bytes > 0  # again, memoized
    # a platform named on jit is kept: a CPU lowering compiles for CPU only
    with pytest.raises(ValueError, match=r"was lowered for platform 'cpu' \(jit's platform\)"):
        sk.jit(step, platform="cpu").lower(*offloading_args(abstract)).compile(target="tpu-v5e:2x2")


def test_offloaded_memory_is_the_hosts_and_xlas_peak_is_not_taken():
    """What XLA keeps in the host's memory is reported as the host's; XLA's peak of such a program counts it with
    the device's (above everything the device holds at once), so the report prints its upper bound instead."""
    s = sk.NamedSharding(sk.AbstractMesh((2, 2), ("x", "y")), sk.P())
    compiled = sk.jit(offloading_step()).lower(*offloading_args(s)).compile(target="tpu-v5e:2x2")
    stats, report = compiled.memory_analysis(), compiled.memory()
    upper = stats.argument_size_in_bytes + stats.output_size_in_bytes + stats.temp_size_in_bytes
    upper += stats.generated_code_size_in_bytes - stats.alias_size_in_bytes
    assert stats.peak_memory_in_bytes > upper  # XLA's "peak": not a peak of the device's memory
    assert report.host == stats.host_temp_size_in_bytes and report.peak is None and report.total == upper
    assert report.fits and report.largest[0].kind == "host" and str(report.largest[0].shape) == "f32[16,1024,512]"
    text = str(report)
    assert "host (offloaded)     32.0 MiB, in the host's memory" in text and "total (upper bound)" in text
    assert json.loads(report.to_json())["host"] == report.host


def test_a_tpu_program_xla_placed_fits_whatever_its_upper_bound():
    """A TPU compiler refuses at compile time what does not fit, so a compiled program fits; an upper bound above
    the chip's memory is said to be one."""
    report = dataclasses.replace(lowered_on(sk.AbstractMesh((2, 4), ("x", "y"))).compile(target="tpu-v5e:2x4").memory(),
                                 peak=None, temporaries=20 * 2**30)  # fmt: skip
    assert report.placed and report.fits and report.total > report.capacity
    assert "(the upper bound is 125.0% of it; XLA placed every buffer in it: fits)" in str(report)
    assert not dataclasses.replace(report, placed=False).fits
    assert report.within(report.capacity) and not report.within(report.capacity - 1)  # autoshard's limits


# -- the GPT step at scale -----------------------------------------------------------------------------------

GPT_256 = """
import json, sys
sys.path.insert(0, "examples")
import jax
import gpt_train_step as gpt
import shardkit as sk
jax.config.update("jax_num_cpu_devices", 256)  # the example asks for 8; the backend has not started yet
mesh = jax.make_mesh((16, 16), ("data", "model"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
named = {k: jax.sharding.NamedSharding(mesh, jax.P(*spec)) for k, (_, spec) in gpt.PARAMS.items()}
batch = jax.sharding.NamedSharding(mesh, jax.P("data", None))
scalar = jax.sharding.NamedSharding(mesh, jax.P())
step = jax.jit(gpt.train_step, in_shardings=(named, named, named, scalar, batch, batch),
               out_shardings=(named, named, named, scalar, scalar), donate_argnums=(0, 1, 2))
state = {k: jax.ShapeDtypeStruct(shape, "float32") for k, (shape, _) in gpt.PARAMS.items()}
tokens = jax.ShapeDtypeStruct((32, gpt.SEQ), "int32")
compiled = step.trace(state, state, state, jax.ShapeDtypeStruct((), "float32"), tokens, tokens).lower().compile()
report = sk.inspect.xla_report(compiled.runtime_executable().hlo_modules()[0], list(mesh.devices.flat), mesh)
print(json.dumps(report.to_dict()["collectives"]))
"""


def test_gpt_step_on_256_cpu_devices_against_jax():
    """The GPT step compiled for cpu:256 here, and by jax.jit in a process that has 256 CPU devices."""
    step, args = gpt.build(sk.AbstractMesh((16, 16), ("data", "model")), batch=32)
    ours = step.lower(*args).compile(target="cpu:256").communication()
    child = run_python(GPT_256, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    theirs = json.loads(child.stdout.strip().splitlines()[-1])
    key = lambda c: (c["kind"], c["axes"], c["operands"], c["results"])  # noqa: E731
    assert sorted(map(key, (c.to_dict() for c in ours.collectives))) == sorted(map(key, theirs))
    assert len(ours.collectives) > 5


@pytest.mark.parametrize(("shape", "target"), [((16, 16), "tpu-v5e:16x16"), ((128, 16), "tpu-v5p:8x16x16")])
def test_gpt_step_on_tpu_slices(shape, target):
    step, args = gpt.build(sk.AbstractMesh(shape, ("data", "model")), batch=2 * shape[0])
    compiled = step.lower(*args).compile(target=target)
    report = compiled.communication()
    assert report.num_devices == shape[0] * shape[1]
    assert "all-reduce" in {c.kind for c in report.collectives}  # the gradients
    assert all(c.axes is not None for c in report.collectives)  # every group is along mesh axes
    memory = compiled.memory()
    assert memory.fits and memory.peak >= memory.arguments
    assert any("gpt_train_step.py:" in (b.source or "") for b in memory.largest)


# -- modules that need more devices than this process has (issue: load them, compile them, refuse to call) ----

SIXTEEN = """
module @sixteen attributes {mhlo.num_partitions = 16 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=4]>
  func.func @main(%a: tensor<16x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {"y"}]>})
      -> (tensor<16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) {
    %0 = stablehlo.constant dense<0.0> : tensor<f32>
    %1 = stablehlo.reduce(%a init: %0) applies stablehlo.add across dimensions = [1]
        : (tensor<16x16xf32>, tensor<f32>) -> tensor<16xf32>
    return %1 : tensor<16xf32>
  }
}
"""


def test_module_larger_than_this_process_loads_and_compiles():
    lowered = sk.load(SIXTEEN)
    assert "sdy.mesh @mesh" in lowered.as_text()
    ((s,), _) = lowered.in_shardings
    assert s.mesh.shape_tuple == (("x", 4), ("y", 4)) and s.spec == sk.P("x", "y")
    assert lowered.run_passes("propagate").shardings().rows
    assert lowered.communication().stage == "shardy"
    compiled = lowered.compile()
    assert compiled.target == "cpu:16"
    assert [c.kind for c in compiled.communication().collectives] == ["all-reduce"]
    with pytest.raises(ValueError, match=r"whose 16 devices this process does not have \(it has 8 cpu devices\)"):
        compiled(np.ones((16, 16), np.float32))


# -- the command line ----------------------------------------------------------------------------------------


def lower_tool(argv):
    out, err = io.StringIO(), io.StringIO()
    code = LowerMain(argv, stdout=out, stderr=err).run()
    return code, out.getvalue(), err.getvalue()


def test_shardkit_lower_target():
    code, out, err = lower_tool(
        [f"{__file__}:f", "--mesh", "x=4,y=4", "--arg", "64x64xf32:x,y", "--arg", "64x64xf32:x,y", "--target", "cpu:16"]
    )
    assert code == 0, err
    assert "XLA's partitioned program:" in out and "Memory per device of the program compiled for cpu:16" in out


def test_shardkit_lower_target_that_does_not_fit():
    code, out, err = lower_tool(
        [f"{__file__}:too_big_body", "--mesh", "x=2,y=2", "--arg", "80000xf32:_", "--target", "tpu-v5e:2x2"]
    )
    assert code == 1
    assert err.startswith("shardkit-lower: error: the program does not fit tpu-v5e:2x2: Ran out of memory")
    assert "f32[80000,80000]" in out


def too_big_body(a):
    return jnp.sin(jnp.outer(a, a)), jnp.cos(jnp.outer(a, a))


def test_shardkit_lower_bad_target():
    code, _, err = lower_tool(
        [f"{__file__}:f", "--mesh", "x=2", "--arg", "4x4xf32:x", "--arg", "4x4xf32", "--target", "tpu-v9:2"]
    )
    assert code == 1 and "unknown TPU generation 'v9'" in err and len(err.strip().splitlines()) == 1


def report_tool(argv):
    from shardkit.tools.report import ReportMain

    out, err = io.StringIO(), io.StringIO()
    code = ReportMain(argv, stdout=out, stderr=err).run()
    return code, out.getvalue(), err.getvalue()


def test_shardkit_report_target_and_hardware(tmp_path):
    path = tmp_path / "sixteen.mlir"
    path.write_text(SIXTEEN)
    code, out, err = report_tool([str(path), "--target", "tpu-v5e:4x4"])
    assert code == 0, err
    assert "1 collective on 16 devices (x=4 y=4)" in out
    assert "Memory per device of the program compiled for tpu-v5e:4x4 (16 devices)" in out
    assert "XLA's partitioned program on tpu-v5e: step" in out  # a TPU target is timed on its own chips
    code, out, err = report_tool([str(path), "--target", "cpu:16", "--hardware", "h100", "--json"])
    assert code == 0, err
    views = json.loads(out)
    assert set(views) == {"communication", "memory", "time"} and views["memory"]["target"] == "cpu:16"
    assert views["time"]["collectives"][0]["links"] == "nvlink"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--target", "tpu-v5e:2x2"], "partitioned for 16 devices, but target tpu-v5e:2x2 has 4"),
        (["--target", "cpu:16", "--plan"], "--target and --hardware compile the module; they do not apply to --plan"),
        (["--target", "cpu:16", "--mesh", "a=16"], "--mesh names groups on this machine's devices"),
        (["--hardware", "tpu-v9"], "hardware='tpu-v9' is not a known profile"),
    ],
)
def test_shardkit_report_target_errors(tmp_path, argv, message):
    path = tmp_path / "sixteen.mlir"
    path.write_text(SIXTEEN)
    code, _, err = report_tool([str(path), *argv])
    assert code == 1 and message in err and len(err.strip().splitlines()) == 1, err


def test_counted_loops_where_xla_records_no_trip_count():
    """XLA's TPU compiler records no trip counts; shardkit counts jax's counted loops itself (scan over the GPT's
    layers), and on every loop XLA's CPU compiler does record a count for, shardkit's own count agrees."""
    from shardkit.inspect import hlo, xla

    step, args = gpt.build(sk.AbstractMesh((2, 4), ("data", "model")), batch=4)
    lowered = step.lower(*args)
    tpu = lowered.compile(target="tpu-v5e:2x4").communication()
    on_cpu = lowered.compile(target="cpu:8")
    assert {c.loops for c in on_cpu.communication().collectives} == {(), (gpt.LAYERS,)}  # XLA's own count
    assert {c.loops for c in tpu.collectives} == {(), (gpt.LAYERS,)}
    module = on_cpu.executable.hlo_modules()[0]
    reader = xla._Reader(module, {}, on_cpu._lowered.device_assignment, None)
    loops = [i for c in module.computations() for i in c.instructions() if i.opcode == xla._Op.kWhile]
    assert loops
    for loop in loops:
        parsed = hlo.parse_instruction(loop.to_string())
        assert reader.counted_trips(loop, parsed) == hlo.known_trip_count(parsed) == gpt.LAYERS


def test_module_larger_than_any_virtual_machine_is_refused_at_load():
    """Past the virtual CPU devices shardkit makes (XLA's CPU client would take minutes and gigabytes for a
    million), loading names both counts instead of making them."""
    huge = SIXTEEN.replace('"x"=4, "y"=4', '"x"=4096, "y"=2').replace("num_partitions = 16", "num_partitions = 8192")
    with pytest.raises(ValueError, match=r"needs 8192 devices \(@mesh <\[\"x\"=4096, \"y\"=2\]>\): more than the 8 "):
        sk.load(huge)
