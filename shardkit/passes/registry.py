"""Where pass names come from: shardkit's built-ins, ``register_pass``, and plugins.

Built-ins are a short ``name -> "module:Class"`` table imported on first use. Plugins are installed
distributions with an entry point in the group ``shardkit.passes`` (``shard-leading-dim = pkg.mod:Class``);
they are loaded one by one, so a broken plugin fails only when its own name is used (or listed), with a
``PluginError`` naming the distribution, the entry point and what went wrong. Two plugins offering one name
make that name an error naming both. Names found nowhere here fall through to jaxlib's MLIR passes
(``mlir_pipeline.MlirPass``); ``MLIR_PASSES`` lists the ones worth suggesting.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

from shardkit.passes.base import Pass
from shardkit.passes.mlir_passes import SUMMARIES

if TYPE_CHECKING:
    import importlib.metadata

GROUP = "shardkit.passes"

_BUILTINS = {
    "auto-partition": "shardkit.autosharding.partition:AutoPartition",  # above this layer: jax loads when it runs
    "dedup-meshes": "shardkit.passes.dedup_meshes:DedupMeshes",
    "export-gspmd": "shardkit.passes.export_gspmd:ExportGSPMD",
    "import-gspmd": "shardkit.passes.import_gspmd:ImportGSPMD",
    "propagate": "shardkit.passes.propagate:Propagate",
    "strip-shardings": "shardkit.passes.strip_shardings:StripShardings",
    "verify-shardings": "shardkit.passes.verify_shardings:VerifyShardings",
}

# jaxlib's registered MLIR passes that are worth suggesting and listing (MLIR has no Python API that
# enumerates them); any other registered MLIR pass still works by name.
MLIR_PASSES = tuple(SUMMARIES)


class PluginError(ValueError):
    """A plugin could not provide its pass; the message names the distribution and the entry point."""


class UnknownPassError(ValueError):
    """A name that is neither a shardkit pass nor a registered MLIR pass; lists the closest names."""

    def __init__(self, name: str, candidates: Iterable[str]):
        self.name = name
        self.close = difflib.get_close_matches(name, sorted(set(candidates)), n=3, cutoff=0.6)
        hint = f" Did you mean {', '.join(repr(c) for c in self.close)}?" if self.close else ""
        super().__init__(
            f"Unknown pass '{name}': not a shardkit pass nor a registered MLIR pass.{hint} "
            "`shardkit-opt --help` lists the passes."
        )


@dataclasses.dataclass(frozen=True)
class _Plugin:
    """An entry point offering a pass; ``clash`` names the other distributions that offer the same name."""

    entry_point: importlib.metadata.EntryPoint
    clash: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        dist = self.entry_point.dist
        owner = f"distribution '{dist.name}'" if dist is not None else "an unnamed distribution"
        return f"{owner} (entry point '{self.entry_point.name} = {self.entry_point.value}')"


_registered: dict[str, type[Pass]] = {}
_plugins: dict[str, _Plugin] = {}
_plugins_found = False


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Makes a Pass subclass available by its ``name``; usable as a class decorator.

    Examples:
        >>> @register_pass
        ... @dataclasses.dataclass(frozen=True)
        ... class Hello(Pass):
        ...     name = "hello"
    """
    if not (isinstance(cls, type) and issubclass(cls, Pass)) or not isinstance(getattr(cls, "name", None), str):
        raise TypeError(f"register_pass needs a Pass subclass with a `name`, got {cls!r}.")
    cls.option_types()  # a bad option type is reported now, not at first use
    taken = _registered.get(cls.name)
    if cls.name in _BUILTINS or (taken is not None and taken.__qualname__ != cls.__qualname__):
        raise ValueError(f"Pass name '{cls.name}' is already taken by {_BUILTINS.get(cls.name) or taken!r}.")
    _registered[cls.name] = cls
    return cls


def unregister_pass(name: str) -> None:
    """Removes a pass added with ``register_pass`` (tests and notebooks re-register)."""
    _registered.pop(name, None)


def find_plugins(entry_points: Iterable[importlib.metadata.EntryPoint] | None = None) -> None:
    """Reads the entry points of group ``shardkit.passes`` (all installed ones unless given) without importing them."""
    global _plugins_found
    if entry_points is None:
        import importlib.metadata  # 20 ms of a tool's start; built-in pass names never need it

        entry_points = importlib.metadata.entry_points(group=GROUP)
    found: dict[str, _Plugin] = {}
    for ep in entry_points:
        if ep.name in found:
            old = found[ep.name]
            found[ep.name] = dataclasses.replace(old, clash=old.clash + (_Plugin(ep).source,))
        else:
            found[ep.name] = _Plugin(ep)
    _plugins.clear()
    _plugins.update(found)
    _load_plugin.cache_clear()
    _plugins_found = True


def _ensure_plugins() -> None:
    if not _plugins_found:
        find_plugins()


@functools.cache
def _load_plugin(name: str) -> type[Pass]:
    plugin = _plugins[name]
    if plugin.clash:
        raise PluginError(
            f"Pass name '{name}' is offered by more than one plugin: {plugin.source} and {', '.join(plugin.clash)}. "
            "Uninstall or rename one of them."
        )
    if name in _BUILTINS or name in _registered:
        raise PluginError(f"Plugin {plugin.source} offers pass '{name}', which shardkit already defines.")
    try:
        cls = plugin.entry_point.load()
    except Exception as e:  # any import-time failure of third-party code
        raise PluginError(f"Plugin {plugin.source} failed to load: {type(e).__name__}: {e}") from e
    if not (isinstance(cls, type) and issubclass(cls, Pass)):
        raise PluginError(f"Plugin {plugin.source} does not point to a shardkit Pass subclass: {cls!r}.")
    if getattr(cls, "name", None) != name:
        raise PluginError(
            f"Plugin {plugin.source} loads a pass named '{getattr(cls, 'name', None)}'; "
            f"the entry point name and the pass name must agree."
        )
    try:
        cls.option_types()
    except TypeError as e:
        raise PluginError(f"Plugin {plugin.source} has a bad option: {e}") from e
    return cls


def pass_names() -> list[str]:
    """Every shardkit pass name: built-ins, registered and plugins (loaded or not)."""
    _ensure_plugins()
    return sorted({*_BUILTINS, *_registered, *_plugins})


def get_pass(name: str) -> type[Pass] | None:
    """The Pass class called ``name``, or None when shardkit has none; PluginError when its plugin is broken."""
    if name in _BUILTINS:
        module, _, attr = _BUILTINS[name].partition(":")
        return getattr(importlib.import_module(module), attr)
    if name in _registered:
        return _registered[name]
    _ensure_plugins()
    if name in _plugins:
        return _load_plugin(name)
    return None


def describe_passes() -> list[tuple[str, str]]:
    """(name, one-line summary) for every shardkit pass; a broken plugin's line says what is wrong."""
    rows = []
    for name in pass_names():
        try:
            rows.append((name, get_pass(name).summary()))
        except PluginError as e:
            rows.append((name, f"(unavailable) {e}"))
    return rows
