"""lit configuration: golden tests over shardkit's printed IR, checked with the Python FileCheck port."""

import os
import subprocess
import sys

import lit.formats

config.name = "shardkit"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".py"]
config.excludes = ["lit.cfg.py", "Output"]
config.test_source_root = os.path.dirname(__file__)

# 8 virtual CPU devices for every test that starts jax.
config.environment["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
config.environment["JAX_PLATFORMS"] = "cpu"
config.environment["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")

# The installed jaxlib release as a feature (jaxlib-0.10, jaxlib-0.12, ...): the tests ported from Shardy that
# need a newer Shardy than one release's say so with XFAIL: jaxlib-0.10.
jaxlib_version = subprocess.run(
    [sys.executable, "-c", "import jaxlib; print(jaxlib.__version__)"], capture_output=True, text=True, check=True
).stdout
config.available_features.add("jaxlib-" + ".".join(jaxlib_version.split(".")[:2]))

config.substitutions.append(("%PYTHON", sys.executable))
# The Python FileCheck port ignores FILECHECK_OPTS, so the options go into the substitution.
config.substitutions.append(("FileCheck", "filecheck --enable-var-scope"))
