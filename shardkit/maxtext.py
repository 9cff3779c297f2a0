"""MaxText's own train step through shardkit: from MaxText's config to shardkit's views, with no build code.

MaxText (Google's JAX trainer, ``pip install 'shardkit[maxtext]'``, Python 3.12+) builds its step for ahead-of-time
compiling in ``maxtext/trainers/pre_train/train_compile.py``. ``train_step`` builds it the same way, with MaxText's
own code: its config (``pyconfig.initialize``), its mesh over the target's devices (its own ``create_device_mesh``
on libtpu's compile-only chips for a TPU target), its shaped state and batch, its shardings (ZeRO-1 and the
input sharding included) and its functional ``train_step``; shardkit's ``jit`` then stages it with MaxText's
shardings and donation, and lowers it inside the two contexts MaxText lowers in (``jax.set_mesh`` and flax's
``logical_axis_rules``: outside them MaxText's activation constraints do nothing). Compiled for a TPU target, it
takes the compiler flags MaxText's scripts give libtpu (``LIBTPU_INIT_ARGS``) and those ``train_compile`` adds.

``config`` is MaxText's config file (``base.yml``) or one of its scripts (``tpu/v5e/16b.sh``: its overrides and
flags), by path or by name inside MaxText's ``configs`` folder; ``overrides`` are MaxText's ``key=value``.

    step = sk.maxtext.train_step("tpu/v5e/16b.sh", target="tpu-v5e:16x16")
    compiled = step.compile()
    print(step.time(compiled))                  # the modelled step on the slice's chips
    print(step.performance(compiled))           # MaxText's count of its work at that step: TFLOP/s per chip, MFU
    step.to_html(compiled, "16b.html")          # the page, with MaxText's MFU beside the step

``shardkit-report --maxtext CONFIG [KEY=VALUE ...] --target T`` does the same from the shell (``docs/maxtext.md``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import pathlib
import re
import shlex
from collections.abc import Iterator, Mapping
from typing import Any

import jax

from shardkit.executor import targets
from shardkit.inspect.timing import ImpossibleEstimate, StepTime
from shardkit.stages import Compiled, Lowered, jit

# What train_compile adds to a script's flags, and sets for the whole process while it builds and compiles.
_TRAIN_COMPILE_FLAGS = {"xla_tpu_spmd_rng_bit_generator_unsafe": True}
_TRAIN_COMPILE_PRNG = "unsafe_rbg"
# A compile's config: no distributed runtime, no checkpoints, no data files (MaxText's synthetic batch).
_COMPILE_ONLY = ("skip_jax_distributed_system=true", "enable_checkpointing=false", "dataset_type=synthetic")


def installed() -> str | None:
    """Why MaxText cannot be used here, or None when it can."""
    try:
        import maxtext  # noqa: F401
    except ImportError as e:
        return (
            f"MaxText is not installed ({e}): pip install 'shardkit[maxtext]' (MaxText needs Python 3.12+ and jax "
            "0.11.1+)"
        )
    return None


def configs_dir() -> pathlib.Path:
    """MaxText's ``configs`` folder (its ``base.yml``, ``models/``, ``tpu/v5e/*.sh``)."""
    _require()
    import maxtext

    return pathlib.Path(maxtext.__file__).parent / "configs"


