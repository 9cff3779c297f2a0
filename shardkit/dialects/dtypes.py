"""The element types, in one table: each as MLIR writes it (``tensor<8xbf16>``), as XLA's HLO text writes it
(``bf16[8]``), as numpy names it (with ml_dtypes for the types numpy lacks), and its width in bits.

Loading reads a program's signature with it, ``shardkit-lower --arg`` its types, the Shardy plan names arrays
as XLA does and XLA's reports count bytes with it. The rows are jax 0.10's own correspondence (every dtype
``jax.numpy`` has; ``tests/test_dtypes.py`` checks each row against jax's MLIR and HLO lowering).

Examples:
    >>> BY_MLIR["bf16"].hlo, BY_MLIR["i1"].dtype, BY_HLO["u8"].mlir
    ('bf16', dtype('bool'), 'ui8')
"""

from __future__ import annotations

import dataclasses
from functools import cached_property

import ml_dtypes
import numpy as np


@dataclasses.dataclass(frozen=True)
class ElementType:
    """One element type under its three names, and its width (a sub-byte type counts as packed)."""

    mlir: str
    hlo: str
    numpy: str
    bits: int

    @cached_property
    def dtype(self) -> np.dtype:
        return np.dtype(getattr(ml_dtypes, self.numpy, self.numpy))


ELEMENT_TYPES = (
    ElementType("i1", "pred", "bool", 8),
    *(ElementType(f"i{b}", f"s{b}", f"int{b}", b) for b in (2, 4, 8, 16, 32, 64)),
    *(ElementType(f"ui{b}", f"u{b}", f"uint{b}", b) for b in (2, 4, 8, 16, 32, 64)),
    ElementType("f16", "f16", "float16", 16),
    ElementType("bf16", "bf16", "bfloat16", 16),
    ElementType("f32", "f32", "float32", 32),
    ElementType("f64", "f64", "float64", 64),
    ElementType("complex<f32>", "c64", "complex64", 64),
    ElementType("complex<f64>", "c128", "complex128", 128),
    ElementType("f4E2M1FN", "f4e2m1fn", "float4_e2m1fn", 4),
    *(
        ElementType(f"f8{name}", f"f8{name.lower()}", f"float8_{name.lower()}", 8)
        for name in ("E3M4", "E4M3", "E4M3B11FNUZ", "E4M3FN", "E4M3FNUZ", "E5M2", "E5M2FNUZ", "E8M0FNU")
    ),
)

BY_MLIR = {t.mlir: t for t in ELEMENT_TYPES}
BY_HLO = {t.hlo: t for t in ELEMENT_TYPES}
