"""The HLO text pieces the communication report reads (shardkit.inspect.hlo), on real dumps.

``tests/data/hlo/*.hlo`` are modules jax 0.10 compiled on 8 CPU devices (see each file's header), plus one
hand-written module in XLA's syntax for the async forms a GPU build emits, which XLA's own parser checks.
Replica groups in the explicit and iota forms are compared with XLA's HLO -> StableHLO translator
(``jax.extend.mlir.hlo_to_stablehlo``), which expands them; the mesh forms (which the translator mangles:
it drops ``device_ids``) are checked against groups worked out by hand.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import re
from pathlib import Path

import jax.extend.mlir
import numpy as np
import pytest
from jaxlib import xla_client as xc
from jaxlib.mlir import ir

from shardkit.dialects import context
from shardkit.inspect import hlo

DATA = Path(__file__).parent / "data" / "hlo"
COLLECTIVE_OPCODES = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all", "collective-permute")


def load(name: str):
    text = re.sub(r"^//.*\n", "", (DATA / name).read_text(), flags=re.MULTILINE)
    return text, xc.hlo.hlo_module_from_text(text)


def collective_lines(module) -> list[hlo.Instruction]:
    found = []
    for computation in module.computations():
        for inst in computation.instructions():
            parsed = hlo.parse_instruction(inst.to_string())
            if parsed.opcode.removesuffix("-start") in COLLECTIVE_OPCODES:
                found.append(parsed)
    return found


# -- instruction lines -------------------------------------------------------------------------------------


def test_instruction_line_with_nested_and_quoted_attributes():
    line = (
        "ROOT %all-reduce.2 = (f32[2,4]{1,0}, s32[]) all-reduce(%dot.2, %c), channel_id=1, "
        "replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=%add.clone, "
        'metadata={op_name="jit(f)/a, \\"b\\"" stack_frame_id=5}'
    )
    inst = hlo.parse_instruction(line)
    assert (inst.name, inst.opcode, inst.shape) == ("all-reduce.2", "all-reduce", "(f32[2,4]{1,0}, s32[])")
    assert inst.attributes["replica_groups"] == "{{0,1},{2,3}}"
    assert inst.attributes["to_apply"] == "%add.clone"
    assert hlo.metadata(inst) == {"op_name": 'jit(f)/a, "b"', "stack_frame_id": "5"}
    assert inst.arrays == (hlo.ArrayShape("f32", (2, 4)), hlo.ArrayShape("s32", ()))


def test_mesh_groups_keep_their_device_ids():
    line = (
        "%all-gather = f32[16,16]{1,0} all-gather(%t), channel_id=2, replica_groups=mesh['axis_0'=4,"
        "'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_0'}, dimensions={0}, use_global_device_ids=true"
    )
    attrs = hlo.parse_instruction(line).attributes
    assert attrs["replica_groups"] == "mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_0'}"
    assert attrs["dimensions"] == "{0}"


@pytest.mark.parametrize("line", ["HloModule m", "%x f32[] parameter(0)", "ROOT %t = f32[] tuple"])
def test_not_an_instruction_raises(line):
    with pytest.raises(ValueError, match="not an HLO instruction line"):
        hlo.parse_instruction(line)


def test_shapes():
    assert hlo.parse_shape("bf16[8,128]{1,0:T(8,128)(2,1)}") == (hlo.ArrayShape("bf16", (8, 128)),)
    assert hlo.parse_shape("((f32[8,4]{1,0}), f32[2,4]{1,0}, u32[])") == (
        hlo.ArrayShape("f32", (8, 4)),
        hlo.ArrayShape("f32", (2, 4)),
        hlo.ArrayShape("u32", ()),
    )
    assert hlo.parse_shape("f32[<=4,2]")[0].dims == (4, 2)
    assert [a.nbytes for a in hlo.parse_shape("(pred[3], s4[3], c64[2], token[])")] == [3, 2, 16, 0]
    with pytest.raises(ValueError, match="unknown HLO element type 'q9'"):
        _ = hlo.ArrayShape("q9", (2,)).nbytes


# -- replica groups ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, groups",
    [
        ("{{0,1},{2,3}}", [[0, 1], [2, 3]]),
        ("{}", []),
        ("[4,2]<=[8]", [[0, 1], [2, 3], [4, 5], [6, 7]]),
        ("[2,4]<=[4,2]T(1,0)", [[0, 2, 4, 6], [1, 3, 5, 7]]),
        ("[1,8]<=[2,2,2]T(2,1,0)", [[0, 4, 2, 6, 1, 5, 3, 7]]),
        # ids [0,4,1,5,2,6,3,7] on a (1,4,2) mesh; the rows along axis_1 (by hand)
        ("mesh['axis_0'=1,'axis_1'=4,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_1'}", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("mesh['axis_0'=4,'axis_1'=1,'axis_2'=2], device_ids=([2,4]T(1,0)) {'axis_0'}", [[0, 1, 2, 3], [4, 5, 6, 7]]),
        ("mesh['x'=4,'y'=2] {'y'}", [[0, 1], [2, 3], [4, 5], [6, 7]]),
        ("mesh['x'=4,'y'=2] {'y','x'}", [[0, 2, 4, 6, 1, 3, 5, 7]]),
        # x:(1)2 is x's major half (Shardy's pre-size: the product of the parts major to it), x:(2)2 its minor one
        ("mesh['x'=4,'y'=2] {'x':(1)2}", [[0, 4], [1, 5], [2, 6], [3, 7]]),
        ("mesh['x'=4,'y'=2] {'x':(2)2}", [[0, 2], [1, 3], [4, 6], [5, 7]]),
        ("mesh['x'=2,'y'=2], device_ids=(3,2,1,0) {'x'}", [[3, 1], [2, 0]]),
    ],
)
def test_replica_group_forms(text, groups):
    assert hlo.replica_groups(text) == groups


_SUB_AXIS_SUM = """HloModule sub_axis_sum, num_partitions=8

