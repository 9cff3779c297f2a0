"""MaxText's own train step (MaxText 0.2.5 from PyPI, its code unchanged) through shardkit.

On every lane: the program kept in ``tests/data/maxtext/maxtext-tiny-flash.*`` (MaxText's step with its default TPU
attention, the Pallas splash kernel inside a ``shard_map`` of each scanned layer; how it was made is in its
``.json``) is explained and drawn. Where MaxText is installed (the Python 3.13 lane, extra ``shardkit[maxtext]``)
the same step is built from MaxText's config by ``shardkit.maxtext`` and checked live.
"""

from __future__ import annotations

import gzip
import pathlib

import pytest

import shardkit as sk
from tests import browser as browser_

DATA = pathlib.Path(__file__).resolve().parent / "data" / "maxtext"


@pytest.fixture(scope="module")
def kept_flash() -> sk.Lowered:
    return sk.load(gzip.decompress((DATA / "maxtext-tiny-flash.mlir.gz").read_bytes()).decode())


def test_kept_flash_step_is_explained(kept_flash):
    """Every collective of Shardy's plan for MaxText's step is explained; the splash kernel's shard_map inputs are
    named as such (jaxlib's origin tracking crashed on them: ``explain.constrain_shard_map_operands``)."""
    explanation = kept_flash.communication().explain()
    assert len(explanation.items) == len(explanation.report.collectives) > 20
    assert all(item.causes for item in explanation.items)
    kinds = {o.kind for item in explanation.items for c in item.causes for o in c.origins}
    assert {"argument", "constraint"} <= kinds


@pytest.mark.skipif(browser_.missing() is not None, reason=browser_.missing() or "")
def test_kept_flash_step_page_opens(kept_flash, browser, tmp_path):
    path = tmp_path / "flash.html"
    kept_flash.to_html(path)
    with browser_.opened(browser, str(path)) as (_, errors):
        assert errors == []
