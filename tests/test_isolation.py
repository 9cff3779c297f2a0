"""Passes that crash run in a child process (shardkit.passes.isolation); misplaced pipelines are refused before
MLIR aborts on them; the Python API (run_pipeline, Lowered.run_passes) gets the same protection as the CLI."""

from __future__ import annotations

import dataclasses
import io
import os

import numpy as np
import pytest
from jaxlib.mlir import ir

import shardkit as sk
from shardkit import passes
from shardkit.dialects import context, irx, parsing
from shardkit.passes import Diagnostic, IRPrinting, MlirPass, Pass, PassError, PassManager, isolation

# From Shardy's ir/test/reshard_verification.mlir (openxla/shardy, Apache-2.0): sdy-insert-explicit-reshards fails
# a check (SIGABRT) on a reshard that drops one unreduced axis and introduces another, in jaxlib 0.10.2, 0.11.2 and
# 0.12.0.1 alike.
UNREDUCED = """sdy.mesh @mesh = <["x"=2, "y"=2, "z"=2]>
func.func @fine(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  return %arg0 : tensor<8xf32>
}
func.func @reshard_drop_and_introduce(
    %arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{}], unreduced={"x", "y"}>}) -> tensor<8xf32> {
  %0 = sdy.reshard %arg0 <@mesh, [{}], unreduced={"x", "z"}> : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""
CRASHER = "sdy-insert-explicit-reshards"

# Shardy's verifier of sdy.propagation_edges reads a sharding the op does not have: SIGSEGV while parsing (jaxlib 0.10.2
# and 0.12.0.1).
EDGES = """sdy.mesh @mesh = <["z"=4]>
func.func @f(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
  %0 = sdy.func_data_flow_edge %arg0 {sdy.propagation_edges = #sdy.propagation_edges<[{step-22 = [{"z" = result-0 -> \
[operand-3]}]}]>, sdy.sharding = #sdy.sharding_per_value<[]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
"""

GOOD = """module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=8]>
  func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
    %0 = stablehlo.negate %arg0 : tensor<8xf32>
    return %0 : tensor<8xf32>
  }
}
"""


def parse(text: str = GOOD) -> ir.Module:
    return ir.Module.parse(text, context())


@dataclasses.dataclass(frozen=True)
class Abort(Pass):
    """Ends the process, as a jaxlib CHECK failure does (importable, so it can run in the worker)."""

    name = "test-abort"

    def apply(self, module: ir.Module) -> None:
        os.abort()


@dataclasses.dataclass(frozen=True)
class Grumble(Pass):
    """Warns at every function and fails at the module."""

    name = "test-grumble"
    fail: bool = True

    def apply(self, module: ir.Module) -> None:
        for func in irx.ops(module, "func.func"):
            self.emit_warning(func, "looks odd")
        if self.fail:
            self.emit_error(module.operation, "is not to my liking")


@dataclasses.dataclass(frozen=True)
class AbortAsAWhole(Abort):
    """Crashes as one job, while its steps, run alone, do not."""

    name = "test-abort-as-a-whole"

    def steps(self) -> tuple[Pass, ...]:
        return (Grumble(fail=False), Grumble(fail=False))


@dataclasses.dataclass(frozen=True)
class Unmesh(Pass):
    """Points every sharding at a mesh that does not exist: the module no longer verifies."""

    name = "test-unmesh"

    def apply(self, module: ir.Module) -> None:
        for op in irx.ops(module, "sdy.mesh"):
            op.attributes["sym_name"] = ir.StringAttr.get("gone", module.context)


@dataclasses.dataclass(frozen=True)
class Hang(Pass):
    """Never returns (importable, so it can run in the worker)."""

    name = "test-hang"

    def apply(self, module: ir.Module) -> None:
        import time

        while True:
            time.sleep(1)


def test_a_pass_past_its_time_limit_is_stopped_as_a_diagnostic():
    module = parse()
    before = str(module)
    with pytest.raises(PassError) as e:
        PassManager([Hang()], pass_timeout=0.5).run(module)
    assert e.value.what == "timed out"
    [diag] = e.value.diagnostics
    assert diag.message == "pass 'test-hang' timed out after 0.5 s on 'builtin.module'"
    assert str(module) == before
    PassManager("canonicalize", pass_timeout=60).run(module)  # the next pass gets a fresh worker
    for bad in (0, -1.0, "1", True):
        with pytest.raises(ValueError, match="a pass time limit must be a positive number of seconds"):
            PassManager("canonicalize", pass_timeout=bad)


def test_shardkit_opt_takes_a_pass_timeout(tmp_path):
    from tests.child import run_python

    src = tmp_path / "m.mlir"
    src.write_text(GOOD)
    ok = run_python(
        "from shardkit.tools.opt import main; main()", str(src), "-p", "canonicalize", "--pass-timeout", "30"
    )
    assert ok.returncode == 0, ok.stderr
    bad = run_python(
        "from shardkit.tools.opt import main; main()", str(src), "-p", "canonicalize", "--pass-timeout", "0"
    )
    assert bad.returncode == 1 and bad.stderr.count("\n") == 1
    assert "a pass time limit must be a positive number of seconds, got 0.0" in bad.stderr


def test_a_crash_in_a_crash_prone_pass_is_a_pass_error_at_the_function():
    module = parse(UNREDUCED)
    before = str(module)
    with pytest.raises(PassError) as e:
        passes.run_pipeline(module, CRASHER)
    assert e.value.pass_name == "sdy-insert-explicit-reshards" and e.value.what == "crashed"
    [diag] = e.value.diagnostics
    assert (diag.severity, diag.message, diag.file, diag.line, diag.col) == (
        "error",
        "pass 'sdy-insert-explicit-reshards' crashed (SIGABRT) on 'func.func' @reshard_drop_and_introduce",
        "-",
        5,
        1,
    )
    [last_words] = diag.notes
    assert last_words.message.startswith("the pass's last words: Check failed: ")
    assert str(module) == before  # the crash happened in the child; this module is as it was
    # The next request starts a fresh worker.
    good = parse()
    passes.run_pipeline(good, "sdy-populate-op-sharding-rules")
    assert "sdy.sharding_rule" in str(good)


def test_a_crash_in_a_pipeline_run_as_one_job_names_the_pass_that_crashed():
    """explain runs Shardy's propagation as one isolated job of many passes; a crash names the pass that crashed
    (run again there one pass at a time), not the pipeline's first pass."""
    module = parse(UNREDUCED)
    pipeline = MlirPass("cse,canonicalize,func.func(sdy-insert-explicit-reshards),symbol-dce")
    with pytest.raises(PassError) as e:
        PassManager([pipeline]).run(module)
    assert e.value.pass_name == "cse,canonicalize,sdy-insert-explicit-reshards,symbol-dce"
    [diag] = e.value.diagnostics
    assert diag.message == "pass 'sdy-insert-explicit-reshards' crashed (SIGABRT) on 'builtin.module'"
    which, words = diag.notes
    assert which.message == "it is pass 3 of 4: cse, canonicalize, sdy-insert-explicit-reshards, symbol-dce"
    assert words.message.startswith("the pass's last words: Check failed: ")


