"""What ``jit`` takes besides the function, checked once: shardings (shardkit's, jax's, or bare PartitionSpecs
read under ``with mesh:`` when a call is lowered), static and donated arguments, the partitioner; and how a call's
arguments split into static and dynamic ones (jax's rule: a static argument may be named by position or keyword).
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import jax

from shardkit.partition_spec import UNCONSTRAINED, PartitionSpec
from shardkit.sharding import Sharding, as_sharding, is_sharding_like

PARTITIONERS = ("shardy", "gspmd")
# the platforms jax lowers a body for (``Traced.lower(lowering_platforms=...)``); None: this process's own
PLATFORMS = ("cpu", "tpu", "cuda", "rocm")


def _argnums(value: int | Sequence[int] | None, what: str) -> tuple[int, ...]:
    if value is None:  # as jax.jit: no such arguments
        return ()
    if not isinstance(value, (int, Sequence)):
        raise TypeError(f"{what} must be an int or a sequence of ints, got {value!r}.")
    nums = (value,) if isinstance(value, int) else tuple(value)
    for n in nums:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise TypeError(f"{what} must be non-negative ints, got {value!r}.")
    return tuple(sorted(set(nums)))


def _argnames(value: str | Sequence[str]) -> tuple[str, ...]:
    names = (value,) if isinstance(value, str) else tuple(value)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"static_argnames must be str, got {value!r}.")
    return tuple(sorted(set(names)))


def _has_unconstrained(s: Any) -> bool:
    if isinstance(s, Sharding):
        return bool(s.unconstrained_dims)
    spec = getattr(s, "spec", s)  # a jax NamedSharding's spec, or a bare PartitionSpec
    return isinstance(spec, (tuple, PartitionSpec)) and UNCONSTRAINED in tuple(spec)


def _check_sharding_tree(tree: Any, what: str) -> None:
    for s in jax.tree_util.tree_leaves(tree, is_leaf=is_sharding_like):
        if not is_sharding_like(s):
            raise TypeError(f"{what} must hold shardkit or jax Shardings, PartitionSpecs or None, got {s!r}.")
        if _has_unconstrained(s):
            raise ValueError(f"Unconstrained dims are not allowed when passed to {what}: {s}.")


def per_leaf(prefix: Any, full: Any) -> list[Any]:
    """Each sharding of ``prefix`` (a prefix tree of ``full``; None is a leaf) repeated over the leaves under it."""
    leaves, tree = jax.tree_util.tree_flatten(prefix, is_leaf=is_sharding_like)
    subtrees = tree.flatten_up_to(full)  # ValueError when prefix is not a prefix of full
    return [s for s, sub in zip(leaves, subtrees) for _ in range(len(jax.tree_util.tree_leaves(sub)))]


def resolve(sharding: Any, ndim: int, what: str) -> Sharding | None:
    """One leaf's sharding as shardkit's (None stays None: the compiler chooses)."""
    return None if sharding is None else as_sharding(sharding, ndim, what)


@dataclasses.dataclass(frozen=True, eq=False)
class JitOptions:
    """Everything ``jit`` takes besides the function (``shardkit.jit`` documents each), checked once."""

    in_shardings: Any = None
    out_shardings: Any = None
    static_argnums: tuple[int, ...] = ()
    static_argnames: tuple[str, ...] = ()
    donate_argnums: tuple[int, ...] = ()
    partitioner: str = "shardy"
    platform: str | None = None

    def __post_init__(self) -> None:
        if self.partitioner not in PARTITIONERS:
            raise ValueError(f"partitioner must be one of {PARTITIONERS}, got {self.partitioner!r}.")
        if self.platform is not None and self.platform not in PLATFORMS:
            raise ValueError(f"platform must be None (this process's) or one of {PLATFORMS}, got {self.platform!r}.")
        if isinstance(self.in_shardings, list):
            object.__setattr__(self, "in_shardings", tuple(self.in_shardings))
        _check_sharding_tree(self.in_shardings, "in_shardings")
        _check_sharding_tree(self.out_shardings, "out_shardings")
        object.__setattr__(self, "static_argnums", _argnums(self.static_argnums, "static_argnums"))
        object.__setattr__(self, "static_argnames", _argnames(self.static_argnames))
        object.__setattr__(self, "donate_argnums", _argnums(self.donate_argnums, "donate_argnums"))
        both = set(self.static_argnums) & set(self.donate_argnums)
        if both:
            raise ValueError(f"Arguments {sorted(both)} cannot be both static and donated.")

    def for_function(self, fun: Callable) -> JitOptions:
        """The options with static arguments named both ways, as jax infers them from ``fun``'s signature when
        only one way is given: a static position's parameter may be passed by keyword, and a static name by
        position."""
        if bool(self.static_argnums) == bool(self.static_argnames):
            return self
        try:
            params = list(inspect.signature(fun).parameters.values())
        except (TypeError, ValueError):  # builtins and some callables have no signature
            return self
        either = [
            p.name if p.kind is p.POSITIONAL_OR_KEYWORD else None for p in params if p.kind is not p.VAR_POSITIONAL
        ]
        if self.static_argnums:
            names = tuple(sorted(either[i] for i in self.static_argnums if i < len(either) and either[i]))
            return dataclasses.replace(self, static_argnames=names)
        nums = tuple(sorted(either.index(n) for n in self.static_argnames if n in either))
        return dataclasses.replace(self, static_argnums=nums)

    def key(self) -> Any:
        """A hashable form (sharding trees flattened): equal options share one lowering and call cache."""
        trees = [
            jax.tree_util.tree_flatten(t, is_leaf=is_sharding_like) for t in (self.in_shardings, self.out_shardings)
        ]
        return (
            *((tuple(leaves), tree) for leaves, tree in trees),
            self.static_argnums,
            self.static_argnames,
            self.donate_argnums,
            self.partitioner,
            self.platform,
        )

    def split(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple, tuple, dict]:
        """(static values, dynamic positional arguments, dynamic keyword arguments) of a call of ``name``."""
        if not self.static_argnums and not self.static_argnames:
            return (), args, kwargs
        missing = [i for i in self.static_argnums if i >= len(args)]
        if len(missing) > sum(k in kwargs for k in self.static_argnames):
            raise TypeError(
                f"jit of {name} has static_argnums {self.static_argnums}, but was called with {len(args)} "
                "positional arguments."
            )
        static = tuple(args[i] for i in self.static_argnums if i < len(args))
        static += tuple((k, kwargs[k]) for k in self.static_argnames if k in kwargs)
        dyn = tuple(a for i, a in enumerate(args) if i not in self.static_argnums)
        dyn_kwargs = {k: v for k, v in kwargs.items() if k not in self.static_argnames}
        return static, dyn, dyn_kwargs
