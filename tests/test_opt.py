"""shardkit-opt driven in-process: exit codes, outputs, diagnostics as mlir-opt prints them, mlir-opt's flags."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from shardkit.passes.mlir_passes import SUMMARIES
from shardkit.passes.mlir_pipeline import is_mlir_pass
from shardkit.tools.opt import OptMain

GOOD = """sdy.mesh @mesh = <["x"=8]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {
  %0 = stablehlo.negate %arg0 : tensor<8xf32>
  return %0 : tensor<8xf32>
}
"""

# Two identical adds, a constraint: cse folds the adds, sdy-sharding-constraint-to-reshard rewrites the constraint.
TWO_ADDS = """sdy.mesh @mesh = <["x"=8]>
func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {
  %0 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
  %1 = stablehlo.add %arg0, %arg0 : tensor<8xf32>
  %2 = stablehlo.multiply %0, %1 : tensor<8xf32>
  %3 = sdy.sharding_constraint %2 <@mesh, [{"x"}]> : tensor<8xf32>
  return %3 : tensor<8xf32>
}
"""


# Shardy's verifier of sdy.propagation_edges reads a sharding the op does not have: SIGSEGV while parsing.
EDGES = """sdy.mesh @mesh = <["z"=4]>
func.func @f(%arg0: tensor<8x8xf32>) -> (tensor<8x8xf32>) {
  %0 = sdy.func_data_flow_edge %arg0 {sdy.propagation_edges = #sdy.propagation_edges<[{step-22 = [{"z" = result-0 -> \
[operand-3]}]}]>, sdy.sharding = #sdy.sharding_per_value<[]>} : tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
"""


def opt(*argv: str, stdin: str | bytes = GOOD) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    stream = io.BytesIO(stdin) if isinstance(stdin, bytes) else io.StringIO(stdin)
    code = OptMain(list(argv), stdin=stream, stdout=out, stderr=err).run()
    return code, out.getvalue(), err.getvalue()


def sized(n: int) -> str:
    """GOOD with tensors of n elements (the mesh keeps 8 devices)."""
    return GOOD.replace("8xf32", f"{n}xf32")


def test_runs_a_pipeline_from_stdin():
    code, out, err = opt("-p", "export-gspmd")
    assert (code, err) == (0, "")
    assert 'func.func @main(%arg0: tensor<8xf32> {mhlo.sharding = "{devices=[8]<=[8]}"})' in out


def test_no_pipeline_prints_the_module_back():
    code, out, _ = opt()
    assert code == 0 and out.startswith("module {\n  sdy.mesh @mesh")


def test_file_in_file_out(tmp_path):
    src, dst = tmp_path / "in.mlir", tmp_path / "out.mlir"
    src.write_text(GOOD + "// -----\n" + GOOD)
    code, out, err = opt(str(src), "-p", "strip-shardings", "--split-input-file", "-o", str(dst))
    assert (code, out, err) == (0, "", "")
    assert dst.read_text().count("module {") == 2 and "// -----\n" in dst.read_text()
    assert "sdy" not in dst.read_text()


def test_diagnostics_show_the_source_line_and_a_caret(tmp_path):
    src = tmp_path / "bad.mlir"
    src.write_text("\n\nfunc.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n  return %b : tensor<8xf32>\n}\n")
    code, out, err = opt(str(src), "-p", "cse")
    assert code == 1 and out == ""
    assert err == f"{src}:4:10: error: use of undeclared SSA value name\n  return %b : tensor<8xf32>\n         ^\n"


def test_notes_follow_their_error():
    text = (
        "func.func @f(%a: tensor<8xf32>) -> tensor<8xf32> {\n  %0 = stablehlo.add %a, %a : tensor<8xf32>\n"
        "  return %0 : tensor<4xf32>\n}\n"
    )
    code, _, err = opt(stdin=text)
    assert code == 1
    assert err == (
        "<stdin>:3:10: error: use of value '%0' expects different type than prior uses: 'tensor<4xf32>' "
        "vs 'tensor<8xf32>'\n  return %0 : tensor<4xf32>\n         ^\n"
        "<stdin>:2:3: note: prior use here\n  %0 = stablehlo.add %a, %a : tensor<8xf32>\n  ^\n"
    )


def test_split_keeps_line_numbers():
    code, _, err = opt("--split-input-file", "-p", "verify-shardings", stdin=GOOD + "// -----\n" + sized(6))
    assert code == 1
    assert err.startswith(
        "<stdin>:8:1: error: 'func.func' op arg 0 - dim 0 of size 6 is not divisible by 8, "
        'the size of axes {"x"}\nfunc.func @main('
    )


def test_pass_errors_and_pipeline_errors():
    code, _, err = opt("-p", "export-gspmd,frobnicate")
    assert code == 1 and err.startswith("shardkit-opt: error: Unknown pass 'frobnicate'")
    code, _, err = opt("-p", "propagate{keep-open=maybe}")
    assert code == 1 and "expects true or false, got 'maybe'" in err
    code, _, err = opt("missing.mlir")
    assert (code, err) == (
        1,
        "shardkit-opt: error: could not open input file 'missing.mlir': No such file or directory\n",
    )


def test_passes_as_flags_like_mlir_opt():
    for argv in (
        ["-cse", "-sdy-sharding-constraint-to-reshard"],
        ["--cse", "--sdy-sharding-constraint-to-reshard"],
        ["--pass-pipeline=builtin.module(cse,func.func(sdy-sharding-constraint-to-reshard))"],
        ["-pass-pipeline", "builtin.module(cse, sdy-sharding-constraint-to-reshard)"],
    ):
        code, out, err = opt(*argv, stdin=TWO_ADDS)
        assert (code, err) == (0, ""), argv
        assert out.count("stablehlo.add") == 1 and "sdy.reshard" in out, argv
    # Options after '=', quoted as the shell passes them; shardkit passes work the same way.
    code, out, _ = opt("-canonicalize=max-iterations=1 region-simplify=disabled", "-export-gspmd", stdin=TWO_ADDS)
    assert code == 0 and "mhlo.sharding" in out


def test_pass_flag_mistakes():
    code, _, err = opt("-cse", "-p", "cse")
    assert (code, err) == (
        1,
        ("shardkit-opt: error: -p/--pass-pipeline cannot be combined with passes given as flags (-cse)\n"),
    )
    code, _, err = opt("-split-input-fil")
    assert code == 1 and "unknown command line argument '-split-input-fil'" in err
    assert "Did you mean '-split-input-file'?" in err
    code, _, err = opt("-cse=no-such-option=1")
    assert code == 1 and err.startswith("shardkit-opt: error: MLIR pass 'cse' rejected its options")
    code, _, err = opt("-o")
    assert (code, err) == (1, "shardkit-opt: error: option '-o' needs a value\n")
    code, _, err = opt("--verify-diagnostics=sometimes")
    assert code == 1 and "invalid choice: 'sometimes'" in err
    code, _, err = opt("--mlir-elide-elementsattrs-if-larger=many")
    assert (code, err) == (
        1,
        ("shardkit-opt: error: argument --mlir-elide-elementsattrs-if-larger: invalid int value: 'many'\n"),
    )


def test_verify_diagnostics():
    text = sized(6).replace("func.func", "// expected-error @+1 {{dim 0 of size 6 is not divisible by 8}}\nfunc.func")
    code, _, err = opt("-p", "verify-shardings", "--verify-diagnostics", stdin=text)
    assert (code, err) == (0, "")
    code, _, err = opt("-p", "verify-shardings", "--verify-diagnostics", stdin=text.replace("size 6 is", "size 5 is"))
    assert code == 1
    assert err.startswith(
        "<stdin>:3:1: error: unexpected error: 'func.func' op arg 0 - dim 0 of size 6 is not "
        'divisible by 8, the size of axes {"x"}\nfunc.func @main('
    )
    assert (
        '<stdin>:2:4: error: expected error "dim 0 of size 5 is not divisible by 8" was not produced\n'
        "// expected-error @+1 {{dim 0 of size 5 is not divisible by 8}}\n"
        "   ^" + "~" * 36 + "\n"
    ) in err  # the caret, then the length of the expected text


def test_verify_diagnostics_reports_each_unmet_directive_where_mlir_opt_does(tmp_path):
    # The fuzz reproducer fuzz-2026-11c (found from outside): an @unknown note no pass produces. MLIR's verifier drops
    # an @unknown directive's place (computeExpectedDiags sets its fileLoc to SMLoc()), and SourceMgr prints an
    # invalid location as "<unknown>:0"; a located directive is reported at itself, with its line and a caret.
    note = "the pass's last words: Check failed"
    path = tmp_path / "in.mlir"
    path.write_text(f"// expected-note @unknown {{{{{note}}}}}\n{GOOD}// expected-note @+1 {{{{never}}}}\n\n")
    code, _, err = opt(str(path), "-p", "cse", "--verify-diagnostics")
    assert code == 1
    assert err == (
        f'{path}:7:4: error: expected note "never" was not produced\n'
        "// expected-note @+1 {{never}}\n"
        "   ^~~~~\n"
        f'<unknown>:0: error: expected note "{note}" was not produced\n'
    )


def test_warnings_of_mlir_passes_are_printed_and_verified():
    # Shardy's propagation warns (through MLIR's diagnostic engine, which drops warnings no handler takes)
    # when the members of a sharding group start with different shardings.
    text = """sdy.mesh @mesh = <["x"=2, "y"=2]>
