"""Fuzzing shardkit-opt and the pipeline parser: mutated lit inputs, random pipelines and flags.

Every case runs shardkit-opt in-process (``OptMain``) and must end in one of two ways: exit 0 with output
that parses back, or exit 1 with a one-line ``shardkit-opt: error: ...`` or located diagnostics. An exception
escaping ``OptMain.run`` (a traceback for the user) or anything else fails the case; hypothesis then shrinks
it. A signal kills this process, so each case is written to ``--log`` before it runs: the last line of the
log is the reproducer. ``tests/fuzz/test_fuzz.py`` runs this script in a child with a time budget.

Run longer by hand: ``.venv/bin/python tests/fuzz/opt_fuzz.py --seconds 600 --log /tmp/fuzz.log``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import TextIO

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

from hypothesis import HealthCheck, given, seed, settings, strategies as st
from jaxlib.mlir import ir

from shardkit import passes
from shardkit.dialects import context
from shardkit.passes import registry
from shardkit.tools.opt import OptMain

ROOT = Path(__file__).resolve().parents[2]
_SPLIT = re.compile(r"^// -----.*$", re.MULTILINE)
# A diagnostic headline as shardkit-opt prints it (mlir-opt's form), or the tool's one-line error.
_HEADLINE = re.compile(r"^(?:[^\n]*?: )?(?:error|warning|remark|note): ")
_TOOL_ERROR = "shardkit-opt: error: "


def _inputs() -> list[str]:
    chunks = []
    for path in sorted((ROOT / "lit_tests").rglob("*.mlir")):
        chunks += [c for c in _SPLIT.split(path.read_text()) if c.strip()]
    return chunks


INPUTS = _inputs()
# every built-in pass (a new one is fuzzed without an edit here), and option variants
SHARDKIT_PASSES = [*registry.pass_names(), "propagate{keep-open=true}", "shard-leading-dim{axis=x}"]
MLIR_PASSES = [
    "cse",
    "canonicalize",
    "symbol-dce",
    "inline",
    "sccp",
    "sdy-close-shardings",
    "sdy-insert-explicit-reshards",
    "sdy-insert-explicit-reshards{enable-full-version=true}",
    "sdy-convert-global-to-local",
    "sdy-sharding-constraint-to-reshard",
    "sdy-reshard-to-collectives",
    "sdy-basic-propagate",
    "sdy-aggressive-propagate",
    "sdy-propagation-pipeline",
    "sdy-import-pipeline",
    "sdy-export-pipeline",
    "sdy-inline-meshes",
    "sdy-lift-inlined-meshes",
    "sdy-add-data-flow-edges",
    "sdy-sink-data-flow-edges",
    "sdy-drop-sharding-rules",
    "stablehlo-legalize-to-vhlo",
    "sdy-populate-op-sharding-rules",
    "sdy-remove-sharding-groups",
    "sdy-pad-for-divisibility",
]
# shardkit passes that hand malformed HLO sharding strings to jaxlib constructors, which abort (issue 12's
# model/validation part, fixed there): the fuzz runs them isolated, where such an abort is a diagnostic.
MODEL_LAYER_PASSES = ("verify-shardings", "import-gspmd")
ANCHORS = ["builtin.module", "func.func", "sdy.mesh", "stablehlo.while", "any"]
JUNK = [
    "",
    " ",
    ",",
    "{",
    "}",
    "(",
    ")",
    "=",
    "x",
    "-",
    '"',
    "{a=1}",
    "{max-iterations=-3}",
    "{bogus}",
    "\x00",
    "{enable-full-version=maybe}",
    "{keep-open=2}",
    "é",
]
FLAGS = [
    "--split-input-file",
    "--verify-diagnostics",
    "--verify-diagnostics=only-expected",
    "--print-ir-after-all",
    "--print-ir-before-all",
    "--mlir-print-ir-after-failure",
    "--timing",
    "--mlir-print-debuginfo",
    "--mlir-print-op-generic",
    "--allow-unregistered-dialect",
    "--dump-pass-pipeline",
    "--mlir-print-local-scope",
    "--mlir-elide-elementsattrs-if-larger=2",
    "--mlir-disable-threading",
    "--verify-each=false",
    "--mlir-diagnostic-verbosity-level=errors",
]


@st.composite
def pipelines(draw: st.DrawFn) -> str:
    """Pipeline text: passes of both kinds, anchors, options, and some junk."""

    def item(depth: int) -> str:
        kind = draw(st.integers(0, 9))
        if kind < 4:
            return draw(st.sampled_from(SHARDKIT_PASSES + MLIR_PASSES))
        if kind < 6 and depth < 3:
            inner = ",".join(item(depth + 1) for _ in range(draw(st.integers(0, 3))))
            return f"{draw(st.sampled_from(ANCHORS))}({inner})"
        if kind < 8:
            return draw(st.sampled_from(SHARDKIT_PASSES + MLIR_PASSES)) + draw(st.sampled_from(JUNK))
        return draw(st.text(alphabet="abcdefsy-_.{}(),= 0123", max_size=12))

    text = ",".join(item(0) for _ in range(draw(st.integers(0, 4))))
    return f"builtin.module({text})" if draw(st.booleans()) else text


def _mutate(text: str, draw: st.DrawFn) -> str | bytes:
    tokens = re.findall(r"\s+|\w+|.", text)
    for _ in range(draw(st.integers(0, 3))):
        if not tokens:
            break
        i = draw(st.integers(0, len(tokens) - 1))
        op = draw(st.sampled_from(["delete", "duplicate", "swap", "number", "insert", "truncate", "nest"]))
        if op == "delete":
            del tokens[i]
        elif op == "duplicate":
            tokens.insert(i, tokens[i])
        elif op == "swap":
            j = draw(st.integers(0, len(tokens) - 1))
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif op == "number":
            tokens[i] = str(draw(st.sampled_from([0, -1, 1, 3, 7, 2**31, 2**63, 10**30])))
        elif op == "insert":
            tokens.insert(
                i,
                draw(
                    st.sampled_from(
                        [
                            "[",
                            "]",
                            "{",
                            "}",
                            "(",
                            ")",
                            "<",
                            ">",
                            '"',
                            "%0",
                            "@main",
                            ",",
                            "loc(unknown)",
                            "#sdy.sharding<@mesh, [{}]>",
                            "\n// -----\n",
                            "// expected-error {{x}}",
                            "// expected-error @unknown {{",
                        ]
                    )
                ),
            )
        elif op == "truncate":
            tokens = tokens[:i]
        else:
            depth = draw(st.sampled_from([10, 900, 1200, 20000]))
            tokens.insert(i, "[" * depth + "]" * depth)
    out = "".join(tokens)
    if draw(st.integers(0, 19)) == 0:
        data = bytearray(out.encode())
        if data:
            data[draw(st.integers(0, len(data) - 1))] = draw(st.sampled_from([0xFF, 0xC3, 0x80, 0x00]))
        return bytes(data)
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[str], str | bytes]:
    text = _mutate(draw(st.sampled_from(INPUTS)), draw)
    argv = draw(st.lists(st.sampled_from(FLAGS), max_size=3, unique=True))
    if draw(st.booleans()):
        argv += ["-p", draw(pipelines())]
    else:
        argv += [
            "-" + p.replace("{", "=").rstrip("}")
            for p in draw(st.lists(st.sampled_from(MLIR_PASSES + SHARDKIT_PASSES), max_size=3))
        ]
    if any(name in " ".join(argv) for name in MODEL_LAYER_PASSES):
        argv.append("--isolate-passes=all")
    if draw(st.integers(0, 9)) == 0:  # (never --isolate-passes=none: that opts out of the crash protection)
        argv.append(
            draw(
                st.sampled_from(
                    ["--emit-bytecode", "--isolate-passes=all", "--list-passes", "-frobnicate", "-o", "--pass-pipeline"]
                )
            )
        )
    return argv, text


def check_outcome(argv: list[str], code: int, out: str, err: str, bytecode: bytes | None) -> None:
    """Exit 0 with output that parses back, or exit 1 with a one-line error or located diagnostics."""
    assert code in (0, 1), code
    assert "Traceback (most recent call last)" not in err
    if code == 0:
        if "--list-passes" in argv:
            return
        ctx = context()
        allowed = ctx.allow_unregistered_dialects
        ctx.allow_unregistered_dialects = "--allow-unregistered-dialect" in argv
        try:
            for chunk in [bytecode] if bytecode else out.split("// -----\n"):
                if chunk and (isinstance(chunk, bytes) or chunk.strip()):
                    ir.Module.parse(chunk.split(b"// -----\n")[0] if isinstance(chunk, bytes) else chunk, ctx)
        finally:
            ctx.allow_unregistered_dialects = allowed
        return
    lines = err.splitlines()
    assert lines, "exit 1 without a word"
    if lines[0].startswith(_TOOL_ERROR):
        assert len(lines) == 1 or not any(line.startswith(_TOOL_ERROR) for line in lines[1:]), err
        return
    assert any(_HEADLINE.match(line) for line in lines), err


def run_case(argv: list[str], text: str | bytes, tmp: str) -> None:
    bytecode_path = None
    if "--emit-bytecode" in argv:
        bytecode_path = os.path.join(tmp, "out.mlirbc")
        argv = [*argv, "-o", bytecode_path] if argv[-1] != "-o" else argv
    out, err = io.StringIO(), io.StringIO()
    stdin = io.BytesIO(text) if isinstance(text, bytes) else io.StringIO(text)
    main = OptMain(argv, stdin=stdin, stdout=out, stderr=err)
    code = main.run()
    data = None
    if bytecode_path and code == 0 and os.path.exists(bytecode_path):
        data = Path(bytecode_path).read_bytes()
        os.remove(bytecode_path)
    check_outcome(argv, code, out.getvalue(), err.getvalue(), data)


def check_pipeline_text(text: str) -> None:
    """The parser and the PassManager: a normalised pipeline prints back to itself; errors are ValueErrors."""
    try:
        specs = passes.parse_pipeline(text)
    except passes.PipelineSyntaxError:
        return
    normal = passes.print_pipeline(specs)
    assert passes.print_pipeline(passes.parse_pipeline(normal)) == normal
    try:
        pm = passes.PassManager(normal)
    except ValueError:
        return
    assert passes.PassManager(str(pm)).passes == pm.passes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("SHARDKIT_FUZZ_SECONDS", "40")))
    parser.add_argument("--log", default=os.devnull, help="each case is appended here before it runs")
    parser.add_argument("--seed", type=int, default=0, help="the first batch's seed")
    args = parser.parse_args()
    deadline = time.monotonic() + args.seconds
    counts = {"opt": 0, "pipeline": 0}
    with open(args.log, "a", buffering=1, encoding="utf-8") as log, tempfile.TemporaryDirectory() as tmp:
        _fuzz(log, tmp, deadline, args.seed, counts)
    print(json.dumps(counts))
    return 0


def _fuzz(log: TextIO, tmp: str, deadline: float, first_seed: int, counts: dict[str, int]) -> None:
    """Runs cases until ``deadline``, logging each first; a failing case is shrunk and raised by hypothesis."""

    @settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.one_of(cases().map(lambda c: ("opt", c)), pipelines().map(lambda p: ("pipeline", p))))
    def fuzz(case):
        if time.monotonic() > deadline:
            return
        kind, value = case
        counts[kind] += 1
        log.write(
            json.dumps(
                {
                    "kind": kind,
                    "case": value
                    if kind == "pipeline"
                    else [value[0], value[1] if isinstance(value[1], str) else value[1].decode("latin-1")],
                }
            )
            + "\n"
        )
        if kind == "opt":
            run_case(*value, tmp)
        else:
            check_pipeline_text(value)

    # Batches of 50 with successive seeds until the time is up: a fixed budget, and any failure reproducible
    # from its seed (printed by hypothesis with the shrunk case).
    batch = first_seed
    while time.monotonic() < deadline:
        seed(batch)(fuzz)()
        batch += 1


if __name__ == "__main__":
    sys.exit(main())
