"""The Examples blocks of the array modules' docstrings run as written."""

import doctest

import jax
import numpy as np
import pytest

import shardkit as sk
from shardkit import array, compat, multihost

NAMESPACE = {
    "jax": jax, "np": np, "sk": sk, "P": sk.P, "Mesh": sk.Mesh, "make_mesh": sk.make_mesh,
    "NamedSharding": sk.NamedSharding, "device_put": sk.device_put, **{n: getattr(sk, n) for n in sk.__all__},
}


@pytest.mark.parametrize("module", [array, compat, multihost], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(module, globs={**vars(module), **NAMESPACE}) if t.examples]
    assert tests
    for t in tests:
        runner.run(t)
    assert runner.failures == 0, f"{runner.failures} failing examples in {module.__name__}"