func.func @main(%arg0: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>},
                %arg1: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}]>}) -> tensor<8xf32> {
  sdy.sharding_group %arg0 group_id = 0 : tensor<8xf32>
  sdy.sharding_group %arg1 group_id = 0 : tensor<8xf32>
  return %arg0 : tensor<8xf32>
}
"""
    code, out, err = opt("-sdy-basic-propagate", stdin=text)
    assert code == 0 and "module {" in out
    assert err.startswith(
        "<stdin>:2:1: warning: The initial operand shardings on the sharding groups of groupID: 0 do not match."
    )
    assert "<stdin>:2:1: note: see current operation: \nfunc.func @main(" in err  # as mlir-opt prints it
    code, _, err = opt("-sdy-basic-propagate", "--mlir-diagnostic-verbosity-level=errors", stdin=text)
    assert (code, err) == (0, "")
    expected = text.replace("func.func", "// expected-warning @below {{groupID: 0 do not match}}\nfunc.func")
    assert opt("-sdy-basic-propagate", "--verify-diagnostics", stdin=expected)[::2] == (0, "")
    code, _, err = opt("-sdy-basic-propagate", "--verify-diagnostics", stdin=text)
    assert code == 1 and err.startswith("<stdin>:2:1: error: unexpected warning: The initial operand shardings")


def test_printing_flags():
    code, out, _ = opt("--mlir-print-debuginfo")
    assert code == 0 and 'loc("<stdin>":3:8)' in out and '"-"' not in out
    code, out, _ = opt("-mlir-print-op-generic")
    assert code == 0 and '"func.func"() <{arg_attrs' in out
    constant = (
        "func.func @f() -> tensor<4xf32> {\n  %0 = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : "
        "tensor<4xf32>\n  return %0 : tensor<4xf32>\n}\n"
    )
    code, out, _ = opt("-mlir-print-local-scope", "-mlir-elide-elementsattrs-if-larger=2", stdin=constant)
    assert code == 0 and "dense_resource<__elided__> : tensor<4xf32>" in out


def test_allow_unregistered_dialect():
    text = 'func.func @f() {\n  "mydialect.op"() : () -> ()\n  return\n}\n'
    code, _, err = opt(stdin=text)
    assert code == 1 and "operation being parsed with an unregistered dialect" in err
    code, out, err = opt("--allow-unregistered-dialect", "-cse", stdin=text)
    assert (code, err) == (0, "") and '"mydialect.op"()' in out
    assert opt(stdin=text)[0] == 1  # the flag lasts for its run only


def test_bytecode_out_and_in(tmp_path):
    bc = tmp_path / "out.mlirbc"
    assert opt("--emit-bytecode", "-p", "export-gspmd", "-o", str(bc)) == (0, "", "")
    assert bc.read_bytes().startswith(b"ML\xefR")
    code, out, _ = opt(str(bc))
    assert code == 0 and "mhlo.sharding" in out
    code, _, err = opt("--emit-bytecode")
    assert (code, err) == (
        1,
        ("shardkit-opt: error: --emit-bytecode writes bytes; give -o FILE (this stdout takes text only)\n"),
    )


def test_dump_pass_pipeline_and_threading():
    code, _, err = opt("-cse", "-canonicalize", "-propagate", "--dump-pass-pipeline", "--mlir-disable-threading")
    assert code == 0
    assert err.startswith(
        "Pass Manager with 3 passes:\nbuiltin.module(cse,canonicalize{cse-between-iterations=false max-iterations=10 "
    )
    assert "},propagate)\n\n" in err


def test_list_passes_gives_summaries_and_options():
    code, out, _ = opt("--list-passes")
    assert code == 0
    assert "  propagate\n      Runs Shardy propagation" in out
    assert "      keep-open=false  run only the propagation step" in out
    assert "      strategy=user-priority  Shardy's propagation strategy (with keep-open=true)\n" in out
    assert "  canonicalize\n      Canonicalize operations.\n      cse-between-iterations=false" in out
    assert "  sdy-insert-explicit-reshards\n      Inserts explicit reshards" in out
    assert "enable-full-version=false" in out


def test_every_listed_mlir_pass_is_registered_in_jaxlib():
    unknown = [name for name in SUMMARIES if not is_mlir_pass(name)]
    assert unknown == []


def test_help_lists_every_pass_with_its_summary(capsys):
    with pytest.raises(SystemExit) as e:
        OptMain(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "--verify-diagnostics [{all,only-expected}]" in text
    for line in ["export-gspmd", "Converts Shardy shardings", "shard-leading-dim", "cse", "Eliminate common sub-"]:
        assert line in text


def test_input_that_is_not_text(tmp_path):
    src = tmp_path / "latin1.mlir"
    src.write_bytes(b"func.func @f() {\n  return\n}\n// caf\xe9\n")
    message = "is neither UTF-8 text nor MLIR bytecode: byte 0xe9 at line 4, column 7 is not valid UTF-8\n"
    assert opt(str(src)) == (1, "", f"shardkit-opt: error: input '{src}' {message}")
    assert opt(stdin=src.read_bytes()) == (1, "", f"shardkit-opt: error: input '<stdin>' {message}")


def test_output_paths_that_cannot_be_written(tmp_path):
    code, _, err = opt("-o", str(tmp_path))
    assert (code, err) == (1, f"shardkit-opt: error: could not write output file '{tmp_path}': Is a directory\n")
    code, _, err = opt("-o", str(tmp_path / "missing" / "out.mlir"))
    assert code == 1 and err.endswith("': No such file or directory\n")


def test_failed_run_writes_no_output_file(tmp_path):
    dst = tmp_path / "out.mlir"
    code, _, _ = opt("-p", "verify-shardings", "-o", str(dst), stdin=sized(6))
    assert code == 1 and not dst.exists()


def test_deep_nesting_is_an_error_not_a_stack_overflow():
    text = "module attributes {test.a = " + "[" * 100_000 + "]" * 100_000 + "} {}\n"
    code, _, err = opt(stdin=text)
    assert code == 1
    assert err.startswith(
        "<stdin>:1:1028: error: nesting deeper than 1000 levels; MLIR's recursive parser would overflow the stack\n"
    )
    assert opt(stdin='module attributes {test.a = "' + "[" * 5000 + '"} {}')[0] == 0  # in a string: no nesting


def test_gspmd_device_list_with_a_repeated_id_is_an_error_at_its_argument():
    text = (
        'func.func @main(%arg0: tensor<8x8xf32> {mhlo.sharding = "{devices=[4,2]7,6,7,4,3,2,1,0}"}) '
        "-> tensor<8x8xf32> {\n  return %arg0 : tensor<8x8xf32>\n}\n"
    )
    code, out, err = opt("-p", "import-gspmd", stdin=text)
    assert (code, out) == (1, "")
    assert err.startswith(
        "<stdin>:1:1: error: 'func.func' op arg 0 - cannot import mhlo.sharding {devices=[4,2]7,6,7,4,3,2,1,0}: "
        "cannot parse HLO sharding '{devices=[4,2]7,6,7,4,3,2,1,0}': at column 2: a tile assignment of shape [4, 2] "
        "must list each device 0..7 exactly once, got [7, 6, 7, 4, 3, 2, 1, 0]\n"
    )


def test_output_that_does_not_parse_back_is_an_error():
    # A pass that builds an attribute MLIR prints but refuses to parse back (jaxlib's MeshAttr.get takes any
    # device ids) must not have its result written: each op holding such an attribute gets the error.
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import sdy

    from shardkit.dialects import context
    from shardkit.tools.opt import _does_not_parse_back

    ctx = context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse('sdy.mesh @m = <["x"=4]>')
        (mesh_op,) = module.body.operations
        axes = [sdy.MeshAxisAttr.get("x", 4)]
        mesh_op.attributes["mesh"] = sdy.MeshAttr.get(axes, device_ids=[0, 1, 1, 3])
        (diag,) = _does_not_parse_back(str(module), module, ctx, "in.mlir")
    assert diag.severity == "error"
    assert diag.message == (
        "'sdy.mesh' op attribute 'mesh' prints as #sdy.mesh<[\"x\"=4], device_ids=[0, 1, 1, 3]>, which does not parse "
        "back: sorted device ids must be iota(product(axes)), got: 0, 1, 1, 3"
    )


def test_instrumentation_goes_to_stderr_also_after_a_failure():
    code, out, err = opt("-p", "propagate,export-gspmd", "--print-ir-after-all", "--timing")
    assert code == 0 and "IR Dump" not in out
    assert err.index("IR Dump After propagate") < err.index("IR Dump After export-gspmd") < err.index("timing report")
    code, _, err = opt(
        "-p", "cse,verify-shardings,export-gspmd", "--mlir-print-ir-after-failure", "--timing", stdin=sized(6)
    )
    assert code == 1
    assert "// -----// IR Dump After verify-shardings Failed //----- //\nmodule {" in err
    report = err[err.index("timing report") :]
    assert "cse" in report and "verify-shardings" in report and "export-gspmd" not in report


def test_propagation_without_main_is_a_located_diagnostic_not_a_crash():
    # jaxlib's propagation looks up @main and aborts without it: refused first, at the first function.
    text = "func.func @f(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n  return %arg0 : tensor<8xf32>\n}\n"
    code, out, err = opt("-propagate", stdin=text + text.replace("@f", "@g"))
    assert (code, out) == (1, "")
    assert err.startswith(
        "<stdin>:1:1: error: Shardy's propagation needs a public function @main, the program's entry, in a module "
        "of these functions: public @f, public @g; rename the entry to @main\n"
    )


def test_console_script_never_shows_a_traceback(tmp_path):
    bad, text = tmp_path / "bad.mlir", tmp_path / "t.mlir"
    bad.write_text("func.func @f(")
    text.write_text(GOOD)
    script = f"""
