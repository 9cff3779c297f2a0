"""Every test runs on 8 virtual CPU devices; the flag must be set before jax's backend starts."""

import os

os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=8").strip()
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402

jax.config.update("jax_num_cpu_devices", 8)
assert len(jax.devices()) == 8, jax.devices()
