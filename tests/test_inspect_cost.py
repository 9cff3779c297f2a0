"""Loop bodies counted by their trip counts (shardkit.inspect.cost), against the same programs written out.

XLA's cost analysis counts a while body once; ``Compiled.cost()`` adds each body's own cost, counted from the
HLO, for the other runs. The oracle is XLA itself: a scan of ``K`` steps and the same ``K`` steps unrolled in
Python are the same computation, and XLA's cost analysis of the unrolled program has no loop to miscount.
"""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.inspect import LoopCost, ProgramCost, StepTime, program_cost

K = 6
MESH = sk.AbstractMesh((2, 4), ("x", "y"))


def layer(x, w, k):
    """A matmul, a convolution over the rows (a small filter), and elementwise ops: the ops priced differently."""
    y = jnp.tanh(x @ w)
    kernel = jnp.full((3, 1, 1), 0.5, x.dtype) * k
    conv = jax.lax.conv_general_dilated(y[:, :, None], kernel, (1,), "SAME", dimension_numbers=("NWC", "WIO", "NWC"))
    return jnp.maximum(conv[:, :, 0], 0.0) + y


def scanned(ws, ks, x):
    return jax.lax.scan(lambda x, wk: (layer(x, *wk), None), x, (ws, ks))[0]


def unrolled(ws, ks, x):
    for i in range(K):
        x = layer(x, ws[i], ks[i])
    return x


def arguments():
    ws = sk.ShapeDtypeStruct((K, 256, 256), np.float32, sharding=sk.NamedSharding(MESH, P(None, None, "y")))
    ks = sk.ShapeDtypeStruct((K,), np.float32, sharding=sk.NamedSharding(MESH, P()))
    x = sk.ShapeDtypeStruct((128, 256), np.float32, sharding=sk.NamedSharding(MESH, P("x", None)))
    return ws, ks, x


@pytest.mark.parametrize("target", ["cpu:8", "tpu-v5e:2x4"])
def test_scan_costs_what_the_unrolled_program_costs(target):
    """Flops within 2% of the unrolled program's (XLA's own count of the scan is ~1/K of it); bytes within 35%
    (the two programs move different data: the scan's loop state and stacked slices, the unrolled program's
    fused slices), where XLA's count of the scan is off by far more."""
    scan = sk.jit(scanned).lower(*arguments()).compile(target=target).cost()
    written_out = sk.jit(unrolled).lower(*arguments()).compile(target=target).cost()
    assert not written_out.loops and written_out["flops"] == written_out.xla["flops"]
    (loop,) = scan.loops
    assert (loop.loops, loop.runs, loop.known) == ((K,), K, True)
    assert loop.op_name == "jit(scanned)/while" and loop.source == f"{__file__}:{scanned.__code__.co_firstlineno + 1}"
    assert scan["flops"] == pytest.approx(written_out["flops"], rel=0.02)
    assert scan.xla["flops"] < written_out["flops"] / (K - 1)
    assert scan["bytes accessed"] == pytest.approx(written_out["bytes accessed"], rel=0.35)
    assert scan["transcendentals"] == pytest.approx(written_out["transcendentals"], rel=0.02)
    for key in scan:  # XLA's figure plus the body's own count for each run after the first
        own = {"flops": loop.flops, "transcendentals": loop.transcendentals, "bytes accessed": loop.bytes_accessed}
        assert scan[key] == pytest.approx(scan.xla[key] + (K - 1) * own[key])


def test_nested_loops_run_by_the_product_of_their_trip_counts():
    def f(x):
        def step(x, _):
            return jax.lax.fori_loop(0, 3, lambda i, y: y @ y, x), None

        return jax.lax.scan(step, x, None, length=4)[0]

    x = sk.ShapeDtypeStruct((64, 64), np.float32, sharding=sk.NamedSharding(MESH, P()))
    cost = sk.jit(f).lower(x).compile(target="cpu:8").cost()
    outer, inner = cost.loops
    assert (outer.loops, inner.loops, inner.runs) == ((4,), (4, 3), 12)
    matmul = 2 * 64**3
    assert inner.flops == pytest.approx(matmul, rel=0.01) and outer.flops < matmul / 100  # the matmul is the inner's
    assert cost["flops"] == pytest.approx(12 * matmul, rel=0.01)


