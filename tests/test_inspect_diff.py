"""sk.inspect.diff and shardkit-report --diff: a program against itself is empty; one changed constraint is named
with the collectives it adds; SSA renumbering changes nothing."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import numpy as np
import pytest

import shardkit as sk
from shardkit import P
from shardkit.tools.report import ReportMain
from tests.examples import load_example
from tests.test_inspect_explain import transformer_step

F32 = np.float32
# the constraint's Python line: the stand-in for examples/mlp_2d.py's constraint below
CONSTRAINT_LINE = next(
    i for i, line in enumerate(Path(__file__).read_text().splitlines(), 1) if line.endswith("return original(h, new)")
)


def mlp(mesh_spec=("x", "y")):
    """The MLP step of examples/mlp_2d.py, its hidden activations constrained to ``mesh_spec``."""
    example = load_example("mlp_2d")
    mesh = sk.make_mesh((4, 2), ("x", "y"))
    original = sk.with_sharding_constraint
    train, params, data = example.build(mesh)
    args = example.arguments(params, data)
    new = sk.NamedSharding(mesh, P(*mesh_spec))

    def constrain(h, s):
        return original(h, new)

    sk.with_sharding_constraint = constrain
    try:
        return train.lower(*args)
    finally:
        sk.with_sharding_constraint = original


def test_self_diff_is_empty():
    lowered = mlp()
    assert not sk.inspect.diff(lowered, mlp())
    compiled = lowered.compile()
    found = sk.inspect.diff(compiled, lowered.compile())
    assert found.stage == "xla" and not found
    assert str(found) == "no differences\n"


def test_self_diff_of_the_transformer_is_empty():
    _, lowered = transformer_step()
    _, again = transformer_step()
    assert not sk.inspect.diff(lowered, again)


def test_changed_constraint_is_named_with_the_collectives_it_adds():
    before, after = mlp(("x", "y")), mlp(("x", None))
    found = sk.inspect.diff(before, after)
    assert found.stage == "shardy"
    constraints = [v for v in found.constraints if v.op == "sdy.sharding_constraint"]
    assert constraints and all(v.source.endswith(f"test_inspect_diff.py:{CONSTRAINT_LINE}") for v in constraints)
    assert {(v.before, v.after) for v in constraints} == {("P('x', 'y')", "P('x',)")}
    assert found.added and all(c.kind in sk.inspect.KINDS for c in found.added)
    # the bytes per axis agree with the two plans
    a, b = before.communication().by_axes(), after.communication().by_axes()
    for axes, (x, y) in found.by_axes.items():
        assert x == (a[axes].wire_bytes if axes in a else 0)
        assert y == (b[axes].wire_bytes if axes in b else 0)
    compiled = sk.inspect.diff(before.compile(), after.compile())
    assert compiled.stage == "xla" and compiled.added + compiled.removed + tuple(b for _, b in compiled.resized)


def test_mixed_stages_compare_shardy_plans():
    lowered = mlp()
    assert sk.inspect.diff(lowered, lowered.compile()).stage == "shardy"
    assert not sk.inspect.diff(lowered, lowered.compile())


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("diff")
    text = mlp().as_text(debug_info=True)
    a, b, renumbered = folder / "a.mlir", folder / "b.mlir", folder / "renumbered.mlir"
    a.write_text(text)
    b.write_text(
        text.replace(
            'sdy.sharding_constraint %1 <@mesh, [{"x"}, {"y"}]>', 'sdy.sharding_constraint %1 <@mesh, [{"x"}, {}]>', 1
        )
    )
    assert b.read_text() != text
    # a dead constant first in main renumbers every SSA value after it
    body = re.search(r"func.func public @main\(.*\{\n", text).end()
    renumbered.write_text(text[:body] + "    %dead = stablehlo.constant dense<1.0> : tensor<f32>\n" + text[body:])
    return a, b, renumbered


def test_files(files):
    a, b, renumbered = files
    assert not sk.inspect.diff(str(a), str(renumbered))
    found = sk.inspect.diff(a, b)
    (changed,) = [v for v in found.constraints if v.op == "sdy.sharding_constraint"]
    assert changed.source.endswith(f"test_inspect_diff.py:{CONSTRAINT_LINE}") and changed.after == "P('x',)"
    assert ("all-gather", "'y'") in [(c.kind, c.over) for c in found.added]


def test_errors(tmp_path):
    with pytest.raises(TypeError, match="diff argument a must be a Lowered, a Compiled, .* got int"):
        sk.inspect.diff(3, mlp())
    with pytest.raises(ValueError, match="diff argument b: could not read"):
        sk.inspect.diff(mlp(), tmp_path / "missing.mlir")
    bad = tmp_path / "bad.mlir"
    bad.write_text("not mlir")
    with pytest.raises(ValueError, match="diff argument b: .* is not an MLIR module"):
        sk.inspect.diff(mlp(), bad)


def run_tool(argv):
    out, err = io.StringIO(), io.StringIO()
    return ReportMain(argv, stdout=out, stderr=err).run(), out.getvalue(), err.getvalue()


def test_cli_diff(files):
    a, b, renumbered = files
    code, out, err = run_tool(["--diff", str(a), str(renumbered), "--plan"])
    assert (code, out, err) == (0, "no differences\n", "")
    code, out, err = run_tool(["--diff", str(a), str(b), "--json"])
    assert code == 0 and err == ""
    data = json.loads(out)
    assert data["stage"] == "xla"
    assert any(v["op"] == "sdy.sharding_constraint" and v["after"] == "P('x',)" for v in data["values"])
    assert data["added"] and set(data["by_axes"]) >= {"'x'", "'y'"}
    code, out, _ = run_tool(["--diff", str(a), str(b), "--plan"])
    assert code == 0 and "collectives added:" in out and "by mesh axes" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--diff", "A", "B", "C"], "expected two inputs (A.mlir B.mlir), got 3"),
        (["A", "B"], "expected one input (two only with --diff), got 2"),
        (["--diff", "A", "B", "--explain"], "--diff compares two programs; --table, --explain and --image do not"),
        (["--diff", "missing.mlir", "B"], "could not open input file 'missing.mlir'"),
    ],
)
def test_cli_diff_errors(argv, message):
    code, out, err = run_tool(argv)
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and message in err
