"""The swap a jax program makes to run on shardkit, as one record per framework: ``JAX`` (``jax.jit`` with jax's
mesh and shardings, ``equinox.filter_jit``) and ``SHARDKIT`` (``sk.jit``, shardkit's mesh and shardings,
``sk.filter_jit``). The ecosystem examples write their program once against a framework and run it under both."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

import shardkit as sk


@dataclasses.dataclass(frozen=True)
class Framework:
    name: str
    jit: Callable
    filter_jit: Callable
    make_mesh: Callable
    NamedSharding: type
    P: Any
    device_put: Callable
    make_array_from_process_local_data: Callable


def _jax_mesh(shape: tuple[int, ...], names: tuple[str, ...]) -> jax.sharding.Mesh:
    return jax.make_mesh(shape, names, axis_types=(jax.sharding.AxisType.Auto,) * len(names))


def _equinox_filter_jit(fun: Callable) -> Callable:
    import equinox as eqx

    return eqx.filter_jit(fun)


JAX = Framework(
    "jax",
    jax.jit,
    _equinox_filter_jit,
    _jax_mesh,
    jax.sharding.NamedSharding,
    jax.P,
    jax.device_put,
    jax.make_array_from_process_local_data,
)
SHARDKIT = Framework(
    "shardkit",
    sk.jit,
    sk.filter_jit,
    sk.make_mesh,
    sk.NamedSharding,
    sk.P,
    sk.device_put,
    sk.make_array_from_process_local_data,
)


def compare(program: Callable[[Framework], tuple[list[float], Any]]) -> None:
    """Runs ``program`` under jax and under shardkit and prints both runs' losses and how they compare."""
    want_losses, want_params = program(JAX)
    got_losses, got_params = program(SHARDKIT)
    print(f"jax.jit losses:  {want_losses}")
    print(f"sk.jit losses:   {got_losses}")
    same = all(
        (np.asarray(g) == np.asarray(w)).all()
        for g, w in zip(jax.tree.leaves(got_params), jax.tree.leaves(want_params))
    )
    print(f"losses equal to jax's: {got_losses == want_losses}; parameters equal: {same}")
    specs = {type(p.sharding).__name__ + str(tuple(p.sharding.spec)) for p in jax.tree.leaves(got_params)}
    print(f"parameter shardings: {sorted(specs)}")