def test_loop_of_unknown_trip_count_counts_once_and_is_marked():
    """A while_loop whose bound is data: XLA records no count and the loop has no counted form, so its body
    counts once, as in XLA's figure, and the cost, the step estimate and their JSON say so."""

    def f(x, n):
        return jax.lax.while_loop(lambda c: c[1] < n, lambda c: (jnp.tanh(c[0] @ c[0]), c[1] + 1), (x, 0))[0]

    x = sk.ShapeDtypeStruct((64, 64), np.float32, sharding=sk.NamedSharding(MESH, P("x", None)))
    n = sk.ShapeDtypeStruct((), np.int32, sharding=sk.NamedSharding(MESH, P()))
    compiled = sk.jit(f).lower(x, n).compile(target="cpu:8")
    cost = compiled.cost()
    (loop,) = cost.loops
    assert (loop.loops, loop.known, loop.runs) == ((None,), False, 1) and cost.unknown == (loop,)
    assert dict(cost) == {k: compiled.cost_analysis()[k] for k in cost}
    assert "1 loop of unknown trip count once (while" in str(cost)
    step = compiled.communication().time("tpu-v5e")
    assert step.loops == (loop,) and "of unknown trip count once" in str(step)
    assert json.loads(step.to_json())["loops"][0]["known"] is False


def test_cost_is_a_mapping_of_xla_keys_and_reads_in_the_step():
    compiled = sk.jit(scanned).lower(*arguments()).compile(target="cpu:8")
    cost = compiled.cost()
    assert isinstance(cost, ProgramCost) and all(isinstance(loop, LoopCost) for loop in cost.loops)
    assert list(cost) == ["flops", "transcendentals", "bytes accessed"] and len(cost) == 3
    with pytest.raises(KeyError):
        cost["optimal_seconds"]
    assert cost.xla == compiled.cost_analysis()
    data = json.loads(cost.to_json())
    assert data["flops"] == cost["flops"] and data["loops"][0]["runs"] == K
    text = str(cost)
    assert "1 loop body by their trip counts (6 runs)" in text and "XLA's own figures" in text
    step = compiled.communication().time("tpu-v5e")
    assert isinstance(step, StepTime) and step.flops == cost["flops"] and step.loops == cost.loops
    assert step.compute == pytest.approx(cost["flops"] / 1.97e14)
    assert "compute and memory count 1 loop body by their trip counts (6 runs)" in str(step)
    once = compiled.communication().time("tpu-v5e", cost=compiled.cost_analysis())  # XLA's figures as given
    assert once.loops == () and once.compute < step.compute / (K - 1)
    assert program_cost(compiled.executable.hlo_modules()[0], compiled.cost_analysis()) == cost


def test_gpt_step_on_a_tpu_slice_counts_every_layer():
    """The GPT step's layer scan (forward and backward) on a TPU target, whose compiler records no trip count:
    the loops run LAYERS times each, and the step's compute grows accordingly."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "examples" / "gpt_train_step.py"
    spec = importlib.util.spec_from_file_location("gpt_train_step", path)
    gpt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpt)
    step, args = gpt.build(sk.AbstractMesh((2, 4), ("data", "model")), batch=8)
    compiled = step.lower(*args).compile(target="tpu-v5e:2x4")
    cost = compiled.cost()
    assert [loop.loops for loop in cost.loops] == [(gpt.LAYERS,), (gpt.LAYERS,)]
    assert cost["flops"] > 1.5 * cost.xla["flops"]