add {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT c = f32[] add(a, b)
}

ENTRY main {
  p = f32[8] parameter(0), sharding={devices=[8]<=[8]}
  m = f32[1] custom-call(p), custom_call_target="SPMDFullToShardShape", sharding={manual}
  s = f32[1] all-reduce(m), channel_id=1, replica_groups=GROUPS, use_global_device_ids=true, to_apply=add,
      sharding={manual}
  ROOT r = f32[8] custom-call(s), custom_call_target="SPMDShardToFullShape", sharding={devices=[8]<=[8]}
}
"""


@pytest.mark.parametrize(
    "groups",
    ["mesh['x'=4,'y'=2] {'x':(1)2}", "mesh['x'=4,'y'=2] {'x':(2)2}", "[4,2]<=[2,4]T(1,0)", "{{0,7},{1,6},{2,5},{3,4}}"],
)
def test_replica_groups_are_the_ones_xla_runs(groups):
    """XLA itself decides what a form means: partition p holds p, and after the all-reduce each holds its group's
    sum (XLA's and Shardy's sub-axis convention: x:(1)2 is the major half of x)."""
    import shardkit as sk

    out = np.asarray(sk.load(_SUB_AXIS_SUM.replace("GROUPS", groups)).compile()(np.arange(8.0, dtype=np.float32)))
    expected = np.zeros(8, dtype=np.float32)
    for group in hlo.replica_groups(groups):
        expected[group] = sum(group)
    np.testing.assert_array_equal(out, expected)


def test_unknown_replica_group_form_raises():
    with pytest.raises(ValueError, match="unrecognised replica_groups form"):
        hlo.replica_groups("ring(8)")


def _translated_groups(module) -> set[tuple[tuple[int, ...], ...]]:
    """Every explicit replica-group list of XLA's HLO -> StableHLO translation of the module."""
    mlir = ir.Module.parse(jax.extend.mlir.hlo_to_stablehlo(module.as_serialized_hlo_module_proto()), context())
    found = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        attr = op.attributes.get("replica_groups")
        if isinstance(attr, ir.DenseIntElementsAttr):
            found.add(tuple(map(tuple, np.array(attr).tolist())))
        return ir.WalkResult.ADVANCE

    mlir.operation.walk(visit)
    return found


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.hlo")))
def test_every_collective_of_the_dumps_parses(name):
    _, module = load(name)
    lines = collective_lines(module)
    assert lines
    mine = set()
    for inst in lines:
        if "collective-permute" in inst.opcode:
            pairs = hlo.source_target_pairs(inst.attributes["source_target_pairs"])
            assert sorted(s for s, _ in pairs) == sorted(t for _, t in pairs)
            continue
        groups = hlo.replica_groups(inst.attributes["replica_groups"])
        assert sorted(i for g in groups for i in g) == list(range(8)), inst
        if not inst.attributes["replica_groups"].startswith("mesh"):
            mine.add(tuple(map(tuple, groups)))
    assert mine == _translated_groups(module)


# -- loops, calls, metadata, source ------------------------------------------------------------------------


def test_trip_counts_and_called_computations():
    _, module = load("while_iota_groups.hlo")
    whiles = [
        hlo.parse_instruction(i.to_string())
        for c in module.computations()
        for i in c.instructions()
        if i.opcode == xc.hlo.HloOpcode.kWhile
    ]
    counts = sorted((hlo.known_trip_count(w) is None, hlo.known_trip_count(w)) for w in whiles)
    assert counts == [(False, 3), (True, None)]  # the fori_loop's 3; the data-dependent while_loop's unknown
    for w in whiles:
        called = hlo.called_computations(w)
        assert len(called) == 2 and all(c in {x.name for x in module.computations()} for c in called)
    conditional = hlo.parse_instruction("%c = f32[] conditional(%p, %a, %b), branch_computations={%one, %two}")
    assert hlo.called_computations(conditional) == ["one", "two"]


