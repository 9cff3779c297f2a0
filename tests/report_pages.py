"""The report pages of the examples, built once per test session (the GPT step for a TPU slice compiles once):
the MLP step of ``examples/mlp_2d.py``, the GPT-2 small step of ``examples/gpt_train_step.py`` for
``tpu-v5e:16x16``, an autoshard plan of the small GPT step for ``tpu-v5e:2x4``, and the diff of the MLP step on a
4x2 mesh against the same step data parallel on 8x1. Each is ``(page, reports)``: the page and the reports whose
JSON it must carry. ``benchmarks/bench_report_page.py`` times and photographs the same pages."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import shardkit as sk
from tests.examples import load_example

GPT_TARGET = "tpu-v5e:16x16"
PLAN_TARGET = "tpu-v5e:2x4"


@functools.cache
def mlp_compiled() -> Any:
    example = load_example("mlp_2d")
    train, params, data = example.build(sk.make_mesh((4, 2), ("x", "y")))
    return train.lower(*example.arguments(params, data)).compile()


@functools.cache
def mlp() -> tuple[sk.inspect.page.Page, dict[str, Any]]:
    return page_of(mlp_compiled(), "tpu-v5e")


@functools.cache
def gpt_compiled() -> Any:
    gpt = load_example("gpt_train_step")
    step, args = gpt.build(sk.AbstractMesh((16, 16), ("data", "model")), sizes=gpt.GPT2_SMALL, batch=32)
    return step.lower(*args).compile(target=GPT_TARGET)


@functools.cache
def gpt() -> tuple[sk.inspect.page.Page, dict[str, Any]]:
    return page_of(gpt_compiled(), None)


def page_of(compiled: Any, hardware: str | None) -> tuple[sk.inspect.page.Page, dict[str, Any]]:
    """``compiled.to_html(hardware=...)`` and the reports it is made of."""
    communication = compiled.communication()
    reports = {
        "communication": communication,
        "explanation": communication.explain(),
        "memory": compiled.memory(),
        "step": communication.time(hardware or "tpu-v5e"),
    }
    return compiled.to_html(hardware=hardware), reports


@functools.cache
def plan() -> tuple[sk.inspect.page.Page, dict[str, Any]]:
    gpt = load_example("gpt_train_step")
    state = {k: sk.ShapeDtypeStruct(shape, np.float32) for k, (shape, _) in gpt.PARAMS.items()}
    tokens = sk.ShapeDtypeStruct((gpt.BATCH, gpt.SEQ), np.int32)
    args = (state, state, state, sk.ShapeDtypeStruct((), np.float32), tokens, tokens)
    found = sk.autoshard(gpt.train_step, *args, target=PLAN_TARGET, donate_argnums=(0, 1, 2), confirm=2)
    return found.to_html(), {"table": found.table(), "explanation": found.explain(), "plan": found}


@functools.cache
def diff() -> tuple[sk.inspect.page.Page, dict[str, Any]]:
    example = load_example("mlp_2d")
    compiled = []
    for shape in ((4, 2), (8, 1)):
        train, params, data = example.build(sk.make_mesh(shape, ("x", "y")))
        compiled.append(train.lower(*example.arguments(params, data)).compile())
    found = sk.inspect.diff(*compiled)
    names = ("x=4 y=2 (data and model parallel)", "x=8 y=1 (data parallel)")
    return found.to_html(names=names, hardware="tpu-v5e"), {"diff": found}


PAGES = {"mlp": mlp, "gpt": gpt, "plan": plan, "diff": diff}
