"""Bad input to shardkit-opt is a located diagnostic or a one-line error, never a crash (issue 12, the CLI's half).

One case per ``opt-*``/``cli-*`` entry of the November 2026 fuzz catalogue, rebuilt from what the catalogue says
of it (the lit file, the mutation, the pipeline, where it crashed): the fuzzer's exact bytes were not kept, so
each case is the smallest input that reaches the same crash site. All cases run in one child interpreter
(``OptMain`` in-process there, as tests/test_opt.py drives it), so a case that still kills the process fails its
test, named, instead of the suite; a case that hangs runs into the child's timeout.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

MAIN = "func.func @main(%arg0: tensor<8xf32>) -> tensor<8xf32> {\n  return %arg0 : tensor<8xf32>\n}\n"


def gspmd(arg: str, rank: int = 2, op: str = "") -> str:
    """A function whose argument carries ``arg`` as its attributes (and ``op`` on a custom_call @Sharding)."""
    t = "tensor<" + "8x" * rank + "f32>"
    call = f"  %0 = stablehlo.custom_call @Sharding(%arg0) {{{op}}} : ({t}) -> {t}\n" if op else ""
    result = "%0" if op else "%arg0"
    return f"func.func @main(%arg0: {t} {{{arg}}}) -> {t} {{\n{call}  return {result} : {t}\n}}\n"


def nested(open_: str, close: str, depth: int, inner: str = "") -> str:
    return open_ * depth + inner + close * depth


SHARDED = '{sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}'
NO_MAIN = (
    'module attributes {mhlo.num_partitions = 8 : i32} {\n  sdy.mesh @mesh = <["x"=8]>\n'
    f"  func.func @same_line(%arg0: tensor<5xf32> {SHARDED}) -> tensor<5xf32> {{\n"
    "    return %arg0 : tensor<5xf32>\n  }\n"
    f"  func.func @above(%arg0: tensor<6xf32> {SHARDED}) -> tensor<6xf32> {{\n"
    "    return %arg0 : tensor<6xf32>\n  }\n}\n"
)
DEBUG_INFO = (
    '#loc1 = loc("model.py":3:4)\n#loc2 = loc("nowhere/missing.py":10:2)\nmodule {\n  sdy.mesh @mesh = <["x"=8]>\n'
    f"  func.func @main(%arg0: tensor<6xf32> {SHARDED} loc(#loc1)) -> tensor<6xf32> {{\n"
    "    return %arg0 : tensor<6xf32> loc(#loc2)\n  } loc(#loc2)\n} loc(#loc1)\n"
)
GENERIC_FUNC = (
    '"func.func"() <{{{props}}}> ({{\n^bb0(%arg0: tensor<8xf32>):\n'
    '  "func.return"(%arg0) : (tensor<8xf32>) -> ()\n}}) : () -> ()\n'
)
FUNC_TYPE = "function_type = (tensor<8xf32>) -> tensor<8xf32>"
DEEP_REGIONS = "func.func @main() {\n" + nested('"test.op"() ({\n', "}) : () -> ()\n", 499) + ("  return\n}\n")

# name (with every catalogue id it covers) -> (argv, input, expected exit code, regex over stderr). In argv,
# "{in}" is the input written to a file (the input is stdin otherwise), "{dir}" a directory.
CASES: dict[str, tuple[list[str], str | bytes, int, str]] = {
    # Shardy's propagation aborts without @main (verify-diagnostics.mlir chunk 3): refused first, located.
    "opt-crash-00 cli-crash-128": (
        ["-p", "sdy-user-priority-propagate ,verify-shardings"],
        NO_MAIN,
        1,
        r"<stdin>:3:3: error: Shardy's propagation needs a public function @main, the program's entry, in a module "
        r"of these functions: public @same_line, public @above; rename the entry to @main",
    ),
    # deep_nest: regions nested past what MLIR's recursive parser survives.
    "opt-crash-01 cli-crash-131": (
        ["{in}", "-p", "builtin.module()"],
        nested("module {\n", "}\n", 3000),
        1,
        r".*\.mlir:1001:8: error: nesting deeper than 1000 levels",
    ),
    # A module pass anchored on func.func made MLIR's pipeline builder abort.
    "opt-crash-02 cli-crash-132": (
        ["{in}", "-p", "func.func(sdy-propagation-pipeline) ,strip-shardings ,builtin.module(export-gspmd)"],
        MAIN,
        1,
        r"shardkit-opt: error: Pass pipeline 'sdy-propagation-pipeline' cannot run nested on 'func.func'",
    ),
    # Malformed mhlo.sharding strings reached XLA's parser: verify-shardings, import-gspmd (args, @Sharding).
    "opt-crash-03 cli-crash-127": (
        ["-p", "sdy-update-non-divisible-input-output-shardings ,sdy-lift-inlined-meshes ,verify-shardings"],
        gspmd('mhlo.sharding = "{devices=[4,2]<=[2]}"'),
        1,
        r"<stdin>:1:1: error: 'func.func' op arg 0 - invalid mhlo.sharding '\{devices=\[4,2\]<=\[2\]\}': at column 2: "
        r"the iota reshape \[2\] must be positive sizes whose product is 8",
    ),
    "opt-crash-04 cli-crash-130": (
        ["{in}", "-p", "builtin.module(import-gspmd)"],
        gspmd('mhlo.sharding = "{devices=[4,2]<=[2]}"'),
        1,
        r".*\.mlir:1:1: error: 'func.func' op arg 0 - cannot import mhlo.sharding \{devices=\[4,2\]<=\[2\]\}: "
        r"cannot parse",
    ),
    "opt-crash-05 cli-crash-135": (
        ["{in}", "-p", "import-gspmd"],
        gspmd('mhlo.sharding = "{bogus}"', rank=1),
        1,
        r".*\.mlir:1:1: error: 'func.func' op arg 0 - cannot import mhlo.sharding \{bogus\}: .*expected replicated",
    ),
    "opt-crash-15 cli-crash-137": (
        ["-p", "import-gspmd"],
        gspmd("", op='mhlo.sharding = "{devices=[1,2,4]<=[2] last_tile_dim_replicate}"'),
        1,
        r"<stdin>:2:8: error: 'stablehlo.custom_call' op result 0 - cannot import mhlo.sharding .*iota reshape \[2\]",
    ),
    # numbers: a zero tile dimension (SIGFPE), huge ones (std::bad_alloc), a huge maximal device.
    "opt-crash-07 cli-crash-136": (
        ["{in}", "-p", "import-gspmd, sdy-constant-or-scalar-splitter, vhlo-legalize-to-stablehlo"],
        gspmd('mhlo.sharding = "{devices=[4,0,2]<=[8] last_tile_dim_replicate}"'),
        1,
        r".*\.mlir:1:1: error: .*tile assignment dimensions must be positive, got \[4, 0, 2\]",
    ),
    "opt-unclean-22 opt-unclean-25 opt-unclean-27 cli-unclean-140": (
        ["-p", "import-gspmd"],
        gspmd('mhlo.sharding = "{devices=[4,1,200000000]<=[800000000] last_tile_dim_replicate}"'),
        1,
        r"<stdin>:1:1: error: .*spans 800000000 devices; at most 1048576",
    ),
    "opt-unclean-22 (a mesh too big to enumerate)": (
        ["-p", "verify-shardings"],
        'sdy.mesh @mesh = <["x"=999999999999]>\n',
        1,
        r"<stdin>:1:1: error: 'sdy.mesh' op sdy mesh .* has 999999999999 positions; at most 1048576 are supported",
    ),
    "opt-crash-16": (
        ["-p", "verify-shardings ,strip-shardings"],
        "module attributes {mhlo.num_partitions = 1 : i32} {\n"
        + gspmd('mhlo.sharding = "{maximal device=99999999999}"', rank=1)
        + "}\n",
        1,
        r"<stdin>:2:1: error: 'func.func' op arg 0 - invalid mhlo.sharding .*maximal device 99999999999 is not in",
    ),
    # random_attr / op_attr / swap_attrs: attributes of the wrong kind where a sharding or a count belongs.
    "opt-crash-06 opt-crash-09 cli-crash-134 (mhlo.sharding that is not a string)": (
        ["-p", "import-gspmd"],
        gspmd("", op="mhlo.sharding = 3"),
        1,
        r"<stdin>:2:8: error: 'stablehlo.custom_call' op result 0 - cannot import mhlo.sharding 3 : i64: .*"
        r"an HLO sharding is a string attribute",
    ),
    "opt-crash-06 (verify-shardings, an array for a string)": (
        ["-p", "verify-shardings"],
        gspmd('mhlo.sharding = ["{replicated}"]'),
        1,
        r"<stdin>:1:1: error: 'func.func' op arg 0 - invalid mhlo.sharding '\[\"\{replicated\}\"\]': "
        r"an HLO sharding is a string attribute",
    ),
    "opt-crash-06 (mhlo.num_partitions that is not an integer)": (
        ["-p", "verify-shardings"],
        'module attributes {mhlo.num_partitions = "8"} {\n' + gspmd('mhlo.sharding = "{replicated}"') + "}\n",
        1,
        r"<stdin>:1:1: error: pass 'verify-shardings' failed: "
        r'mhlo.num_partitions must be an integer attribute, got "8"',
    ),
    "opt-crash-09 (unspecified_dims beyond the rank)": (
        ["-p", "import-gspmd"],
        gspmd("", op='backend_config = "unspecified_dims=[7]", mhlo.sharding = "{replicated}"'),
        0,
        r"^$",
    ),
    "opt-crash-08 (func.func properties swapped)": (
        ["-p", "builtin.module( )"],
        GENERIC_FUNC.format(props='function_type = "f", sym_name = (tensor<8xf32>) -> tensor<8xf32>'),
        1,
        r"<stdin>:1:1: error: invalid properties .* for op func.func: Invalid attribute `function_type`",
    ),
    "opt-crash-08 (arg_attrs of the wrong kind)": (
        ["-p", "builtin.module( )"],
        GENERIC_FUNC.format(props=f'{FUNC_TYPE}, sym_name = "f", arg_attrs = [1, 2]'),
        1,
        r"<stdin>:1:1: error: 'func.func' op attribute 'arg_attrs' failed to satisfy constraint",
    ),
    "opt-crash-12 (a per-value sharding on an argument)": (
        ["-p", "propagate"],
        'sdy.mesh @mesh = <["x"=8]>\n' + gspmd('sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{"x"}, {}]>]>'),
        1,
        r"<stdin>:2:1: error: 'func.func' op arg 0 - should have a sharding attribute of type TensorShardingAttr",
    ),
    # Locations: fused/callsite/named ones, #loc aliases bound to other attributes, files that cannot be shown.
    "opt-crash-10 cli-crash-126 (an error at a fused location)": (
        ["-p", "verify-shardings ,dedup-meshes"],
        DEBUG_INFO.replace(
            'loc("model.py":3:4)', 'loc(fused<"x">["a.py":1:2, callsite("f"("b.py":3:4) at "c.py":5:6)])'
        ).replace('"nowhere/missing.py":10:2', '"n"("a.py":7:1)'),
        1,
        r"a.py:7:1: error: 'func.func' op arg 0 - dim 0 of size 6 is not divisible by 8",
    ),
    "opt-crash-11 cli-crash-129 (a #loc alias bound to a sharding)": (
        ["-p", "verify-shardings"],
        DEBUG_INFO.replace('#loc1 = loc("model.py":3:4)', '#loc1 = #sdy.sharding<@mesh, [{"x"}]>'),
        1,
        r"<stdin>:5:\d+: error: expected location, but found '#sdy.sharding<@mesh, \[\{\"x\"\}\]>'",
    ),
    "opt-crash-11 cli-unclean-142 opt-unclean-20 (an error located in a file that cannot be read)": (
        ["{in}", "-p", "sdy-inline-meshes ,strip-shardings ,strip-shardings"],
        DEBUG_INFO.replace('[{"x"}]', '[{"q"}]'),
        1,
        r'nowhere/missing.py:10:2: error: \'func.func\' op arg 0 - unknown axis name: "q"\n'
        r"nowhere/missing.py:10:2: note: see current operation",
    ),
    "opt-crash-11 (an error located in /dev/zero is not read from it)": (
        ["-p", "verify-shardings"],
        DEBUG_INFO.replace("nowhere/missing.py", "/dev/zero"),
        1,
        r"^/dev/zero:10:2: error: 'func.func' op arg 0 - dim 0 of size 6 is not divisible by 8, .*\}\n$",
    ),
    "opt-unclean-24 (a verifier error at loc(unknown))": (
        ["-p", "verify-shardings"],
        'sdy.mesh @mesh = <["x"=8]>\n'
        + gspmd('sdy.sharding = #sdy.sharding<@mesh, [{"z"}]>', rank=1)
        + " loc(unknown)",
        1,
        r'^<stdin>: error: \'func.func\' op arg 0 - unknown axis name: "z"\n',
    ),
    # A crash in a pass over (shallow enough to parse) deep nesting; the same depth through cse (opt-hang-28).
    "opt-crash-13 cli-crash-133": (
        ["{in}", "-p", "sdy-reshard-to-collectives", "--allow-unregistered-dialect", "--print-ir-after-all"],
        DEEP_REGIONS,
        0,
        r"// -----// IR Dump After sdy-reshard-to-collectives",
    ),
    "opt-hang-28": (
        ["{in}", "-p", "cse"],
        "module attributes {test.a = " + nested("[", "]", 999, ",,") + "} {}\n",
        1,
        r".*\.mlir:1:1028: error: expected attribute value",
    ),
    "opt-hang-28 (regions)": (["{in}", "-p", "cse", "--allow-unregistered-dialect"], DEEP_REGIONS, 0, r"^$"),
    # A mesh in a nested module: jaxlib's sdy-inline-meshes dereferences a null symbol (SIGSEGV; from jaxlib 0.11 a
    # failed check, SIGABRT).
    "opt-crash-14": (
        ["{in}", "-p", "builtin.module(sdy-inline-meshes, dedup-meshes)"],
        "module {\n" + NO_MAIN + "}\n",
        1,
        r".*\.mlir:1:1: error: pass 'sdy-inline-meshes' crashed \(SIG(SEGV|ABRT)\) on 'builtin.module'",
    ),
    # The pipeline text and the files.
    "opt-crash-17": (["-p", "pass with space"], MAIN, 1, r"shardkit-opt: error: Invalid pass pipeline at column 6"),
    "opt-unclean-21": (
        ["-p", "unicodedata.normalize"],
        MAIN,
        1,
        r"shardkit-opt: error: Unknown pass 'unicodedata.normalize': not a shardkit pass nor a registered MLIR pass",
    ),
    "opt-unclean-21 (as a flag)": (["-normalize"], MAIN, 1, r"shardkit-opt: error: unknown command line argument"),
    "opt-unclean-18 cli-unclean-138": (
        ["{in}", "-p", "cse"],
        MAIN.encode() + b"// caf\xc3(\n",
        1,
        r"shardkit-opt: error: input '.*\.mlir' is neither UTF-8 text nor MLIR bytecode: byte 0xc3 at line 4",
    ),
    "opt-unclean-18 cli-unclean-141 (stdin)": (
        ["-", "-p", "cse"],
        MAIN.encode() + b"\xff",
        1,
        r"shardkit-opt: error: input '<stdin>' is neither UTF-8 text nor MLIR bytecode: byte 0xff",
    ),
    "opt-unclean-19": (
        ["{dir}", "-p", "cse"],
        "",
        1,
        r"shardkit-opt: error: could not open input file .*: Is a directory",
    ),
    "opt-unclean-19 cli-unclean-139": (
        ["-o", "{dir}"],
        MAIN,
        1,
        r"shardkit-opt: error: could not write output file .*: Is a directory",
    ),
    "opt-unclean-20": (
        ["{dir}/missing.mlir"],
        "",
        1,
        r"shardkit-opt: error: could not open input file .*missing.mlir': No such file or directory",
    ),
    "opt-unclean-20 (output into a missing directory)": (
        ["-o", "{dir}/missing/out.mlir"],
        MAIN,
        1,
        r"shardkit-opt: error: could not write output file .*: No such file or directory",
    ),
    # Zero sizes: tiles, mesh axes, sub-axes, the partition count (ZeroDivisionError).
    "opt-unclean-26": (
        ["-p", "verify-shardings"],
        gspmd('mhlo.sharding = "{devices=[0]<=[0]}"', rank=1),
        1,
        r"<stdin>:1:1: error: .*tile assignment dimensions must be positive, got \[0\]",
    ),
    "opt-unclean-26 (an axis of size 0)": (
        ["-p", "verify-shardings"],
        'sdy.mesh @mesh = <["x"=0]>\n',
        1,
        r"<stdin>:1:20: error: custom op 'sdy.mesh' axis size must be at least 1, got: 0",
    ),
    "opt-unclean-26 (a sub-axis of pre-size 0)": (
        ["-p", "export-gspmd"],
        'sdy.mesh @mesh = <["x"=8]>\n' + gspmd('sdy.sharding = #sdy.sharding<@mesh, [{"x":(0)2}]>', rank=1),
        1,
        r"<stdin>:2:1: error: 'func.func' op arg 0 - sub-axis pre-size must be at least 1",
    ),
    "opt-unclean-26 (mhlo.num_partitions = 0)": (
        ["-p", "verify-shardings"],
        'module attributes {mhlo.num_partitions = 0 : i32} {\n  sdy.mesh @mesh = <["x"=8]>\n}\n',
        1,
        r"<stdin>:2:3: error: 'sdy.mesh' op mesh <\[\"x\"=8\]> has 8 devices, but mhlo.num_partitions is 0",
    ),
    # import-gspmd with a repeated device id made a mesh whose printed form does not parse back.
    "opt-wrong-23": (
        ["-p", "import-gspmd", "-o", "{dir}/out.mlir"],
        gspmd('mhlo.sharding = "{devices=[4,2]7,6,7,4,3,2,1,0}"'),
        1,
        r"<stdin>:1:1: error: .*must list each device 0..7 exactly once",
    ),
}

_CHILD = """
import io, json, os, sys
from shardkit.tools.opt import OptMain
cases, tmp = json.loads(sys.stdin.read())
for i, (name, (argv, text, binary)) in enumerate(cases.items()):
    print(json.dumps({"start": name}), flush=True)
    data = text.encode("latin-1") if binary else text.encode()
    path = os.path.join(tmp, f"case{i}.mlir")
    with open(path, "wb") as f:
        f.write(data)
    argv = [a.replace("{in}", path).replace("{dir}", tmp) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    code = OptMain(argv, stdin=io.BytesIO(data), stdout=out, stderr=err).run()
    print(json.dumps({"name": name, "code": code, "err": err.getvalue()}), flush=True)
"""


def test_every_catalogued_input_is_a_diagnostic_or_an_error(tmp_path):
    cases = {
        name: (argv, text.decode("latin-1") if isinstance(text, bytes) else text, isinstance(text, bytes))
        for name, (argv, text, _, _) in CASES.items()
    }
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=8", JAX_PLATFORMS="cpu")
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=json.dumps([cases, str(tmp_path)]),
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    records = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0:
        started = [r["start"] for r in records if "start" in r]
        pytest.fail(f"case {started[-1] if started else '?'} ended the process ({proc.returncode}):\n{proc.stderr}")
    results = {r["name"]: (r["code"], r["err"]) for r in records if "name" in r}
    wrong = {}
    for name, (_, _, code, pattern) in CASES.items():
        got_code, err = results[name]
        if got_code != code or not re.search(pattern, err, re.S) or "Traceback" in err:
            wrong[name] = {"code": got_code, "stderr": err[:800]}
    assert not wrong, json.dumps(wrong, indent=1)
    assert not (tmp_path / "out.mlir").exists()  # opt-wrong-23: a failed run writes no output file
