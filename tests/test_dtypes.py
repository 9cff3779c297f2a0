"""The one element-type table (``shardkit.dialects.dtypes``) against jax 0.10: every dtype jax.numpy has, under the
names jax's MLIR lowering and XLA's HLO text give it, and its width."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax.interpreters import mlir as jax_mlir

from shardkit.dialects import context, dtypes

JAX_DTYPES = ["bool", "complex64", "complex128", "bfloat16", "float16", "float32", "float64"]
JAX_DTYPES += [f"{s}int{b}" for s in ("", "u") for b in (2, 4, 8, 16, 32, 64)]
JAX_DTYPES += [n for n in dir(jnp) if n.startswith(("float8_", "float4_"))]


def test_the_table_has_every_dtype_jax_has_once():
    assert sorted(t.numpy for t in dtypes.ELEMENT_TYPES) == sorted(JAX_DTYPES)
    assert len(dtypes.BY_MLIR) == len(dtypes.BY_HLO) == len(dtypes.ELEMENT_TYPES)


@pytest.mark.parametrize("element", dtypes.ELEMENT_TYPES, ids=lambda t: t.numpy)
def test_each_row_is_jax_s_own_naming(element):
    dtype = np.dtype(getattr(jnp, element.numpy))
    assert element.dtype == dtype
    with context():
        assert str(jax_mlir.dtype_to_ir_type(dtype)) == element.mlir
    with jax.enable_x64(True):  # jax canonicalizes 64-bit types away otherwise
        hlo = jax.jit(lambda x: x).lower(jax.ShapeDtypeStruct((3,), dtype)).as_text(dialect="hlo")
    assert f"{element.hlo}[3]" in hlo
    assert element.bits == _bits(element.numpy, dtype)


def _bits(name: str, dtype: np.dtype) -> int:
    """The width numpy and ml_dtypes give a dtype (a bool takes a byte; a complex number two floats)."""
    if name in ("bool", "complex64", "complex128"):
        return dtype.itemsize * 8
    return (ml_dtypes.iinfo if name.startswith(("int", "uint")) else ml_dtypes.finfo)(dtype).bits


def test_shardkit_lower_args_take_mlir_s_and_xla_s_names():
    from shardkit.tools.lower import parse_arg

    assert parse_arg("16x8xbf16")[:2] == ((16, 8), np.dtype(jnp.bfloat16))
    assert parse_arg("4xui8")[1] == parse_arg("4xu8")[1] == np.uint8 and parse_arg("i1")[:2] == ((), np.bool_)
    with pytest.raises(ValueError, match=r"--arg '4xq7' must look like 16x8xf32\[:SPEC\]"):
        parse_arg("4xq7")
