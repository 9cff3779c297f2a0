"""shardkit-opt's command line, as mlir-opt spells it.

Every option takes one or two dashes (``-split-input-file``, ``--split-input-file``) and ``=value`` or a
separate value. Besides ``-p``/``--pass-pipeline``, a pass can be named as a flag, as mlir-opt and sdy_opt
RUN lines do: ``-canonicalize``, ``-sdy-insert-explicit-reshards='enable-full-version=true'``; such flags form
the pipeline in the order given. Mistakes raise ``UsageError`` (one line, exit code 1 in the tool).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
from collections.abc import Callable, Sequence


class UsageError(ValueError):
    """A command line shardkit-opt cannot run."""


@dataclasses.dataclass(frozen=True)
class Option:
    """One option: its names (without dashes), how it takes a value, and its help line."""

    names: tuple[str, ...]
    help: str
    value: str = "none"  # "none" (a flag), "required", or "optional" (only as name=value)
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    default: object = None
    dest_name: str | None = None
    type: type | None = None

    @property
    def dest(self) -> str:
        return self.dest_name or self.names[0].replace("-", "_")

    @property
    def flag(self) -> str:
        return f"-{self.names[0]}" if len(self.names[0]) == 1 else f"--{self.names[0]}"


ISOLATION = ("crash-prone", "all", "none")

OPTIONS = (
    Option(("o",), "output file (default: stdout)", "required", "FILE", default="-", dest_name="output"),
    Option(
        ("pass-pipeline", "p"),
        'passes to run, e.g. "propagate,export-gspmd" or "builtin.module(cse)"',
        "required",
        "PIPELINE",
        default="",
    ),
    Option(("split-input-file",), "run each '// -----' chunk on its own; outputs are joined by '// -----'"),
    Option(
        ("verify-diagnostics",),
        "check diagnostics against expected-* comments (MLIR's protocol); "
        "=only-expected ignores diagnostics no comment expects",
        "optional",
        choices=("all", "only-expected"),
    ),
    Option(("allow-unregistered-dialect",), "accept ops of dialects the context does not know"),
    Option(("print-ir-before-all", "mlir-print-ir-before-all"), "print the IR before every pass (stderr)"),
    Option(("print-ir-after-all", "mlir-print-ir-after-all"), "print the IR after every pass (stderr)"),
    Option(("print-ir-after-failure", "mlir-print-ir-after-failure"), "print the IR after a pass that failed (stderr)"),
    Option(("timing", "mlir-timing"), "print a per-pass timing report (stderr)"),
    Option(("mlir-print-debuginfo",), "print locations"),
    Option(("mlir-print-op-generic",), "print every op in its generic form"),
    Option(("mlir-print-local-scope",), "print attributes and types inline, without aliases"),
    Option(
        ("mlir-elide-elementsattrs-if-larger",),
        "print elements attributes larger than N as __elided__",
        "required",
        "N",
        type=int,
    ),
    Option(("mlir-disable-threading",), "run MLIR passes on one thread"),
    Option(
        ("mlir-diagnostic-verbosity-level",),
        "the least severe diagnostics to print",
        "required",
        choices=("errors", "warnings", "remarks"),
        default="remarks",
    ),
    Option(("emit-bytecode",), "write MLIR bytecode instead of text"),
    Option(
        ("verify-each",),
        "verify the module after every pass (true/false, default true)",
        "optional",
        choices=("true", "false"),
    ),
    Option(("dump-pass-pipeline",), "print the pipeline, MLIR passes with all their options (stderr)"),
    Option(("list-passes",), "list every pass with its summary and options, then exit"),
    Option(
        ("isolate-passes",),
        "which passes run in a child process, where a crash becomes a diagnostic "
        "(default: crash-prone, the jaxlib passes known to abort)",
        "required",
        choices=ISOLATION,
        default="crash-prone",
    ),
    Option(
        ("pass-timeout",),
        "stop a pass that runs longer than SECONDS, as a diagnostic (every pass then runs in a child process)",
        "required",
        "SECONDS",
        type=float,
    ),
)

_BY_NAME = {name: option for option in OPTIONS for name in option.names}


def normalize(argv: Sequence[str], is_pass: Callable[[str], bool]) -> tuple[list[str], list[str]]:
    """Splits argv into argparse's tokens (every option as ``--name[=value]``) and the pipeline items that
    pass flags name (``-cse`` -> ``cse``, ``-p-x='a=1 b=2'`` -> ``p-x{a=1 b=2}``), in order."""
    tokens, passes = [], []
    rest = iter(argv)
    for arg in rest:
        if arg == "--":
            tokens += ["--", *rest]
            break
        if not arg.startswith("-") or arg == "-" or arg.startswith("---"):
            tokens.append(arg)
            continue
        name, eq, value = arg.lstrip("-").partition("=")
        option = _BY_NAME.get(name)
        if name in ("h", "help"):
            tokens.append("--help")
        elif option is not None:
            if option.value == "required" and not eq:
                value = next(rest, None)
                if value is None:
                    raise UsageError(f"option '{arg}' needs a value")
            if option.value == "none" and eq:
                raise UsageError(f"option '-{name}' takes no value, got '{arg}'")
            takes = option.value == "required" or (option.value == "optional" and eq)
            tokens.append(f"{option.flag}={value}" if takes else option.flag)
        elif is_pass(name):
            passes.append(f"{name}{{{value}}}" if eq and value.strip() else name)
        else:
            raise UsageError(_unknown(arg, name))
    return tokens, passes


def _unknown(arg: str, name: str) -> str:
    close = difflib.get_close_matches(name, list(_BY_NAME), n=1, cutoff=0.75)
    hint = f" Did you mean '-{close[0]}'?" if close else ""
    return (
        f"unknown command line argument '{arg}': not an option nor a registered pass.{hint} "
        "`shardkit-opt --list-passes` lists the passes."
    )


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print usage and exit 2
        raise UsageError(message)


def arg_parser(epilog: str = "") -> argparse.ArgumentParser:
    """The parser of normalized tokens (see ``normalize``); ``--help`` shows ``epilog`` after the options."""
    parser = _Parser(
        prog="shardkit-opt",
        description="Run a shardkit / MLIR pass pipeline over a .mlir file. Options "
        "take one dash or two; passes can be flags too: -cse -sdy-insert-explicit-reshards='enable-full-"
        "version=true'.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=epilog,
        allow_abbrev=False,
    )
    parser.add_argument("input", nargs="?", default="-", help="input .mlir (text or bytecode) file, or - for stdin")
    for option in OPTIONS:
        flags = [f"-{n}" if len(n) == 1 else f"--{n}" for n in option.names]
        kwargs: dict = {"dest": option.dest, "help": option.help}
        if option.value == "none":
            kwargs["action"] = "store_true"
        else:
            kwargs.update(metavar=option.metavar, choices=option.choices, default=option.default)
            if option.type is not None:
                kwargs["type"] = option.type
            if option.value == "optional":
                kwargs.update(nargs="?", const=option.choices[0])
        parser.add_argument(*flags, **kwargs)
    return parser
