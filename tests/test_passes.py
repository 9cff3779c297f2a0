"""Pass infrastructure: pipeline text, options, the registry and plugins, the PassManager and its errors."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import io
import re
from typing import Literal

import pytest
from hypothesis import given, settings, strategies as st
from jaxlib.mlir import ir

from shardkit import passes
from shardkit.dialects import context, irx
from shardkit.passes import IRPrinting, Pass, PassError, PassManager

MODULE = """
module attributes {mhlo.num_partitions = 8 : i32} {
  sdy.mesh @mesh = <["x"=4, "y"=2]>
  func.func @main(%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}) -> tensor<8x8xf32> {
    %0 = stablehlo.negate %arg0 : tensor<8x8xf32>
    return %0 : tensor<8x8xf32>
  }
}
"""


def parse(text: str = MODULE) -> ir.Module:
    return ir.Module.parse(text, context())


@pytest.fixture
def registered():
    """Registers test passes and removes them afterwards."""
    names = []

    def register(cls):
        passes.register_pass(cls)
        names.append(cls.name)
        return cls

    yield register
    for name in names:
        passes.unregister_pass(name)


@dataclasses.dataclass(frozen=True)
class Tagged(Pass):
    """Puts a unit attribute on the module."""

    name = "test-tag"
    key: str = "test.tag"
    dims: tuple[int, ...] = ()
    flag: bool = False
    ratio: float = 0.5

    def apply(self, module: ir.Module) -> None:
        with module.context:
            irx.set_attr(module.operation, self.key, ir.UnitAttr.get())


# -- pipeline text ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, normal",
    [
        ("export-gspmd,canonicalize", "export-gspmd,canonicalize"),
        ("builtin.module(propagate{keep-open=true})", "propagate{keep-open=true}"),
        ("propagate{keep-open}", "propagate{keep-open=true}"),
        (" a , b{ x=1   y=2,3 } ", "a,b{x=1 y=2,3}"),
        ("a,func.func(cse,canonicalize{max-iterations=3}),b", "a,func.func(cse,canonicalize{max-iterations=3}),b"),
        ('a{s="two words" n={p,q}}', 'a{s="two words" n={p,q}}'),
        ("", ""),
    ],
)
def test_pipeline_normal_form(text, normal):
    assert passes.print_pipeline(passes.parse_pipeline(text)) == normal


_names = st.from_regex(r"[a-z][a-z0-9-]{0,8}", fullmatch=True)
_values = st.from_regex(r"[a-z0-9][a-z0-9,]{0,6}", fullmatch=True)
_items = st.builds(passes.PassSpec, _names, st.lists(st.tuples(_names, _values), max_size=3).map(tuple))


@settings(max_examples=60, deadline=None)
@given(st.lists(_items, min_size=1, max_size=4))
def test_pipeline_print_parse_round_trip(specs):
    text = passes.print_pipeline(specs)
    assert passes.parse_pipeline(text) == tuple(specs)
    assert passes.parse_pipeline(f"builtin.module({text})") == tuple(specs)


@pytest.mark.parametrize(
    "text, message",
    [
        ("a,", "column 3: expected a pass name, found the end"),
        ("a{x=1", "column 6: expected '}', found the end"),
        ("builtin.module(a", "column 17: expected ')', found the end"),
        ("a b", "column 3: unexpected 'b'"),
        ('a{s="open}', "unterminated string"),
    ],
)
def test_pipeline_syntax_errors(text, message):
    with pytest.raises(passes.PipelineSyntaxError, match=re.escape(message)) as e:
        passes.parse_pipeline(text)
    assert isinstance(e.value, ValueError)
    assert text in str(e.value) and "^" in str(e.value)


# -- options ---------------------------------------------------------------------------------------------


def test_options_are_typed_fields_and_print_back():
    p = Tagged.from_options({"key": "a.b", "dims": "0,2", "flag": "true", "ratio": "0.25"})
    assert p == Tagged("a.b", (0, 2), True, 0.25)
    assert p.spec() == "test-tag{key=a.b dims=0,2 flag=true ratio=0.25}"
    assert Tagged().spec() == "test-tag"
    assert Tagged.option_types() == {"key": str, "dims": tuple[int, ...], "flag": bool, "ratio": float}
    assert Tagged.summary() == "Puts a unit attribute on the module."


@dataclasses.dataclass(frozen=True)
class Chooser(Pass):
    """Takes a choice and optional settings."""

    name = "test-choose"
    mode: Literal["fast", "exact"] = dataclasses.field(default="exact", metadata={"help": "how to choose"})
    limit: int | None = None
    levels: tuple[Literal[1, 2, 4], ...] | None = None

    def apply(self, module: ir.Module) -> None:
        pass


def test_literal_and_optional_options():
    assert Chooser.from_options({"mode": "fast", "limit": "3", "levels": "1,4"}) == Chooser("fast", 3, (1, 4))
    assert Chooser("fast", 3, (1, 4)).spec() == "test-choose{mode=fast limit=3 levels=1,4}"
    assert Chooser().spec() == "test-choose"
    assert Chooser.option_help() == {"mode": "how to choose", "limit": "", "levels": ""}
    with pytest.raises(ValueError, match="Option 'mode' of pass 'test-choose' expects one of fast, exact, got 'slow'"):
        Chooser.from_options({"mode": "slow"})
    with pytest.raises(ValueError, match="expects a list of one of 1, 2, 4, got '1,3'"):
        Chooser.from_options({"levels": "1,3"})
    with pytest.raises(ValueError, match="expects a int, got 'many'"):
        Chooser.from_options({"limit": "many"})
    with pytest.raises(ValueError, match="Option 'mode' of pass 'test-choose' expects one of fast, exact, got 'slow'"):
        Chooser(mode="slow")


def test_an_option_of_another_type_is_refused_when_registered():
    @dataclasses.dataclass(frozen=True)
    class Odd(Pass):
        name = "test-odd"
        pair: tuple[int, str] = (0, "")

    with pytest.raises(TypeError, match="options must be bool, int, float, str, tuple"):
        Odd.option_types()


def test_options_round_trip_through_pipelines(registered):
    registered(Tagged)
    pm = PassManager("test-tag{dims=1,2 flag},propagate{keep-open=true}")
    assert str(pm) == "test-tag{dims=1,2 flag=true},propagate{keep-open=true}"
    assert str(PassManager(str(pm))) == str(pm)


def test_option_errors_name_the_option():
    with pytest.raises(
        ValueError, match="Pass 'test-tag' has no option 'dim'; its options are: key, dims, flag, ratio."
    ):
        Tagged.from_options({"dim": "1"})
    with pytest.raises(ValueError, match="Option 'dims' of pass 'test-tag' expects a list of int, got '1,x'."):
        Tagged.from_options({"dims": "1,x"})
    with pytest.raises(ValueError, match="Option 'flag' of pass 'test-tag' expects true or false, got 'yes'."):
        Tagged.from_options({"flag": "yes"})


def test_bad_option_type_is_a_type_error():
    @dataclasses.dataclass(frozen=True)
    class Bad(Pass):
        name = "test-bad"
        table: dict = dataclasses.field(default_factory=dict)

    with pytest.raises(TypeError, match="Option 'table' of pass 'test-bad' has type <class 'dict'>"):
        passes.register_pass(Bad)


# -- registry --------------------------------------------------------------------------------------------


def test_builtins_are_registered():
    assert {"export-gspmd", "import-gspmd", "propagate", "verify-shardings", "dedup-meshes", "strip-shardings"} <= set(
        passes.pass_names()
    )
    for name in ["export-gspmd", "propagate"]:
        assert passes.get_pass(name).name == name
    assert passes.get_pass("canonicalize") is None  # an MLIR pass, not a shardkit one


def test_register_pass(registered):
    registered(Tagged)
    assert passes.get_pass("test-tag") is Tagged
    assert "test-tag" in passes.pass_names()
    with pytest.raises(ValueError, match="Pass name 'export-gspmd' is already taken"):
        passes.register_pass(
            dataclasses.make_dataclass("X", [], bases=(Pass,), frozen=True, namespace={"name": "export-gspmd"})
        )
    with pytest.raises(TypeError, match="register_pass needs a Pass subclass with a `name`"):
        passes.register_pass(int)


def test_unknown_pass_lists_close_matches():
    with pytest.raises(passes.UnknownPassError, match="Did you mean 'canonicalize'") as e:
        PassManager("canonicalise")
    assert e.value.close == ["canonicalize"]
    with pytest.raises(ValueError, match="Did you mean 'verify-shardings'"):
        PassManager("verify-sharding")
    with pytest.raises(
        ValueError, match="Unknown pass 'zzz': not a shardkit pass nor a registered MLIR pass. `shardkit"
    ):
        PassManager("zzz")


def test_mlir_passes_fall_through_and_nest():
    pm = PassManager("cse,sdy-sharding-constraint-to-reshard,canonicalize{max-iterations=2}")
    assert [type(p).__name__ for p in pm.passes] == ["MlirPass"] * 3
    assert [p.nest for p in pm.passes] == [False, True, False]
    assert str(pm) == "cse,sdy-sharding-constraint-to-reshard,canonicalize{max-iterations=2}"
    with pytest.raises(ValueError, match="MLIR pass 'cse' rejected its options"):
        PassManager("cse{bogus=1}")
    with pytest.raises(passes.UnknownPassError, match="Unknown pass 'csee'.*Did you mean 'cse'"):
        PassManager("func.func(canonicalize,csee)")
    with pytest.raises(
        ValueError,
        match=r"Pass 'export-gspmd' is a shardkit pass, which runs on the whole module; "
        r"move it out of 'func.func\(...\)'.",
    ):
        PassManager("func.func(cse,export-gspmd)")


def test_pass_manager_takes_pass_objects(registered):
    registered(Tagged)
    pm = PassManager([Tagged(key="a.b"), passes.resolve(passes.PassSpec("cse"))])
    assert str(pm) == "test-tag{key=a.b},cse"
    module = parse()
    pm.run(module)
    assert "a.b" in str(module)


# -- plugins ---------------------------------------------------------------------------------------------


def _ep(name: str, value: str) -> importlib.metadata.EntryPoint:
    return importlib.metadata.EntryPoint(name, value, "shardkit.passes")


@pytest.fixture
def fake_plugins():
    yield passes.find_plugins
    passes.find_plugins()  # the installed ones again


def test_broken_plugins_fail_alone(fake_plugins):
    fake_plugins(
        [
            _ep("test-tag", f"{__name__}:Tagged"),
            _ep("missing-module", "shardkit_no_such_module:Pass"),
            _ep("not-a-pass", "shardkit.passes:PassManager"),
            _ep("wrong-name", f"{__name__}:Tagged"),
            _ep("twice", f"{__name__}:Tagged"),
            _ep("twice", "other.module:Other"),
        ]
    )
    assert passes.get_pass("test-tag") is Tagged
    assert passes.get_pass("export-gspmd").name == "export-gspmd"
    with pytest.raises(
        passes.PluginError,
        match=r"Plugin an unnamed distribution \(entry point 'missing-module = shardkit_no_such_module:Pass'\) "
        "failed to load: ModuleNotFoundError: No module named 'shardkit_no_such_module'",
    ):
        passes.get_pass("missing-module")
    with pytest.raises(passes.PluginError, match="does not point to a shardkit Pass subclass"):
        passes.get_pass("not-a-pass")
    with pytest.raises(passes.PluginError, match="loads a pass named 'test-tag'; the entry point name and the pass"):
        passes.get_pass("wrong-name")
    with pytest.raises(
        passes.PluginError,
        match=r"'twice' is offered by more than one plugin: .*twice = "
        rf"{__name__}:Tagged.* and .*twice = other.module:Other",
    ):
        passes.get_pass("twice")
    rows = dict(passes.describe_passes())
    assert rows["test-tag"] == "Puts a unit attribute on the module."
    assert rows["missing-module"].startswith("(unavailable) Plugin")
    with pytest.raises(passes.PluginError, match="missing-module"):
        PassManager("test-tag,missing-module")


def test_plugin_cannot_shadow_a_builtin(fake_plugins):
    fake_plugins([_ep("export-gspmd", f"{__name__}:Tagged")])
    assert passes.get_pass("export-gspmd").__name__ == "ExportGSPMD"


def test_example_plugin_is_installed():
    cls = passes.get_pass("shard-leading-dim")
    assert cls is not None, "pip install -e examples/plugin_pass (./run does it)"
    module = parse(MODULE.replace(' {sdy.sharding = #sdy.sharding<@mesh, [{"x"}, {}]>}', ""))
    passes.run_pipeline(module, "shard-leading-dim{axis=y}")
    assert '%arg0: tensor<8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"y"}, {}]>}' in str(module)


# -- PassManager -----------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class BreakIR(Pass):
    """Erases the return op, leaving the function without a terminator."""

    name = "test-break"

    def apply(self, module: ir.Module) -> None:
        irx.erase(irx.ops(module, "func.return")[0])


@dataclasses.dataclass(frozen=True)
class Complain(Pass):
    """Reports one error per function and one warning."""

    name = "test-complain"

    def apply(self, module: ir.Module) -> None:
        for func in irx.ops(module, "func.func"):
            self.emit_warning(func, "just saying")
            self.emit_error(func, "arg 0 - is not to my liking")


def test_verify_after_each_pass_names_the_breaker(registered):
    registered(BreakIR)
    module = parse()
    with pytest.raises(PassError, match="Pass 'test-break' left the module invalid:") as e:
        passes.run_pipeline(module, "cse,test-break,canonicalize")
    assert e.value.pass_name == "test-break"
    assert "-:5:10: error: block with no terminator" in str(e.value)


def test_diagnostics_are_located_at_ops(registered):
    registered(Complain)
    module = ir.Module.parse(MODULE, context())
    with pytest.raises(PassError) as e:
        passes.run_pipeline(module, "test-complain")
    assert e.value.pass_name == "test-complain"
    assert [str(d) for d in e.value.diagnostics] == [
        "-:4:3: warning: 'func.func' op just saying",
        "-:4:3: error: 'func.func' op arg 0 - is not to my liking",
    ]
    assert isinstance(e.value, ValueError)
    with pytest.raises(PassError, match="Pass 'test-complain' failed:"):  # outside a PassManager: at once
        Complain().apply(module)


def test_warnings_are_kept(registered):
    @registered
    @dataclasses.dataclass(frozen=True)
    class Warns(Pass):
        name = "test-warns"

        def apply(self, module):
            self.emit_warning(irx.ops(module, "func.func")[0], "looks odd")

    pm = PassManager("test-warns,cse")
    pm.run(parse())
    assert [str(d) for d in pm.warnings] == ["-:4:3: warning: 'func.func' op looks odd"]


def test_value_errors_in_apply_become_pass_errors(registered):
    @registered
    @dataclasses.dataclass(frozen=True)
    class Raises(Pass):
        name = "test-raises"

        def apply(self, module):
            raise ValueError("axis 'z' is not in the mesh")

    with pytest.raises(PassError, match="Pass 'test-raises' failed:\n  <unknown>: error: axis 'z' is not in the mesh"):
        passes.run_pipeline(parse(), "test-raises")


def test_instrumentation(registered):
    registered(Tagged)
    out, seen = io.StringIO(), []
    pm = PassManager(
        "test-tag,cse",
        ir_printing=IRPrinting(before_all=True, after=["cse"], stream=out),
        callback=lambda phase, p, m: seen.append((phase, p.name)),
    )
    module = parse()
    pm.run(module)
    text = out.getvalue()
    assert text.count("// -----// IR Dump Before") == 2
    assert (
        "// -----// IR Dump After cse //----- //\nmodule attributes {mhlo.num_partitions = 8 : i32, test.tag}" in text
    )
    assert "IR Dump After test-tag" not in text
    assert seen == [("before", "test-tag"), ("after", "test-tag"), ("before", "cse"), ("after", "cse")]
    report = pm.timing_report()
    assert "test-tag" in report and "cse" in report and "(verify)" in report and "Total" in report
    assert [name for name, _ in pm.timings][::2] == ["test-tag", "cse"]


def test_stablehlo_passes_fall_through():
    module = parse()
    passes.run_pipeline(module, "export-gspmd,stablehlo-legalize-to-vhlo")
    assert "vhlo.negate" in str(module)


def test_verify_shardings_on_a_module_built_without_verification():
    """Shardy's verifier runs when text is parsed; modules edited in Python get the same checks here."""
    module = parse()
    func = irx.ops(module, "func.func")[0]
    with module.context:
        bad = ir.Attribute.parse('#sdy.sharding<@mesh, [{"z", "x"}, {"x"}], replicated={"y"}>')
        irx.set_value_attrs(func, "arg", [{"sdy.sharding": bad}])
        irx.set_value_attrs(func, "res", [{"sdy.sharding": ir.Attribute.parse("#sdy.sharding<@nomesh, [{}, {}]>")}])
    with pytest.raises(PassError) as e:
        passes.run_pipeline(module, "verify-shardings")
    assert e.value.pass_name == "verify-shardings"
    assert [d.message for d in e.value.diagnostics] == [
        '\'func.func\' op arg 0 - unknown axis name: "z" (mesh <["x"=4, "y"=2]>)',
        (
            '\'func.func\' op arg 0 - axis "x" is used more than once in #sdy.sharding<@mesh, [{"z", "x"}, {"x"}], '
            'replicated={"y"}>'
        ),
        "'func.func' op result 0 - unknown mesh: @nomesh",
    ]


