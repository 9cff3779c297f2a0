# RUN: %PYTHON %s %t
# RUN: shardkit-run %t.jax --random-inputs 0 | FileCheck %s
# RUN: shardkit-run %t.vhlo --random-inputs 0 | FileCheck %s
# RUN: shardkit-run %t.mlirbc --random-inputs 0 | FileCheck %s
# RUN: not shardkit-run %t.vhlo --args %t.x.npy 2>&1 | FileCheck %s --check-prefix=MISSING

# A program jax exported, run by shardkit-run from each binary form: the serialized jax.export.Exported, its
# StableHLO portable artifact (VHLO bytecode) and plain MLIR bytecode. All three print the same outputs (the
# inputs are numpy's seeded normal draws; the crc32 of tanh's bits is left out, it may vary with the CPU).

# CHECK: result[0]: float32[8,4] sharding={devices=[4,2]<=[8]} = P('x', 'y') on @mesh sum=-6.75013 crc32=
# CHECK-NEXT: result[1]: float32[] sharding={replicated} = P() on @mesh sum=-4.86339 crc32=
# MISSING: shardkit-run: error: cannot read '{{.*}}x.npy': No such file or directory

import io
import sys
from pathlib import Path

import jax
import jax.extend
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, NamedSharding, PartitionSpec

from shardkit.dialects import context

jax.config.update("jax_num_cpu_devices", 8)
mesh = jax.make_mesh((4, 2), ("x", "y"), axis_types=(AxisType.Auto,) * 2)
s = NamedSharding(mesh, PartitionSpec("x", "y"))
f = jax.jit(lambda a: (jnp.tanh(a) * 2, jnp.sum(a)), in_shardings=s, out_shardings=(s, None))
exp = jax.export.export(f)(jax.ShapeDtypeStruct((8, 4), np.float32))
out = sys.argv[1]
module = jax.extend.mlir.deserialize_portable_artifact(exp.mlir_module_serialized, context=context())
buf = io.BytesIO()
module.operation.write_bytecode(file=buf)
Path(out + ".jax").write_bytes(exp.serialize())
Path(out + ".vhlo").write_bytes(exp.mlir_module_serialized)
Path(out + ".mlirbc").write_bytes(buf.getvalue())
