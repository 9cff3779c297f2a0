"""The ecosystem examples' training programs (each written once against ``examples/frameworks.py``) under jax and
under shardkit: bit-identical losses and parameters, and output shardings of the same kind and spec."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import shardkit as sk

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
frameworks = importlib.import_module("frameworks")


@pytest.mark.parametrize(
    "example",
    [
        "optax_zero",
        "equinox_data_parallel",
        "flax_linen_logical",
        "flax_nnx",
        "orbax_checkpoint",
        "shard_map_user",
        "input_pipeline",
    ],
)
def test_program_matches_jax(example):
    train = importlib.import_module(example).train
    want_losses, want_params = train(frameworks.JAX)
    got_losses, got_params = train(frameworks.SHARDKIT)
    assert got_losses == want_losses
    assert jax.tree.structure(got_params) == jax.tree.structure(want_params)
    for got, want in zip(jax.tree.leaves(got_params), jax.tree.leaves(want_params)):
        assert isinstance(got, sk.Array), type(got)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
        assert type(got.sharding).__name__ == type(want.sharding).__name__ == "NamedSharding"
        assert tuple(got.sharding.spec) == tuple(want.sharding.spec)