def test_a_pipeline_whose_passes_do_not_crash_alone_is_named_with_its_passes():
    with pytest.raises(PassError) as e:
        PassManager([AbortAsAWhole()], isolation="all").run(parse())
    assert e.value.diagnostics[0].message == (
        "pipeline 'test-abort-as-a-whole' crashed (SIGABRT) on 'builtin.module'; run again one pass at a time, none "
        "of its 2 passes crashed: test-grumble, test-grumble"
    )


def test_an_isolated_pass_that_leaves_the_module_invalid_is_a_pass_error():
    module = parse()
    with pytest.raises(PassError) as e:
        PassManager([Unmesh()], isolation="all").run(module)
    assert e.value.what == "left the module invalid"
    assert "unknown mesh" in e.value.diagnostics[0].message, e.value


def test_parsing_input_the_verifier_crashes_on_happens_in_the_worker():
    """Shardy's verifier of sdy.propagation_edges crashes (SIGSEGV) on an edge naming a sharding its op lacks; parsing
    verifies, so such input is parsed in the worker: a crash there is an error at the attribute."""
    source = parsing.Input(EDGES, "edges.mlir", first_line=10)
    module, found = isolation.parse(source, context())
    assert module is None
    [diag] = found
    assert (diag.file, diag.line, diag.col) == ("edges.mlir", 12, 39)
    assert (
        diag.message.startswith("MLIR crashed (SIG")
        and isolation.CRASH_PRONE_SYNTAX["propagation_edges"] in diag.message
    )
    fine = EDGES.replace("operand-3", "operand-0").replace("<[]>", '<[<@mesh, [{"z"}, {}]>]>')
    module, found = isolation.parse(parsing.Input(fine, "edges.mlir"), context())
    assert found == [] and "sdy.propagation_edges" in str(module)
    assert isolation.crash_prone_syntax("// propagation_edges\nfunc.func") == ("propagation_edges", 3)
    assert isolation.crash_prone_syntax(GOOD) is None