@dataclasses.dataclass(frozen=True)
class Script:
    """What one of MaxText's scripts runs: the config file, its ``key=value`` overrides and its libtpu flags.

    Examples:
        >>> text = '''export LIBTPU_INIT_ARGS="--xla_enable_async_all_gather=true --xla_tpu_x=2"
        ... python3 -m maxtext.trainers.pre_train.$EXECUTABLE "${MAXTEXT_CONFIGS_DIR:-$PWD/configs}"//base.yml\\\\
        ...     steps=15 per_device_batch_size=6 base_output_directory=$OUTPUT_PATH\\\\
        ...     attention='flash' quantization=""'''
        >>> s = Script.parse(text)
        >>> s.config, s.overrides
        ('base.yml', ('steps=15', 'per_device_batch_size=6', 'attention=flash', 'quantization='))
        >>> s.flags
        {'xla_enable_async_all_gather': True, 'xla_tpu_x': 2}
    """

    config: str
    overrides: tuple[str, ...]
    flags: Mapping[str, Any]

    @classmethod
    def parse(cls, text: str, where: str = "<script>") -> Script:
        """The script's ``LIBTPU_INIT_ARGS`` and the arguments of its ``python3 -m maxtext...`` command after the
        config file; arguments whose value the shell fills in (``$OUTPUT_PATH``) are left out."""
        joined = re.sub(r"\\\n", " ", text)
        flags = re.search(r'LIBTPU_INIT_ARGS="([^"]*)"', joined)
        command = next((line for line in joined.splitlines() if re.match(r"\s*python3? -m maxtext\.", line)), None)
        if command is None:
            raise ValueError(f"{where} runs no 'python3 -m maxtext...' command: not one of MaxText's scripts.")
        words = shlex.split(command)
        config = next((i for i, w in enumerate(words) if w.endswith((".yml", ".yaml"))), None)
        if config is None:
            raise ValueError(f"{where}'s MaxText command names no config file (.yml): {command.strip()[:120]!r}")
        overrides = tuple(w for w in words[config + 1 :] if "=" in w and "$" not in w)
        return cls(pathlib.PurePath(words[config]).name, overrides, _flags(flags.group(1) if flags else ""))


def _flags(text: str) -> dict[str, Any]:
    """``--a=true --b=2`` -> ``{'a': True, 'b': 2}``: the options ``compile(compiler_options=...)`` takes."""
    out: dict[str, Any] = {}
    for word in text.split():
        match = re.fullmatch(r"--([A-Za-z0-9_]+)=(.+)", word)
        if match is None:
            raise ValueError(f"libtpu flag {word!r} is not of the form --name=value")
        value: Any = match.group(2)
        if value.lower() in ("true", "false"):
            value = value.lower() == "true"
        elif re.fullmatch(r"-?\d+", value):
            value = int(value)
        out[match.group(1)] = value
    return out


