"""Named hardware profiles and the physical layout of devices, the inputs of the time model (``timing.py``).

A ``Hardware`` profile holds one chip's published peaks (bf16 FLOP/s, HBM size and bandwidth), its fast
interconnect (TPU ICI links on a torus, GPU NVLink through NVSwitch) and its slow network (TPU DCN between
slices, GPU InfiniBand between nodes), and the latencies of both. Every number cites its source next to it;
``docs/performance_model.md`` lists them all. Sources:

- [SB-TPU] "How to Scale Your Model", part 2 (TPUs), https://jax-ml.github.io/scaling-book/tpus/, the
  "TPU specs" tables (HBM, FLOP/s, ICI bandwidth per link), the wraparound rules and the DCN sentence
  ("6.25e9 bytes / second per TPU (12.5e9 for TPU v6e ..., and 3.125e9 for TPU v5e)").
- [SB-SHARDING] the same book, part 3, https://jax-ml.github.io/scaling-book/sharding/: measured AllGathers on
  TPU v5e, pop quiz 2 (bf16[256,256] over 4 chips in a line: "In practice, it's closer to 8us") and the figure
  "AllGather Bandwidth on an 8x16 TPU v5e pod" (gathered bytes per second against size, along the 16-chip ring;
  the book's repository, ``assets/img/all-gather-bandwidth.png``, repeated in part 12's appendix B as
  ``assets/gpu/tpu-all-gather-bw.png``), read off its markers. The TPU latency terms are fitted to them.
- [SB-GPU] the same book, part 12 (GPUs), https://jax-ml.github.io/scaling-book/gpus/: the GPU specs table
  (HBM bandwidth, bf16 FLOP/s, HBM size), NVLink 4 "18 * 25=450GB/s of full-duplex bandwidth from each GPU",
  and 8 400 Gbps NDR NICs per 8-GPU node (50 GB/s per GPU).
- [NCCL-212] NVIDIA/nccl-tests issue 212 (NCCL maintainer, 2024-05-06): "450GB/s is the line rate. With the
  protocol overhead (~20%) NCCL can get an effective NVLink bandwidth of 370GB/s".
- [NCCL-TUNING] NVIDIA/nccl ``src/graph/tuning.cc`` (NCCL's own cost model): ring / Simple protocol base
  latency 8.4 us, per-step latency 3.4 us over NVLink and 14 us over the network.
- [PALLAS-MATMUL] jax's Pallas TPU matmul guide, https://docs.jax.dev/en/latest/pallas/tpu/matmul.html (the
  notebook ``docs/pallas/tpu/matmul.ipynb`` in jax-ml/jax, its recorded outputs on a TPU v5e): XLA's bf16 matmuls
  of 1024^3, 4096^3 and 8192^3 timed at 119.4 us, 827.3 us and 6,047.1 us (``timeit`` with
  ``block_until_ready``, dispatch included). The TPU profiles' matmul efficiency is fitted to them.

A ``Topology`` places device ids on chips: torus coordinates, which torus dimensions wrap around, the slice
each device is in (TPU), or the node (GPU).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np


@dataclasses.dataclass(frozen=True)
class Hardware:
    """One chip's peaks and links, from published tables (see the module docstring for the sources).

    Attributes:
        name: the profile's name (``'tpu-v5e'``, ``'h100'``).
        kind: ``'tpu'`` (a torus of ICI links) or ``'gpu'`` (nodes of NVSwitch-connected GPUs).
        flops: peak dense bf16 FLOP/s per chip.
        hbm_bytes: HBM per chip.
        hbm_bandwidth: HBM bytes/s per chip.
        link_bandwidth: bytes/s one way: per ICI link (TPU: one link to each neighbour along each torus
            dimension); a GPU's whole NVLink egress (GPU).
        link_efficiency: the fraction of ``link_bandwidth`` a collective library reaches.
        torus_rank: dimensions of the TPU torus (2 or 3); 0 for GPUs.
        network_bandwidth: bytes/s one way per chip over the slow network (TPU DCN, GPU InfiniBand).
        latency: fixed cost of one collective, seconds.
        hop_latency: cost of one hop (TPU: one ICI link) or ring step (GPU: NVLink), seconds.
        network_hop_latency: cost of one ring step over the slow network, seconds (0 where unpublished).
        node_size: GPUs per NVLink domain; 0 for TPUs.
        device_kinds: jax ``Device.device_kind`` values of this chip, to recognise devices.
        matmul_efficiency: the fraction of ``flops`` a large matmul reaches (the time model's matmul ops run at
            ``flops * matmul_efficiency``).
        clock: a TPU core's clock, cycles per second (to read XLA's TPU compiler's estimates in cycles); 0 for GPUs.
    """

    name: str
    kind: Literal["tpu", "gpu"]
    flops: float
    hbm_bytes: int
    hbm_bandwidth: float
    link_bandwidth: float
    link_efficiency: float
    torus_rank: int
    network_bandwidth: float
    latency: float
    hop_latency: float
    network_hop_latency: float
    node_size: int = 0
    device_kinds: tuple[str, ...] = ()
    matmul_efficiency: float = 1.0
    clock: float = 0.0

    def wraps(self, shape: Sequence[int]) -> tuple[bool, ...]:
        """Which dimensions of a slice of ``shape`` chips have wraparound links [SB-TPU]: v5e and v6e on a
        dimension of 16; v4 and v5p on every dimension when the slice is made of whole 4x4x4 cubes (the optical
        switches that close the rings come with cubes: ``4x4x8`` wraps, ``2x2x4`` does not).

        Examples:
            >>> hardware("tpu-v5e").wraps((8, 16)), hardware("tpu-v5p").wraps((4, 4, 8))
            ((False, True), (True, True, True))
        """
        if self.kind != "tpu":
            return tuple(False for _ in shape)
        if self.torus_rank == 2:
            return tuple(d == 16 for d in shape)
        cubes = all(d % 4 == 0 for d in shape)
        return tuple(cubes for _ in shape)


_US = 1e-6

# The latency of a TPU collective: a fixed cost per collective plus a cost per ICI hop of its longest path, the
# least-squares line through the published small AllGathers on TPU v5e [SB-SHARDING], each less its transfer at
# the ICI line rate as the model prices it (docs/performance_model.md, "The TPU latency terms"). Two hop counts (a
# line of 4 chips, a ring of 16) separate the two terms. The book's rule of thumb of "around 1us" per hop cannot
# fit both: with it the quiz wants a 2.8 us fixed cost and the figure 5.9 us. The figure's 8 KiB point (about
# 24 us, slower than its 128 KiB) is left out and kept as a documented miss. Measured on v5e only; the other TPU
# profiles use the same terms (no usable published small-collective time for them).
# (ICI hops the model counts, measured seconds, seconds of transfer at 4.5e10 B/s per link one way)
_V5E_SMALL_GATHERS = (
    (3, 8e-6, 3 * 32768 / 4.5e10),  # pop quiz 2: 32 KiB shards over a line of 4, "closer to 8us"
    (8, 131072 / 8.5e9, 15 / 16 * 131072 / 9e10),  # the figure: 128 KiB over a ring of 16 at 8.5e9 B/s
    (8, 524288 / 2.72e10, 15 / 16 * 524288 / 9e10),  # the figure: 512 KiB at 2.72e10 B/s
)
_TPU_HOP, _TPU_FIXED = (
    float(v) for v in np.polyfit([h for h, _, _ in _V5E_SMALL_GATHERS], [t - x for _, t, x in _V5E_SMALL_GATHERS], 1)
)  # 1.62 us per hop, 0.94 us per collective

# What fraction of the bf16 peak XLA's matmuls reach on TPU: the least-squares line, time against ideal time at the
# peak, through XLA's measured square matmuls on TPU v5e [PALLAS-MATMUL]; its intercept is the measurement's
# dispatch (about 97 us), its slope the inverse of the efficiency (0.94). Measured on v5e only; the other TPU
# profiles (the same 128x128 MXUs and XLA's same matmul emitter) take it too.
_V5E_MATMULS = ((1024, 119.4e-6), (4096, 827.3e-6), (8192, 6047.1e-6))  # (n of an n^3 bf16 matmul, seconds)
_SLOPE, V5E_DISPATCH = (
    float(v) for v in np.polyfit([2 * n**3 / 1.97e14 for n, _ in _V5E_MATMULS], [t for _, t in _V5E_MATMULS], 1)
)  # V5E_DISPATCH: the measurement's own cost per call (97 us), no part of a program's step
_TPU_MATMUL = 1 / _SLOPE


def _clock(flops: float, cores: int, mxus: int, side: int) -> float:
    """A TPU core's clock from its chip's bf16 peak [SB-TPU]: each MXU does a ``side x side`` multiply-add per cycle
    (the book: one ``bf16[8,128] @ bf16[128,128]`` every 8 cycles; v5e's "5e13 bf16 FLOPs/s per MXU at 1.5GHz"),
    4 MXUs a core, 2 cores on a v4 or v5p chip (megacore), 256-wide MXUs on v6e."""
    return flops / (cores * mxus * 2 * side * side)


PROFILES: dict[str, Hardware] = {
    h.name: h
    for h in (
        Hardware(
            "tpu-v4",
            "tpu",
            flops=2.75e14,  # [SB-TPU] TPU v4p bf16
            hbm_bytes=32 * 2**30,  # [SB-TPU] 32GB; binary GB (HBM stacks are powers of two: see tpu-v5e)
            hbm_bandwidth=1.2e12,  # [SB-TPU]
            link_bandwidth=4.5e10,  # [SB-TPU] ICI one-way per link
            link_efficiency=1.0,
            torus_rank=3,
            network_bandwidth=6.25e9,  # [SB-TPU] DCN per TPU (the generic figure)
            latency=_TPU_FIXED,  # [SB-SHARDING] fitted: see _V5E_SMALL_GATHERS
            hop_latency=_TPU_HOP,
            network_hop_latency=0.0,  # no published DCN latency
            device_kinds=("TPU v4",),
            matmul_efficiency=_TPU_MATMUL,  # [PALLAS-MATMUL] fitted on v5e: see _V5E_MATMULS
            clock=_clock(2.75e14, 2, 4, 128),  # [SB-TPU]
        ),
        Hardware(
            "tpu-v5e",
            "tpu",
            flops=1.97e14,  # [SB-TPU]
            hbm_bytes=16 * 2**30,  # [SB-TPU] 16GB, binary: XLA's TPU compiler says 15.75G available after its reserve
            hbm_bandwidth=8.1e11,  # [SB-TPU]
            link_bandwidth=4.5e10,  # [SB-TPU]
            link_efficiency=1.0,
            torus_rank=2,
            network_bandwidth=3.125e9,  # [SB-TPU] DCN per TPU v5e
            latency=_TPU_FIXED,  # [SB-SHARDING] fitted: see _V5E_SMALL_GATHERS
            hop_latency=_TPU_HOP,
            network_hop_latency=0.0,
            device_kinds=("TPU v5 lite", "TPU v5e"),
            matmul_efficiency=_TPU_MATMUL,  # [PALLAS-MATMUL] fitted: see _V5E_MATMULS
            clock=_clock(1.97e14, 1, 4, 128),  # [SB-TPU]
        ),
        Hardware(
            "tpu-v5p",
            "tpu",
            flops=4.59e14,  # [SB-TPU]
            hbm_bytes=96 * 2**30,  # [SB-TPU] 96GB, binary
            hbm_bandwidth=2.8e12,  # [SB-TPU]
            link_bandwidth=9e10,  # [SB-TPU]
            link_efficiency=1.0,
            torus_rank=3,
            network_bandwidth=6.25e9,  # [SB-TPU]
            latency=_TPU_FIXED,  # [SB-SHARDING] fitted: see _V5E_SMALL_GATHERS
            hop_latency=_TPU_HOP,
            network_hop_latency=0.0,
            device_kinds=("TPU v5", "TPU v5p"),
            matmul_efficiency=_TPU_MATMUL,  # [PALLAS-MATMUL] fitted on v5e: see _V5E_MATMULS
            clock=_clock(4.59e14, 2, 4, 128),  # [SB-TPU]
        ),
        Hardware(
            "tpu-v6e",
            "tpu",
            flops=9.2e14,  # [SB-TPU] 9.20e14
            hbm_bytes=32 * 2**30,  # [SB-TPU] 32GB, binary
            hbm_bandwidth=1.6e12,  # [SB-TPU]
            link_bandwidth=9e10,  # [SB-TPU]
            link_efficiency=1.0,
            torus_rank=2,
            network_bandwidth=12.5e9,  # [SB-TPU] DCN per TPU v6e
            latency=_TPU_FIXED,  # [SB-SHARDING] fitted: see _V5E_SMALL_GATHERS
            hop_latency=_TPU_HOP,
            network_hop_latency=0.0,
            device_kinds=("TPU v6 lite", "TPU v6e"),
            matmul_efficiency=_TPU_MATMUL,  # [PALLAS-MATMUL] fitted on v5e: see _V5E_MATMULS
            clock=_clock(9.2e14, 1, 4, 256),  # [SB-TPU]
        ),
        Hardware(
            "h100",
            "gpu",
            flops=9.9e14,  # [SB-GPU] H100 bf16 9.9e14 (NVIDIA's datasheet: 989 TFLOP/s dense)
            hbm_bytes=80 * 10**9,  # [SB-GPU] 80GB
            hbm_bandwidth=3.35e12,  # [SB-GPU] "about 3.35TB/s on H100"
            link_bandwidth=450e9,  # [SB-GPU] NVLink 4: 18 links x 25 GB/s each way
            link_efficiency=370 / 450,  # [NCCL-212] NCCL's effective NVLink bandwidth 370 GB/s
            torus_rank=0,
            network_bandwidth=50e9,  # [SB-GPU] one 400 Gbps NDR NIC per GPU
            latency=8.4 * _US,  # [NCCL-TUNING] ring / Simple base latency
            hop_latency=3.4 * _US,  # [NCCL-TUNING] ring / Simple per step over NVLink
            network_hop_latency=14.0 * _US,  # [NCCL-TUNING] ring / Simple per step over the network
            node_size=8,  # [SB-GPU] 8 GPUs per NVLink domain
            device_kinds=("NVIDIA H100 80GB HBM3", "NVIDIA H100"),
        ),
        Hardware(
            "h200",
            "gpu",
            flops=9.9e14,  # [SB-GPU] H200 bf16 9.9e14
            hbm_bytes=141 * 10**9,  # [SB-GPU] 141GB
            hbm_bandwidth=4.8e12,  # [SB-GPU] 4.8e12
            link_bandwidth=450e9,  # [SB-GPU] Hopper, NVLink 4, as H100
            link_efficiency=370 / 450,  # [NCCL-212] measured on H100: the same NVLink 4 and NCCL
            torus_rank=0,
            network_bandwidth=50e9,  # [SB-GPU] as H100's DGX/HGX nodes
            latency=8.4 * _US,  # [NCCL-TUNING]
            hop_latency=3.4 * _US,  # [NCCL-TUNING]
            network_hop_latency=14.0 * _US,  # [NCCL-TUNING]
            node_size=8,
            device_kinds=("NVIDIA H200",),
        ),
    )
}


def hardware(name: str | Hardware) -> Hardware:
    """The profile named ``name`` (a ``Hardware`` passes through).

    Examples:
        >>> hardware("h100").link_bandwidth
        450000000000.0
        >>> hardware("tpu-v9")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: hardware='tpu-v9' is not a known profile; known: 'tpu-v4', 'tpu-v5e', ..., 'h200'.
    """
    if isinstance(name, Hardware):
        return name
    if not isinstance(name, str):
        raise TypeError(f"hardware must be a profile name or a Hardware, got {type(name).__name__}: {name!r}.")
    if name not in PROFILES:
        known = ", ".join(map(repr, PROFILES))
        raise ValueError(f"hardware={name!r} is not a known profile; known: {known}.")
    return PROFILES[name]


@dataclasses.dataclass(frozen=True, eq=False)
class Topology:
    """Where devices sit: chip coordinates on a torus (TPU) or nodes of an NVLink domain (GPU).

    Attributes:
        coords: device id -> its chip's coordinates in its slice (TPU); empty for GPUs.
        shape: chips per torus dimension of one slice (TPU); ``()`` for GPUs.
        wraps: per torus dimension, whether it has wraparound links.
        slices: device id -> slice index (TPU multi-slice) or node index (GPU); devices not listed are in 0.
    """

    coords: Mapping[int, tuple[int, ...]]
    shape: tuple[int, ...]
    wraps: tuple[bool, ...]
    slices: Mapping[int, int]

    @classmethod
    def from_devices(cls, devices: Sequence[Any], hardware: str | Hardware) -> Topology:
        """The topology of jax devices: TPU devices (real or libtpu's compile-only ones) carry ``coords`` and,
        across slices, ``slice_index``; wraparound follows ``hardware``'s rule for the slice's shape. Devices
        without coordinates (GPU, CPU) get ``Topology.default``.

        Examples:
            >>> topo = Topology.from_devices(jax.devices(), "h100")
            >>> topo.slices[0], topo.slices[7]
            (0, 0)
        """
        hw = _profile(hardware)
        if not devices or not all(hasattr(d, "coords") for d in devices) or hw.kind != "tpu":
            return cls.default([d.id for d in devices], hw)
        coords = {d.id: tuple(int(c) for c in d.coords)[: hw.torus_rank] for d in devices}
        shape = tuple(max(c[i] for c in coords.values()) + 1 for i in range(hw.torus_rank))
        slices = {d.id: int(getattr(d, "slice_index", 0) or 0) for d in devices}
        return cls(coords, shape, hw.wraps(shape), slices)

    @classmethod
    def default(cls, device_ids: Sequence[int], hardware: str | Hardware, mesh_shape: Sequence[int] = ()) -> Topology:
        """The layout assumed without devices to read: GPUs in nodes of ``node_size`` consecutive device ids
        (ids 0-7 in node 0, 8-15 in node 1, ...); TPUs on a slice shaped like the mesh (``mesh_shape``, major first, one
        mesh axis per torus dimension), device ``device_ids[k]`` at the mesh's ``k``-th position.

        Examples:
            >>> Topology.default(range(16), "h100").slices[9]
            1
            >>> topo = Topology.default(range(32), "tpu-v5e", (8, 4))
            >>> topo.shape, topo.wraps, topo.coords[5]
            ((8, 4), (False, False), (1, 1))
        """
        hw = _profile(hardware)
        ids = [int(i) for i in device_ids]
        if hw.kind == "gpu":
            return cls({}, (), (), {d: d // hw.node_size for d in ids})
        shape = tuple(int(s) for s in mesh_shape)
        if not shape or len(shape) > hw.torus_rank or math.prod(shape) != len(ids):
            raise ValueError(
                f"no default TPU layout for {len(ids)} devices on a mesh of shape {shape}: the mesh must have "
                f"at most {hw.torus_rank} axes ({hw.name} has a {hw.torus_rank}-D torus) and one device per "
                "position; pass topology=Topology.from_devices(devices, hardware) for the real layout."
            )
        coords = {d: tuple(int(i) for i in np.unravel_index(k, shape)) for k, d in enumerate(ids)}
        return cls(coords, shape, hw.wraps(shape), {})

    def slice_of(self, device: int) -> int:
        return self.slices.get(device, 0)


_profile = hardware  # for the methods whose argument is named ``hardware``
