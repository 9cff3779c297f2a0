"""pytest setup for the tests and the docstring examples: 8 virtual CPU devices (the flag must be set before
jax's backend starts) and the names docstring examples use without importing them."""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")
# libtpu (the TPU targets' compiler) takes a lock file for its process; tests in parallel processes share it
os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")

import jax  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)
assert len(jax.devices()) == 8, jax.devices()


@pytest.fixture(autouse=True)
def _docstring_names(doctest_namespace: dict) -> None:
    """Examples may use ``sk``, ``np``, ``jax``, every public shardkit name, the MLIR context and ``ir``, and a
    4x2 mesh ``mesh4x2`` (also ``mesh``) with a sharded Array ``x`` on it and its sharding ``s``."""
    from jaxlib.mlir import ir

    import shardkit as sk
    from shardkit.dialects import context, mhlo, sdy as sdy_forms

    mesh = sk.make_mesh((4, 2), ("x", "y"))
    s = sk.NamedSharding(mesh, sk.P("x", "y"))
    doctest_namespace.update({n: getattr(sk, n) for n in sk.__all__})
    doctest_namespace.update(
        sk=sk,
        jnp=jax.numpy,
        np=np,
        jax=jax,
        ir=ir,
        context=context,
        mhlo=mhlo,
        sdy_forms=sdy_forms,
        mesh=mesh,
        mesh4x2=mesh,
        s=s,
        x=sk.device_put(np.arange(16.0, dtype=np.float32).reshape(8, 2), s),
    )
