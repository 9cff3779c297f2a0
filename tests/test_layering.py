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
    {"shardkit.interop"},
    {"shardkit.array"},
    {"shardkit.compat", "shardkit.lowering"},
    {"shardkit.executor"},
    {"shardkit.stages"},
    {"shardkit.multihost"},
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


@pytest.mark.parametrize("module", sorted(MODULES))
def test_no_upward_import(module):
    here = _layer(module)
    upward = [m for m in sorted(_imports(MODULES[module])) if _unit(m) != _unit(module) and _layer(m) >= here]
    assert not upward, f"{module} (layer {here}) imports {upward}, which are not below it"