import sys
from shardkit.tools import opt
for argv in ([{str(bad)!r}, "-p", "cse"], [{str(text)!r}, "-o", {str(tmp_path)!r}], ["-nope"]):
    sys.argv = ["shardkit-opt", *argv]
    try:
        opt.main()
    except SystemExit as e:
        print("exit", e.code)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=False)
    assert run.stdout == "exit 1\nexit 1\nexit 1\n"
    assert run.stderr.startswith(
        f"{bad}:1:13: error: expected non-function type\nfunc.func @f(\n            ^\n"
        f"shardkit-opt: error: could not write output file '{tmp_path}': Is a directory\n"
        "shardkit-opt: error: unknown command line argument '-nope'"
    )
    assert "Traceback" not in run.stderr


def test_input_the_verifier_crashes_on_is_a_located_diagnostic_in_every_reader(tmp_path):
    """Shardy's verifier of sdy.propagation_edges crashes (SIGSEGV, jaxlib 0.10.2 and 0.12.0.1) on an edge naming a
    sharding or operand its op lacks, and parsing verifies: shardkit-opt, shardkit-report and sk.load parse such input
    in the isolation worker and report the crash at the attribute, exit code 1. Run in a child: a crash ends it."""
    from tests.child import run_python

    path = tmp_path / "edges.mlir"
    path.write_text(EDGES)
    where = f"{path}:3:39: error: MLIR crashed (SIG"
    opt_run = run_python("from shardkit.tools.opt import main; main()", str(path), "-p", "sdy-lift-inlined-meshes")
    assert (opt_run.returncode, opt_run.stdout) == (1, ""), opt_run.stderr
    assert opt_run.stderr.startswith(where) and "Shardy's verifier of sdy.propagation_edges crashes" in opt_run.stderr
    report = run_python("from shardkit.tools.report import main; main()", str(path), "--plan")
    assert report.returncode == 1 and report.stderr.startswith(where), report.stderr
    load = run_python(f"import shardkit as sk\ntry: sk.load({str(path)!r})\nexcept ValueError as e: print(e)")
    assert load.returncode == 0 and load.stdout.startswith(where), load.stdout + load.stderr


