"""What shardkit-opt knows about passes: which names are passes, their summaries and options, for
``--help``, ``--list-passes``, ``--dump-pass-pipeline`` and for telling pass flags (``-cse``) from options.

Summaries of MLIR passes come from ``shardkit.passes.mlir_passes``; their options and defaults are read from
MLIR itself.
"""

from __future__ import annotations

import dataclasses
import textwrap

from shardkit.passes import PassManager, describe_passes, get_pass, registry
from shardkit.passes.mlir_passes import SUMMARIES
from shardkit.passes.mlir_pipeline import MlirPass, is_mlir_pass, printed_pass


def is_pass(name: str) -> bool:
    """Whether ``name`` is a shardkit pass or an MLIR pass jaxlib registers (for ``-NAME`` flags)."""
    try:
        return get_pass(name) is not None or is_mlir_pass(name)
    except registry.PluginError:
        return True  # a broken plugin's name: the pipeline then reports what is wrong with it


def _rows() -> list[tuple[str, str]]:
    return [(name, SUMMARIES[name]) for name in sorted(SUMMARIES) if is_mlir_pass(name)]


def help_epilog() -> str:
    """The pass list ``--help`` ends with: names and summaries."""
    shardkit_rows, mlir_rows = describe_passes(), _rows()
    width = max(len(n) for n, _ in [*shardkit_rows, *mlir_rows]) + 2
    out = "shardkit passes:\n" + "".join(f"  {n:<{width}}{s}\n" for n, s in shardkit_rows)
    out += "\nMLIR passes registered in jaxlib (any other registered name works too; --list-passes shows options):\n"
    out += "".join(f"  {n:<{width}}{s}\n" for n, s in mlir_rows)
    return out


def list_passes() -> str:
    """Every pass with its summary and its options (``name=default``), as ``--list-passes`` prints them."""
    out = ["shardkit passes:\n"]
    for name, summary in describe_passes():
        out.append(f"  {name}\n      {summary}\n")
        try:
            cls = get_pass(name)
        except registry.PluginError:
            continue
        helps = cls.option_help()
        for f in dataclasses.fields(cls):
            key = f.name.replace("_", "-")
            text = f"{key}={_text(f.default)}" + (f"  {helps[key]}" if helps[key] else "")
            out.append(textwrap.fill(text, 100, initial_indent="      ", subsequent_indent="          ") + "\n")
    out.append("\nMLIR passes registered in jaxlib:\n")
    for name, summary in _rows():
        out.append(f"  {name}\n      {summary}\n")
        printed = printed_pass(name) or name
        if printed != name and printed != f"func.func({name})":
            options = printed if name not in printed else printed[printed.index(name) + len(name) :].strip("{})")
            out.append(textwrap.fill(options, 100, initial_indent="      ", subsequent_indent="      ") + "\n")
    return "".join(out)


def _text(default: object) -> str:
    if default is dataclasses.MISSING:
        return "(required)"
    if isinstance(default, bool):
        return "true" if default else "false"
    if isinstance(default, tuple):
        return ",".join(map(str, default))
    return str(default) if default != "" else '""'


def dump_pipeline(pm: PassManager) -> str:
    """``--dump-pass-pipeline``: the pipeline as it will run, MLIR passes with every option spelled out."""
    items = [printed_pass(p.text) or p.text if isinstance(p, MlirPass) else p.spec() for p in pm.passes]
    return f"Pass Manager with {len(items)} passes:\nbuiltin.module({','.join(items)})\n\n"
