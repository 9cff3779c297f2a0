"""The package's import graph flows one way: nothing imports a module of a higher layer.

Layers, lowest first (a module may import its own subpackage and anything in an earlier layer). The model
knows the sharding forms but no pass; passes know only the IR (so ``shardkit-opt`` never loads the Array
runtime); lowering and the executor sit above the model; the staged API above them; tools on top.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "shardkit"

LAYERS = [
    {"shardkit._jaxlib", "shardkit.caching", "shardkit.distributed"},
    {"shardkit.host_copy"},
    {"shardkit.dialects"},
    {"shardkit.passes"},
    {"shardkit.partition_spec"},
    {"shardkit.mesh"},
    {"shardkit.sharding"},
    {"shardkit.inspect"},
    {"shardkit.array"},
    {"shardkit.compat", "shardkit.lowering"},
    {"shardkit.executor"},
    {"shardkit.stages"},
    {"shardkit.autosharding"},
    {"shardkit.multihost", "shardkit.maxtext"},
    {"shardkit"},
    {"shardkit.tools"},
]


def _unit(module: str) -> str:
    """The layer entry a module belongs to: its subpackage (``shardkit.sharding``) or itself."""
    parts = module.split(".")
    return ".".join(parts[:2])


def _layer(module: str) -> int:
    unit = _unit(module)
    for i, layer in enumerate(LAYERS):
        if unit in layer:
            return i
    raise AssertionError(f"{module} is in no layer of tests/test_layering.py: place it there.")


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _imports(path: pathlib.Path) -> set[str]:
    """Every shardkit module ``path`` imports, at module level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                name = f"{node.module}.{a.name}"
                found.add(name if name in MODULES else node.module)
    return {m for m in found if m == "shardkit" or m.startswith("shardkit.")}


def _cycle() -> list[str] | None:
    """One import cycle among shardkit's modules (function-level imports included), or None."""
    graph = {m: sorted(n for n in _imports(path) if n in MODULES and n != m) for m, path in MODULES.items()}
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in graph[m]:
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state and (found := visit(n)) is not None:
                return found
        path.pop()
        state[m] = 2
        return None

    for m in graph:
        if m not in state and (found := visit(m)) is not None:
            return found
    return None


def test_no_import_cycle_even_inside_a_package():
    """A cycle hidden in a function-level import (a worker importing its manager, a report its picture) is a
    cycle still: each module's imports must form a graph without one."""
    cycle = _cycle()
    assert cycle is None, " -> ".join(cycle)


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module):
    here = _layer(module)
    upward = [m for m in sorted(_imports(MODULES[module])) if _unit(m) != _unit(module) and _layer(m) >= here]
    assert not upward, f"{module} (layer {here}) imports {upward}, which are not below it"


def test_public_names_resolve():
    """Every name ``shardkit`` lists loads from the stub's module; the sharding kinds are exactly the package's."""
    import shardkit
    import shardkit.sharding

    missing = sorted(set(shardkit.sharding.__all__) - set(shardkit.__all__))
    assert not missing, f"shardkit/__init__.pyi does not export {', '.join(missing)} (from .sharding import ...)"
    homes = {name: getattr(getattr(shardkit, name), "__module__", "") for name in shardkit.__all__}
    unlisted = sorted(
        {name for name, home in homes.items() if home.startswith("shardkit.sharding.")} - set(shardkit.sharding.__all__)
    )
    assert not unlisted, f"shardkit/sharding/__init__.py's __all__ does not list {', '.join(unlisted)}"
    with pytest.raises(AttributeError, match="no_such_name"):
        shardkit.no_such_name  # noqa: B018


MLIR_ONLY = """
import sys
import shardkit, shardkit.passes
from shardkit.tools import opt
for flag in ("-canonicalize", "-verify-shardings"):
    sys.argv = ["shardkit-opt", sys.argv[1], flag, "-o", "/dev/null"]
    try:
        opt.main()
    except SystemExit as e:
        assert not e.code, e.code
print(sorted(m for m in sys.modules if m == "jax" or m.startswith("jax.")))
"""


def test_mlir_tools_start_without_jax(tmp_path):
    """``shardkit-opt`` and ``shardkit.passes`` run jaxlib and shardkit passes without importing jax (its
    import is most of a tool's start-up time)."""
    import subprocess
    import sys

    source = tmp_path / "m.mlir"
    source.write_text(
        'sdy.mesh @mesh = <["x"=2]>\n'
        'func.func @main(%a: tensor<8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{"x"}]>}) -> tensor<8xf32> {\n'
        "  %0 = stablehlo.add %a, %a : tensor<8xf32>\n  return %0 : tensor<8xf32>\n}\n"
    )
    done = subprocess.run([sys.executable, "-c", MLIR_ONLY, str(source)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_quiet_start_whatever_loads_first():
    """jaxlib may now load before jax (``shardkit.mesh`` needs only jaxlib); its C++ INFO logging stays off, as
    jax's own import keeps it."""
    import subprocess
    import sys

    script = (
        "import os; os.environ['XLA_FLAGS'] = '--xla_force_host_platform_device_count=8'; os.environ.pop("
        "'TF_CPP_MIN_LOG_LEVEL', None)\nimport shardkit as sk\nsk.make_mesh((4, 2), ('x', 'y'))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0 and done.stderr == "", done.stderr