@dataclasses.dataclass(frozen=True)
class Performance:
    """MaxText's count of a step's work at a modelled step: what MaxText's own log would print.

    Attributes:
        model_flops: MaxText's count of one step's work per device (``calculate_tflops_training_per_device``:
            the model's matmuls and attention, without remat's recomputation).
        program_flops: the compiled program's own flops per device (``StepTime.flops``: ``Compiled.cost()``'s and
            its Pallas kernels'), remat included.
        step: the modelled step, seconds.
        peak: the chip's bf16 peak, FLOP/s.
    """

    model_flops: float
    program_flops: float | None
    step: float
    peak: float

    @property
    def tflops_per_chip(self) -> float:
        return self.model_flops / self.step / 1e12

    @property
    def mfu(self) -> float:
        """The model's flops over the chip's peak in the step (MaxText's MFU)."""
        return self.model_flops / (self.step * self.peak)

    def to_dict(self) -> dict[str, Any]:
        return {
            **dataclasses.asdict(self),
            "tflops_per_chip": self.tflops_per_chip,
            "mfu": self.mfu,
            "text": str(self).strip(),
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def __str__(self) -> str:
        work = f"MaxText counts {self.model_flops / 1e12:.4g} TFLOP per device per step"
        if self.program_flops:
            work += f" (the compiled program does {self.program_flops / 1e12:.4g}, remat included)"
        return f"{work}: {self.tflops_per_chip:.1f} TFLOP/s per chip, {self.mfu:.1%} MFU at the modelled step\n"


@dataclasses.dataclass(frozen=True)
class TrainStep:
    """MaxText's train step, staged by shardkit: ``lower()``, ``compile()``, ``performance(compiled)``.

    Attributes:
        config: MaxText's config (``pyconfig.HyperParameters``).
        mesh: MaxText's mesh (jax's ``Mesh``, its 12 axes) over the target's devices or this process's.
        function: ``sk.jit`` of MaxText's functional train step (``function.__wrapped__``) with MaxText's
            ``in_shardings``, ``out_shardings`` and ``donate_argnums`` (the state's buffers).
        args: the shaped state and batch (``jax.ShapeDtypeStruct`` pytrees with their shardings).
        target: what it compiles for (``tpu-v5e:16x16``), None for this process's devices.
        compiler_options: the libtpu flags it compiles with (a script's ``LIBTPU_INIT_ARGS``, train_compile's).
    """

    config: Any
    mesh: Any
    function: Any
    args: tuple[Any, ...]
    target: str | None
    compiler_options: Mapping[str, Any]
    in_shardings: Any
    out_shardings: Any
    donate_argnums: Any

    @contextlib.contextmanager
    def contexts(self) -> Iterator[None]:
        """MaxText's two lowering contexts (module docstring) and train_compile's PRNG implementation."""
        from flax.linen import logical_axis_rules

        with _prng(), jax.set_mesh(self.mesh), logical_axis_rules(self.config.logical_axis_rules):
            yield

    def lower(self) -> Lowered:
        """The step lowered inside MaxText's contexts."""
        with self.contexts():
            return self.function.lower(*self.args)

    def compile(self, lowered: Lowered | None = None) -> Compiled:
        """The step compiled for its target with its compiler options (this process's devices without a target)."""
        lowered = self.lower() if lowered is None else lowered
        if self.target is None:
            return lowered.compile()
        return lowered.compile(target=self.target, compiler_options=dict(self.compiler_options))

    def time(self, compiled: Compiled) -> StepTime:
        """The modelled step of ``compiled`` on its target's chips (``communication().time``)."""
        hardware = targets.profile_name(self.target)
        if hardware is None:
            raise ValueError("the time model needs a TPU target: build the step with target='tpu-v5e:16x16' or such")
        return compiled.communication().time(hardware)

    def to_html(self, compiled: Compiled, path: str | os.PathLike | None = None) -> Any:
        """``compiled``'s report page (``Compiled.to_html``) with MaxText's TFLOP/s per chip and MFU at the modelled
        step beside its step (where the model gives one)."""
        from shardkit.inspect import page

        communication = compiled.communication()
        timed = self.time(compiled)
        data = page.program(
            communication,
            name="MaxText's train step",
            memory=compiled.memory(),
            step=timed,
            performance=None if timed.refused is not None else self.performance(compiled, timed),
        )
        return page.save(page.program_page("program", [data], f"MaxText's train step for {self.target}"), path)

    @functools.cached_property
    def model_flops(self) -> float:
        """MaxText's count of one step's work per device, FLOP (``Performance.model_flops``)."""
        from maxtext.utils import maxtext_utils

        total, _, _ = maxtext_utils.calculate_tflops_training_per_device(self.config, log=False)
        return float(total) * 1e12

    def performance(self, compiled: Compiled, step: StepTime | None = None) -> Performance:
        """MaxText's TFLOP/s per chip and MFU at the modelled step of ``compiled`` (``step``: its
        ``communication().time()``, when made).

        Raises:
            ImpossibleEstimate: the step is refused, or MaxText's count of the work at it is above the chip's peak
                (MFU above 100%), or the compiled program does fewer flops than MaxText says the model needs.
        """
        step = self.time(compiled) if step is None else step
        program = step.flops
        found = Performance(self.model_flops, program, step.step, step.hardware.flops)
        if program is not None and program < 0.99 * found.model_flops:
            raise ImpossibleEstimate(
                f"the compiled program does {program:.4g} flops per device, fewer than the {found.model_flops:.4g} "
                "MaxText counts for its model: a part of the program was not read"
            )
        if found.mfu > 1:
            raise ImpossibleEstimate(
                f"MaxText's count of the step's work at the modelled step is {found.mfu:.0%} of the chip's peak "
                f"({found.tflops_per_chip:.1f} TFLOP/s per chip), above 100%"
            )
        return found


def train_step(config: str | os.PathLike, *overrides: str, target: str | None = None) -> TrainStep:
    """MaxText's train step built from ``config`` as MaxText's ``train_compile`` builds it (module docstring).

    Args:
        config: MaxText's config file or script, by path or by name in MaxText's configs (``base.yml``,
            ``tpu/v5e/16b.sh``).
        *overrides: MaxText's ``key=value`` settings, after the script's own.
        target: a TPU slice (``tpu-v5e:16x16``, ``tpu-v5p:4x4x8,slices=2``: one MaxText's topologies know) to
            compile for; None for this process's devices.

    Raises:
        ImportError: MaxText is not installed.
        ValueError: no such config, an override not of the form ``key=value``, a target MaxText does not know.
    """
    _require()
    path = _config_path(config)
    flags: dict[str, Any] = {}
    settings: tuple[str, ...] = ()
    if path.suffix == ".sh":
        script = Script.parse(path.read_text(), str(path))
        flags, settings, path = dict(script.flags), script.overrides, _config_path(script.config)
    for o in overrides:
        if not isinstance(o, str) or "=" not in o:
            raise ValueError(f"MaxText override {o!r} is not of the form key=value")
    topology = () if target is None else _topology(target)
    if target is not None:
        flags |= _TRAIN_COMPILE_FLAGS
    argv = ["shardkit", str(path), *_COMPILE_ONLY, "run_name=shardkit", *settings, *overrides, *topology]
    with _prng():
        return _build(argv, target, flags)


def _build(argv: list[str], target: str | None, flags: dict[str, Any]) -> TrainStep:
    """train_compile's steps (``main``), with shardkit's ``jit`` in place of ``jax.jit``."""
    from maxtext.configs import pyconfig
    from maxtext.trainers.pre_train import train, train_compile
    from maxtext.utils import maxtext_utils, sharding

    config = pyconfig.initialize(argv)
    if target is not None:
        mesh = train_compile.get_topology_mesh(config)
    else:
        mesh = jax.sharding.Mesh(maxtext_utils.create_device_mesh(config), config.mesh_axes)
    args, _, state_shardings, _, model = train_compile.get_shaped_inputs(mesh, config)
    params, state_shardings = sharding.maybe_update_params_sharding_with_opt(config, state_shardings)
    state_in = sharding.build_zero1_input_state_mesh_shardings(config, state_shardings, params)
    data = sharding.get_input_data_sharding(config, mesh)
    fun, in_shardings, out_shardings, static, donate = maxtext_utils.get_functional_train_with_signature(
        train.train_step, data, state_in, model, config, params
    )
    function = jit(
        fun, in_shardings=in_shardings, out_shardings=out_shardings, static_argnums=static, donate_argnums=donate
    )
    options = {**flags, **_flags(config.compile_xla_flags.replace("\\", " "))}
    return TrainStep(config, mesh, function, tuple(args), target, options, in_shardings, out_shardings, donate)


def _topology(target: str) -> tuple[str, ...]:
    """MaxText's ``compile_topology`` and slice count for a shardkit TPU target, from MaxText's own table of
    topologies (``accelerator_to_spec_map``)."""
    from maxtext.utils import accelerator_to_spec_map

    machine = targets.target(target)
    if machine.platform != "tpu":
        raise ValueError(f"MaxText compiles for TPU slices: target must be one such as 'tpu-v5e:16x16', got {target!r}")
    chips = machine.name.split(":", 1)[1].split(",")[0]
    slices = len({getattr(d, "slice_index", 0) for d in machine.devices})
    wanted = f"{'v5' if machine.generation == 'v5p' else machine.generation}:{chips}"
    names = [
        name
        for name, system in accelerator_to_spec_map.UserFacingNameToSystemCharacteristics.items()
        if system.platform == "tpu" and system.topology_name == wanted
    ]
    if not names:
        raise ValueError(f"MaxText knows no TPU topology {wanted} (target {target!r}): see its accelerator_to_spec_map")
    return (f"compile_topology={names[0]}", f"compile_topology_num_slices={slices}")


def _config_path(config: str | os.PathLike) -> pathlib.Path:
    path = pathlib.Path(config)
    if path.is_file():
        return path
    inside = configs_dir() / path
    if inside.is_file():
        return inside
    raise ValueError(
        f"no MaxText config {str(config)!r}: give a path, or a name inside MaxText's configs ({configs_dir()}), "
        "such as 'base.yml' or 'tpu/v5e/16b.sh'"
    )


@contextlib.contextmanager
def _prng() -> Iterator[None]:
    """jax's PRNG implementation set to train_compile's while MaxText builds, lowers and compiles (its state's key
    shapes follow it), restored after."""
    before = jax.config.jax_default_prng_impl
    jax.config.update("jax_default_prng_impl", _TRAIN_COMPILE_PRNG)
    try:
        yield
    finally:
        jax.config.update("jax_default_prng_impl", before)


def _require() -> None:
    why = installed()
    if why is not None:
        raise ImportError(why)