def test_a_pass_failing_on_the_module_is_reported_at_the_module(tmp_path):
    """At the module's text, as mlir-opt reports it (``file.mlir:1:1: error: ...``), naming the pass; a module MLIR
    makes around top-level ops has no line of its own: where the chunk starts."""
    one, two = tmp_path / "one.mlir", tmp_path / "two.mlir"
    one.write_text(GOOD)
    two.write_text(GOOD + "// -----\n" + GOOD)
    pipeline = "shard-leading-dim{axis=z}"
    message = "error: pass 'shard-leading-dim' failed: 'builtin.module' op has no mesh @mesh with axis \"z\""
    assert opt("-p", pipeline)[2].startswith(f"<stdin>:1:1: {message}")
    assert opt(str(one), "-p", pipeline)[2].startswith(f"{one}:1:1: {message}")
    split = opt(str(two), "-p", pipeline, "--split-input-file")[2]
    assert split.count(f"{two}:1:1: {message}") == 1 and split.count(f"{two}:7:1: {message}") == 1
    expected = f"// expected-error {{{{has no mesh @mesh with axis}}}}\n{GOOD}"
    assert opt("-p", pipeline, "--verify-diagnostics", stdin=expected) == (0, "", "")


def test_out_of_memory_while_parsing_is_an_error(monkeypatch):
    from shardkit.tools import opt as opt_module

    def no_memory(*args, **kwargs):
        raise MemoryError("std::bad_alloc")

    monkeypatch.setattr(opt_module.ir.Module, "parse", no_memory)
    assert opt() == (1, "", "<stdin>: error: out of memory while parsing this input\n")


def test_verify_each_and_mlir_spellings_of_instrumentation():
    code, _, err = opt("-cse", "--mlir-timing", "--verify-each=false", "--mlir-print-ir-before-all")
    assert code == 0
    assert "// -----// IR Dump Before cse //----- //" in err and "cse" in err[err.index("timing report") :]
    assert "(verify)" not in err
    assert "(verify)" in opt("-cse", "-mlir-timing")[2]