def test_lowered_run_passes_is_protected_too():
    mesh = sk.make_mesh((8,), ("x",))
    lowered = sk.jit(lambda a: a * 2).lower(sk.device_put(np.zeros(8, np.float32), sk.NamedSharding(mesh, sk.P("x"))))
    passes.register_pass(Abort)
    try:
        with isolation.policy("all"), pytest.raises(PassError) as e:
            lowered.run_passes("test-abort")
    finally:
        passes.unregister_pass("test-abort")
    assert e.value.diagnostics[0].message == "pass 'test-abort' crashed (SIGABRT) on 'builtin.module' @jit__lambda"
    assert "stablehlo.multiply" in lowered.as_text()  # the original is untouched


def test_isolated_passes_report_and_rewrite_like_in_process_ones():
    outcomes = {}
    for policy in isolation.POLICIES:
        module = parse()
        pm = PassManager([Grumble(fail=False), *PassManager("export-gspmd,cse").passes], isolation=policy)
        pm.run(module)
        outcomes[policy] = (str(module), [str(d) for d in pm.warnings])
        with pytest.raises(PassError) as e:
            PassManager([Grumble()], isolation=policy).run(parse())
        assert [str(d) for d in e.value.diagnostics] == [
            "-:3:3: warning: 'func.func' op looks odd",
            "-:1:1: error: 'builtin.module' op is not to my liking",
        ]
    assert outcomes["all"] == outcomes["none"] == outcomes["crash-prone"]
    assert 'mhlo.sharding = "{devices=[8]<=[8]}"' in outcomes["all"][0]
    assert outcomes["all"][1] == ["-:3:3: warning: 'func.func' op looks odd"]


def test_which_passes_run_isolated():
    pm = PassManager(f"cse,{CRASHER},propagate,export-gspmd,sdy-propagation-pipeline")
    assert [pm.isolated(p) for p in pm.passes] == [False, True, False, False, True]
    # propagate is a shardkit pass whose jaxlib pipeline is crash-prone: that part goes to the worker.
    assert pm.passes[2].mlir_pass().crash_prone

    @dataclasses.dataclass(frozen=True)
    class Local(Pass):  # not importable by the worker: runs in-process even when all passes are isolated
        name = "test-local"

        def apply(self, module: ir.Module) -> None:
            module.operation.attributes["test.local"] = ir.UnitAttr.get(module.context)

    module = parse()
    everything = PassManager([Local(), *PassManager("cse").passes], isolation="all")
    assert [everything.isolated(p) for p in everything.passes] == [False, True]
    everything.run(module)
    assert "test.local" in str(module)
    with pytest.raises(ValueError, match="isolation must be one of crash-prone, all, none, got 'sometimes'"):
        PassManager("cse", isolation="sometimes")


@pytest.mark.parametrize(
    "pipeline, message",
    [
        (
            "func.func(sdy-export-pipeline)",
            (
                "Pass pipeline 'sdy-export-pipeline' cannot run nested on 'func.func': its "
                "pass 'sdy-remove-sharding-groups' runs on 'builtin.module'. Put it at the top level of the "
                "pipeline, outside "
                "'func.func(...)'."
            ),
        ),
        (
            "dedup-meshes ,func.func(sdy-import-pipeline) ,dedup-meshes",
            ("Pass pipeline 'sdy-import-pipeline' cannot run nested on 'func.func'"),
        ),
        ("sdy.mesh(sdy-import-pipeline)", "its pass 'sdy-lift-inlined-meshes' runs on 'builtin.module'"),
        (
            "builtin.module(func.func(cse, sdy-propagation-pipeline))",
            ("Pass pipeline 'sdy-propagation-pipeline' cannot run nested on 'func.func'"),
        ),
        (
            "func.func(cse,sdy-lift-inlined-meshes)",
            ("Pass 'sdy-lift-inlined-meshes' cannot run nested on 'func.func': it runs on 'builtin.module'."),
        ),
        (
            "sdy-propagation-pipeline{bogus=1}",
            ("MLIR pass 'sdy-propagation-pipeline' rejected its options: <Pass-Options-Parser>: no such option bogus"),
        ),
    ],
)
def test_misplaced_pipelines_are_refused_before_mlir_aborts(pipeline, message):
    with pytest.raises(ValueError) as e:
        PassManager(pipeline)
    assert message in str(e.value)


def test_pipelines_that_fit_their_anchor_are_accepted():
    pm = PassManager(
        "func.func(sdy-insert-explicit-reshards),builtin.module(sdy-import-pipeline),"
        "func.func(canonicalize,cse),builtin.module(builtin.module(cse))"
    )
    assert str(PassManager(str(pm))) == str(pm)