def test_stack_frames_of_a_real_dump():
    text, module = load("shard_map_collectives.hlo")
    frames = hlo.stack_frames(text)
    psum = next(i for i in collective_lines(module) if i.name.startswith("psum"))
    where = hlo.source(hlo.metadata(psum), frames)
    assert (Path(where.file).name, where.function) == ("gen_dumps.py", "collectives")
    assert hlo.source({"source_file": "/a/b.py", "source_line": "7"}, frames) == hlo.Frame("/a/b.py", 7, "")
    assert hlo.source({}, frames) is None


# -- whole modules: the reader's structure is XLA's --------------------------------------------------------

MAXTEXT = Path(__file__).parent / "data" / "maxtext"
KEPT = sorted(DATA.glob("*.hlo")) + sorted(MAXTEXT.glob("*.hlo.gz"))


def kept_module(path: Path):
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return xc.hlo.hlo_module_from_text(re.sub(r"^//.*\n", "", text, flags=re.MULTILINE))


def _opcode(op) -> str:
    """XLA's printed name of an ``HloOpcode`` (``kAllGatherStart`` -> ``all-gather-start``)."""
    special = {
        **{"kOptimizationBarrier": "opt-barrier", "kExpm1": "exponential-minus-one", "kLog1p": "log-plus-one"},
        **{"kExp": "exponential", "kSin": "sine", "kCos": "cosine"},
    }
    name = op.name
    return special.get(name) or re.sub(r"(?<!^)(?=[A-Z])", "-", name[1:]).lower()


def _same_opcode(printed: str, xla: str) -> bool:
    """XLA prints an async op wrapping one instruction by the wrapped op's name (``reduce-scatter-start`` for an
    ``async-start`` of a reduce-scatter)."""
    if xla in ("async-start", "async-update", "async-done"):
        return printed.endswith(xla.removeprefix("async"))
    return printed == xla


@pytest.mark.parametrize("path", KEPT, ids=lambda p: p.name)
def test_reader_equals_xla_structure(path):
    """Every kept program (the CPU dumps, MaxText's TPU programs: the 16B and 128B steps, and MaxText 0.2.5's own
    step with the splash kernel, whose ``kernel_metadata`` spans lines and whose third line starts with ``}}``):
    per computation, the reader's instructions are XLA's, in XLA's order, with XLA's opcodes and operands, the root
    last."""
    module = kept_module(path)
    read = hlo.computations(module)
    assert set(read) == {c.name for c in module.computations()}
    for computation in module.computations():
        insts = computation.instructions()
        mine = read[computation.name]
        assert [i.name for i in mine] == [i.name for i in insts], computation.name
        assert all(_same_opcode(a.opcode, _opcode(b.opcode)) for a, b in zip(mine, insts)), computation.name
        assert [i.operands for i in mine if i.opcode != "constant"] == [
            tuple(o.name for o in i.operands()) for i in insts if _opcode(i.opcode) != "constant"
        ]
    text = module.to_string()
    roots = re.findall(r"^  ROOT %?([^\s=]+) =", text, flags=re.MULTILINE)
    assert {read[c][-1].name for c in read if read[c]} >= set(roots)


def test_multi_line_attributes_are_read_whole():
    """The splash kernel's custom call prints ``frontend_attributes={kernel_metadata={`` over three lines, the last
    starting with ``}}``: a reader that ends a computation at a line starting with ``}`` kept 142 of the 16B backward
    loop body's 468 instructions. The kernels and the instructions after them are all read, their backend config
    included."""
    module = kept_module(MAXTEXT / "maxtext-tiny-flash-v5e-2x2.hlo.gz")
    assert re.search(r"^\}\}", module.to_string(), flags=re.MULTILINE)
    kernels = [
        i
        for insts in hlo.computations(module).values()
        for i in insts
        if i.attributes.get("custom_call_target") == '"tpu_custom_call"'
    ]
    assert len(kernels) >= 4  # the splash forward and backward, in the scanned layer's body and its remat
    assert all("kernel_metadata" in k.attributes["frontend_attributes"] for k in kernels)
    assert all(json.loads(k.attributes["backend_config"])["custom_call_config"]["body"] for k in kernels)


def test_a_misread_instruction_is_an_error(monkeypatch):
    """Where the parse of an instruction's text disagrees with XLA's structure, no figure is made from it."""
    _, module = load("while_iota_groups.hlo")
    real = hlo.parse_instruction
    monkeypatch.setattr(hlo, "parse_instruction", lambda text: dataclasses.replace(real(text), operands=()))
    with pytest.raises(ValueError, match="shardkit's reader does not know this form"):
        hlo.computations(module)


def test_a_computation_outside_the_schedule_is_read_operands_first():
    """jaxlib lists the computation an async-start wraps with its call before the parameter it reads (MaxText's
    v5p steps, jaxlib 0.12): the reader puts every instruction after its operands, and keeps the order otherwise."""

    @dataclasses.dataclass(frozen=True)
    class Inst:
        name: str
        args: tuple = ()

        def operands(self):
            return list(self.args)

    param, other = Inst("async_param"), Inst("other")
    call = Inst("call", (param,))
    assert [i.name for i in hlo._operands_first([call, param])] == ["async_param", "call"]
    assert [i.name for i in hlo._operands_first([other, param, call])] == ["other", "async_param", "call"]
