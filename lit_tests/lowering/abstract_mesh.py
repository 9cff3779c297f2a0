# RUN: %PYTHON %s | FileCheck %s
# A constraint over an AbstractMesh names no devices: the same function lowered for two meshes of one shape
# over different devices is one module (a cache hit); only the device assignment differs.

import jax

jax.config.update("jax_num_cpu_devices", 8)

import numpy as np  # noqa: E402

import shardkit as sk  # noqa: E402
from shardkit import P  # noqa: E402

devs = sk.devices()
mesh_a = sk.Mesh(np.array(devs).reshape(4, 2), ("x", "y"))
mesh_b = sk.Mesh(np.array(devs[::-1]).reshape(4, 2), ("x", "y"))
abstract = sk.NamedSharding(sk.AbstractMesh((4, 2), ("x", "y")), P("x", None))


def f(x):
    return sk.with_sharding_constraint(x * 2, abstract) + 1


jitted = sk.jit(f)
a = jitted.lower(sk.ShapeDtypeStruct((8, 4), np.float32, sharding=sk.NamedSharding(mesh_a, P(None, "y"))))
b = jitted.lower(sk.ShapeDtypeStruct((8, 4), np.float32, sharding=sk.NamedSharding(mesh_b, P(None, "y"))))

# CHECK: sdy.mesh @mesh = <["x"=4, "y"=2]>
# CHECK: sdy.sharding_constraint %{{.*}} <@mesh, [{"x"}, {}]> : tensor<8x4xf32>
print(a.as_text())
# CHECK-LABEL: same text: True
print("same text:", a.as_text() == b.as_text())
# CHECK-NEXT: mesh a devices: [0, 1, 2, 3, 4, 5, 6, 7]
# CHECK-NEXT: mesh b devices: [7, 6, 5, 4, 3, 2, 1, 0]
print("mesh a devices:", [d.id for d in a.compile().executable.local_devices()])
print("mesh b devices:", [d.id for d in b.compile().executable.local_devices()])
