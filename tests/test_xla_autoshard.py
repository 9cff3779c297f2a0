"""XLA's own auto-sharding as a baseline (shardkit.autosharding.xla_auto), on small programs.

The compilers of the supported releases (libtpu's TPU compiler, XLA's CPU compiler) take the option and have no
auto-sharding pass behind it: these tests pin that down (open shardings come back replicated, and the program
is the one XLA compiles without the option), so a release that brings the pass shows up here.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.autosharding.xla_auto import XlaAutoResult, xla_autoshard
from shardkit.executor import compile_lowered, compile_options
from shardkit.inspect import MemoryReport, StepTime

MESH = sk.make_mesh((2, 4), ("x", "y"))


def two_matmuls(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


ARGS = (np.ones((256, 128), np.float32), np.ones((128, 512), np.float32), np.ones((512, 128), np.float32))


def open_program(x_sharding=None):
    """The program lowered for MESH with every sharding open but ``x``'s."""
    with MESH:
        return sk.jit(two_matmuls, in_shardings=(x_sharding, None, None), out_shardings=None).lower(*ARGS)


def test_open_program_on_a_tpu_slice():
    result = xla_autoshard(open_program(), "tpu-v5e:2x4")
    assert isinstance(result, XlaAutoResult) and result.compiled.target == "tpu-v5e:2x4"
    assert result.mesh_shape == (2, 4) and result.compile_seconds > 0
    assert result.in_hlo == ("{replicated}",) * 3 and result.out_hlo == ("{replicated}",)
    assert not result.partitioned  # libtpu's compiler has no auto-sharding pass behind the option
    (args, kwargs) = result.in_shardings
    assert kwargs == {} and all(s.is_fully_replicated for s in args) and result.out_shardings.is_fully_replicated
    assert isinstance(result.step, StepTime) and result.step.hardware.name == "tpu-v5e"
    assert isinstance(result.memory, MemoryReport) and result.memory.total > 0
    text = str(result)
    assert text.startswith("XLA's auto-sharding on tpu-v5e:2x4 over mesh 2x4: compiled in ")
    assert "nothing sharded" in text and "(modelled)" in text


def test_program_without_shardings_is_partitioned_for_the_target():
    """A program lowered with no sharding at all (one partition) is compiled for every device of the target, over
    the TPU slice's chip grid, or one axis of a CPU target's devices."""
    lowered = sk.jit(two_matmuls).lower(*ARGS)
    assert lowered._lowered.num_partitions == 1
    tpu = xla_autoshard(lowered, "tpu-v5e:2x4")
    assert (tpu.mesh_shape, tpu.compiled._lowered.num_partitions) == ((2, 4), 8)
    cpu = xla_autoshard(lowered, "cpu:8", mesh_shape=(4, 2), hardware="h100")
    assert cpu.mesh_shape == (4, 2) and cpu.step.hardware.name == "h100"
    assert xla_autoshard(lowered, "cpu:8").mesh_shape == (8,)
    assert xla_autoshard(lowered, "cpu:8").step is None  # a CPU target has no hardware profile


def test_given_shardings_are_kept_and_the_option_changes_nothing():
    """x's sharding is kept and GSPMD's propagation spreads it; the program is the one XLA compiles without the
    option (the Shardy-form program goes to XLA in its GSPMD form)."""
    result = xla_autoshard(open_program(sk.NamedSharding(MESH, P("x", None))), "cpu:8")
    assert result.partitioned and result.in_hlo[0] == "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"
    assert result.in_shardings[0][0].spec == P("x")
    bound = result.compiled._lowered
    without = compile_lowered(bound)
    assert without.hlo_modules()[0].to_string() == result.compiled.executable.hlo_modules()[0].to_string()


def test_errors_name_the_argument():
    lowered = open_program()
    with pytest.raises(TypeError, match=r"lowered must be a shardkit Lowered .*got function"):
        xla_autoshard(two_matmuls, "cpu:8")
    with pytest.raises(ValueError, match=r"target 'tpu-v9:2x4': unknown TPU generation 'v9'"):
        xla_autoshard(lowered, "tpu-v9:2x4")
    with pytest.raises(TypeError, match=r"target must be a target name .* got 8"):
        xla_autoshard(lowered, 8)
    with pytest.raises(ValueError, match=r"mesh_shape=\(3, 3\) has 9 devices, but target cpu:8 has 8"):
        xla_autoshard(lowered, "cpu:8", mesh_shape=(3, 3))
    with pytest.raises(ValueError, match=r"mesh_shape=\(0, 8\) must be positive axis sizes"):
        xla_autoshard(lowered, "cpu:8", mesh_shape=(0, 8))
    with pytest.raises(TypeError, match=r"mesh_shape must be a sequence of axis sizes .* got '2x4'"):
        xla_autoshard(lowered, "cpu:8", mesh_shape="2x4")
    with pytest.raises(ValueError, match=r"partitioned for 8 devices, but target cpu:4 has 4"):
        xla_autoshard(open_program(sk.NamedSharding(MESH, P("x", None))), "cpu:4")
    devices = MESH.flat_devices
    with pytest.raises(ValueError, match="XLA's auto-sharding runs with the GSPMD partitioner only"):
        compile_options(devices, shardy=True, in_specified=[False], out_specified=[False], auto_mesh=(2, 4))
    with pytest.raises(ValueError, match=r"auto_mesh=\(2, 2\) has 4 devices, not 8"):
        compile_options(devices, shardy=False, in_specified=[False], out_specified=[False], auto_mesh=(2, 2))