def test_run_pipeline_works_in_place_and_passes_compose():
    module = parse()
    passes.run_pipeline(module, "propagate,export-gspmd")
    text = str(module)
    assert 'stablehlo.negate %arg0 {mhlo.sharding = "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"}' in text
    assert "sdy." not in text
    passes.run_pipeline(module, "import-gspmd,dedup-meshes,strip-shardings")
    assert "sharding" not in str(module) and "mhlo.num_partitions = 1" in str(module)


def test_plugin_pass_in_compile():
    """A plugin pass reaches XLA through Lowered.compile(passes=...); the compiled input shardings show it."""
    import numpy as np

    import shardkit as sk

    mesh = sk.make_mesh((4, 2), ("x", "y"))
    s = sk.NamedSharding(mesh, sk.P("x", "y"))
    x = sk.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), s)
    w = np.ones((8, 2), np.float32)
    lowered = sk.jit(lambda a, b: a * 2 + b, out_shardings=s).lower(x, w)
    compiled = lowered.compile(passes="shard-leading-dim{axis=x},verify-shardings")
    (args, _) = compiled.input_shardings
    assert args[1].spec == sk.P("x")
    np.testing.assert_array_equal(np.asarray(compiled(x, w)), np.asarray(x) * 2 + 1)
    assert "%arg1: tensor<8x2xf32>) ->" in lowered.as_text()  # the lowered module itself is untouched


def test_every_pass_name_is_its_class_name():
    # The registry table and the entry points name passes; each class names itself: they must agree.
    names = passes.pass_names()
    assert {"export-gspmd", "import-gspmd", "propagate", "shard-leading-dim"} <= set(names)
    for name in names:
        assert passes.get_pass(name).name == name
