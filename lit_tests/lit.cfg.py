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

# The tools and %PYTHON run this checkout's shardkit, not whatever shardkit the environment installed (another
# checkout's console scripts on PATH, an editable install of another tree): its root goes first on PYTHONPATH and
# each tool runs as `python -m shardkit.tools.X` with lit's Python. Checked below; a mismatch stops lit.
root = os.path.dirname(os.path.realpath(config.test_source_root))
config.environment["PYTHONPATH"] = os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p)
for tool in ("opt", "lower", "report", "run"):
    # the tool's name as a command word only (not inside a path such as %s's lit_tests/tools/shardkit-lower.py)
    config.substitutions.append(
        (rf"(?<![\w./-])shardkit-{tool}(?![\w.-])", f"{sys.executable} -m shardkit.tools.{tool}")
    )

# What lit's Python imports under that environment: the installed jaxlib release as a feature (jaxlib-0.10,
# jaxlib-0.12, ...: the tests ported from Shardy that need a newer Shardy than one release's say so with XFAIL:
# jaxlib-0.10), and where shardkit comes from, which must be this checkout.
probe = subprocess.run(
    [sys.executable, "-c", "import jaxlib, shardkit; print(jaxlib.__version__); print(shardkit.__file__)"],
    capture_output=True,
    text=True,
    env={**os.environ, **config.environment},
    cwd=config.test_source_root,
)
if probe.returncode != 0:
    lit_config.fatal(f"{sys.executable} cannot import jaxlib and this checkout's shardkit:\n{probe.stderr}")
jaxlib_version, shardkit_file = probe.stdout.split()
if os.path.dirname(os.path.dirname(os.path.realpath(shardkit_file))) != root:
    lit_config.fatal(f"the tests would run the shardkit at {shardkit_file}, not this checkout's ({root}/shardkit)")
config.available_features.add("jaxlib-" + ".".join(jaxlib_version.split(".")[:2]))

config.substitutions.append(("%PYTHON", sys.executable))
# The Python FileCheck port ignores FILECHECK_OPTS, so the options go into the substitution.
config.substitutions.append(("FileCheck", "filecheck --enable-var-scope"))