def test_findings_at_ops_without_a_location_point_at_the_closest_located_parent():
    module = parse(
        GOOD.replace("    return %0", '    %1 = stablehlo.negate %0 : tensor<8xf32> loc("name")\n    return %0')
    )
    negate = irx.ops(module, "stablehlo.negate")[1]
    assert str(Diagnostic.at(negate, "is odd")) == "-:3:3: error: 'stablehlo.negate' op is odd"  # @main's place


def test_timings_and_warnings_survive_a_failure_and_the_failed_ir_is_printed():
    out = io.StringIO()
    pm = PassManager([*PassManager("cse").passes, Grumble()], ir_printing=IRPrinting(after_failure=True, stream=out))
    with pytest.raises(PassError):
        pm.run(parse())
    assert [name for name, _ in pm.timings] == ["cse", "(verify)", "test-grumble"]
    assert [str(d) for d in pm.warnings] == ["-:3:3: warning: 'func.func' op looks odd"]
    assert out.getvalue().startswith("// -----// IR Dump After test-grumble Failed //----- //\nmodule attributes")


def test_too_deep_for_python_is_a_pass_error():
    @dataclasses.dataclass(frozen=True)
    class Deep(Pass):
        name = "test-deep"

        def apply(self, module: ir.Module) -> None:
            def down(n: int) -> int:
                return down(n + 1)

            down(0)

    with pytest.raises(PassError, match="the IR is nested too deeply for this pass"):
        PassManager([Deep()]).run(parse())


def test_a_module_the_worker_cannot_read_is_a_pass_error():
    ctx = context()
    ctx.allow_unregistered_dialects = True
    try:
        module = ir.Module.parse('func.func @main() {\n  "mine.op"() : () -> ()\n  return\n}', ctx)
        cse = PassManager("cse").passes[0]
        with pytest.raises(PassError) as e:
            isolation.run(module, isolation.Job("cse", cse, allow_unregistered=False))
    finally:
        ctx.allow_unregistered_dialects = False
    assert e.value.diagnostics[0].message.startswith("the isolation worker cannot read the module: ")
    assert "dialect 'mine' is unknown" in e.value.diagnostics[0].message


def test_a_worker_killed_between_requests_is_replaced(monkeypatch):
    module = parse()
    PassManager("cse", isolation="all").run(module)
    isolation._worker.process.kill()  # as an out-of-memory killer would
    isolation._worker.process.wait()
    PassManager("cse", isolation="all").run(module)  # prestart notices and starts another
    # Killed after that check: the request finds a broken pipe and reports the death like a crash.
    monkeypatch.setattr(isolation._Worker, "alive", lambda self: True)
    isolation._worker.process.kill()
    isolation._worker.process.wait()
    with pytest.raises(PassError, match=r"pass 'cse' crashed \(SIGKILL\) on 'builtin.module'"):
        PassManager("cse", isolation="all").run(module)
    monkeypatch.undo()
    PassManager("cse", isolation="all").run(module)


_F = "func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n  return %a : tensor<8xf32>\n}\n"
_H = _F.replace("@f", "@h")
_G = _F.replace("func.func @f", "func.func private @g")
_CALL = _F.replace("return %a", "%0 = call @g(%a) : (tensor<8xf32>) -> tensor<8xf32>\n  return %0")
_MAIN = _CALL.replace("@f", "@main")


@pytest.mark.parametrize("pipeline", ["propagate", "sdy-propagation-pipeline", "sdy-user-priority-propagate"])
@pytest.mark.parametrize(
    "text, runs",
    [
        ("", {}),
        (_G, {"sdy-user-priority-propagate"}),
        (_F, {"propagate", "sdy-propagation-pipeline", "sdy-user-priority-propagate"}),
        (_F + _G, {"propagate", "sdy-propagation-pipeline"}),
        (_F + _H, {}),
        (_CALL + _G, {}),
        (_MAIN + _G, {"propagate", "sdy-propagation-pipeline", "sdy-user-priority-propagate"}),
    ],
    ids=["empty", "private only", "one public", "public and private", "two public", "a call", "main"],
)
def test_propagation_without_an_entry_is_refused_before_shardy_aborts(text, runs, pipeline):
    """Shardy's propagation aborts the process looking up @main in these modules: the error says so, located at
    the module, instead of a crashed pass (or, without isolation, a dead process)."""
    module = parse(text)
    if pipeline in runs:
        passes.run_pipeline(module, pipeline)
        return
    with isolation.policy("none"), pytest.raises(PassError) as e:
        passes.run_pipeline(module, pipeline)
    [diag] = e.value.diagnostics
    assert e.value.what == "failed" and diag.line == (1 if text else 0)  # the first function, or the module
    assert diag.message.startswith("Shardy's propagation needs a public function @main, the program's entry")
