"""The report pages of the examples in a real browser (headless Chromium, tests/browser.py): each opens offline
from its file with no console error, shows the numbers of the JSON reports it embeds, and its search, sorting and
selection work. Skipped, saying why, where there is no Chromium (./run test installs it where it can)."""

from __future__ import annotations

import math

import pytest

import shardkit as sk
from shardkit.autosharding.plan import human_seconds as plan_seconds
from shardkit.inspect.table import propagated_table
from shardkit.inspect.units import human_bytes
from tests import browser as browser_, report_pages
from tests.examples import load_example

pytestmark = pytest.mark.skipif(browser_.missing() is not None, reason=browser_.missing() or "")


@pytest.fixture(scope="session")
def files(tmp_path_factory):
    """Each example's page written to a file, built once per session."""
    out = tmp_path_factory.mktemp("pages")
    paths = {}
    for name, build in report_pages.PAGES.items():
        page, _ = build()
        paths[name] = str(out / f"{name}.html")
        page.save(paths[name])
    return paths


def cells(page, table: str, column: str) -> list[tuple[str, str | None]]:
    """(text, data-value) of one column of a table, in the order shown."""
    return page.eval_on_selector_all(
        f"table[data-table='{table}'] tbody td[data-col='{column}']",
        "tds => tds.map(td => [td.textContent, td.dataset.value === undefined ? null : td.dataset.value])",
    )


def chip(page, name: str) -> str:
    return page.text_content(f"header .chip[data-chip='{name}'] b")


@pytest.mark.parametrize("name", list(report_pages.PAGES))
def test_each_example_page_opens_offline_without_errors(browser, files, name, tmp_path):
    with browser_.opened(browser, files[name]) as (page, errors):
        page.screenshot(path=tmp_path / "page.png", full_page=True)
        assert errors == []
    assert (tmp_path / "page.png").stat().st_size > 20_000


@pytest.mark.parametrize("name", ["mlp", "gpt"])
def test_a_program_page_shows_its_reports_numbers(browser, files, name):
    _, reports = report_pages.PAGES[name]()
    comm, memory, step = reports["communication"], reports["memory"], reports["step"]
    with browser_.opened(browser, files[name]) as (page, errors):
        assert chip(page, "collectives") == str(len(comm.collectives))
        assert chip(page, "sent/device") == human_bytes(comm.wire_bytes)
        assert chip(page, "step") == f"{plan_seconds(step.step)} on {step.hardware.name}"
        capacity = f" of {human_bytes(memory.capacity)}" if memory.capacity else ""
        assert chip(page, "memory/device") == human_bytes(memory.total) + capacity
        sent = cells(page, "collectives", "sent/device")
        assert [int(v) for _, v in sent] == [c.wire_bytes for c in comm.collectives]
        assert [t for t, _ in sent] == [f"{c.wire_bytes:,}" for c in comm.collectives]
        times = cells(page, "collectives", "time")
        assert [float(v) for _, v in times] == [t.total for t in step.collectives]
        assert [t for t, _ in times] == [plan_seconds(t.total) for t in step.collectives]
        assert float(page.get_attribute("svg[data-step]", "data-step")) == step.step
        axes = cells(page, "by-axes", "communication")
        assert [float(v) for _, v in axes] == list(step.by_axes().values())
        peak = page.get_attribute(".bars [data-memory='peak'] .num, .bars [data-memory='total'] .num", "data-value")
        assert int(peak) == memory.total
        largest = cells(page, "buffers", "bytes")
        assert [int(v) for _, v in largest] == [b.bytes for b in memory.largest]
        assert errors == []


def test_a_refused_step_and_warnings_are_shown_not_drawn(browser, tmp_path):
    """A step the time model refuses (a figure that cannot be true) is said in place of the timeline and the step
    chip; a warning is shown above the timeline."""
    import dataclasses

    from shardkit.inspect import page as page_

    compiled = report_pages.mlp_compiled()
    communication = compiled.communication()
    step = communication.time("tpu-v5e")
    pages = {
        "refused": dataclasses.replace(step, refused="the modelled step is shorter than its flops at peak"),
        "warned": dataclasses.replace(step, warnings=("2 kernels without a cost estimate",)),
    }
    for name, timed in pages.items():
        data = page_.program(communication, step=timed, explain=False)
        page_.program_page("program", [data], name).save(tmp_path / f"{name}.html")
    with browser_.opened(browser, str(tmp_path / "refused.html")) as (page, errors):
        assert chip(page, "step") == "refused on tpu-v5e"
        assert "shorter than its flops at peak" in page.text_content("[data-refused]")
        assert page.query_selector("svg[data-step]") is None and errors == []
    with browser_.opened(browser, str(tmp_path / "warned.html")) as (page, errors):
        assert page.text_content(".warning") == "Warning: 2 kernels without a cost estimate"
        assert page.query_selector("svg[data-step]") is not None and errors == []


def test_offloaded_memory_is_the_hosts_on_the_page(browser, tmp_path):
    """A program that offloads to the host's memory: the page draws the device's upper bound and the host's bytes
    as a bar of their own, and says why XLA's peak is not shown."""
    from tests.test_targets import offloading_args, offloading_step

    s = sk.NamedSharding(sk.AbstractMesh((2, 2), ("x", "y")), sk.P())
    compiled = sk.jit(offloading_step()).lower(*offloading_args(s)).compile(target="tpu-v5e:2x2")
    memory = compiled.memory()
    compiled.to_html(tmp_path / "offload.html", explain=False)
    with browser_.opened(browser, str(tmp_path / "offload.html")) as (page, errors):
        assert int(page.get_attribute(".bars [data-memory='total'] .num", "data-value")) == memory.total
        assert int(page.get_attribute(".bars [data-memory='host (offloaded)'] .num", "data-value")) == memory.host
        assert "XLA's peak counts the host's memory as the device's" in page.text_content("#memory")
        assert cells(page, "buffers", "kind")[0][0] == "host" and errors == []


def test_search_sort_and_selection_on_the_values(browser, files):
    _, reports = report_pages.mlp()
    why = reports["explanation"]
    with browser_.opened(browser, files["mlp"]) as (page, errors):
        rows = page.locator("table[data-table='values'] tbody tr")
        total = rows.count()
        page.fill("input[type=search]", "dot_general")
        shown = rows.count()
        assert 0 < shown < total
        assert page.text_content("#values .count") == f"{shown} of {total} values"
        assert all(
            "dot_general" in t
            for t in page.eval_on_selector_all(
                "table[data-table='values'] tbody tr", "trs => trs.map(tr => tr.textContent)"
            )
        )
        page.fill("input[type=search]", "")
        assert rows.count() == total

        page.click("table[data-table='values'] th:has-text('bytes/device')")
        sizes = [int(v) for _, v in cells(page, "values", "bytes/device")]
        assert sizes == sorted(sizes, reverse=True)

        # the value a collective's explanation names: its tiles on the mesh, the collectives that move it
        cause = why.items[0].causes[0].value
        moved = page.locator(
            "table[data-table='values'] tbody tr", has=page.locator("td[data-col='collectives']", has_text="1")
        )
        moved.first.click()
        assert page.locator("#details .why").count() >= 1
        assert cause.source.rsplit("/", 1)[-1] in page.text_content("#details")
        tiles = page.eval_on_selector_all("#mesh rect[data-device]", "rs => rs.map(r => r.dataset.tile)")
        assert len(tiles) == 8 and all(tiles) and len(set(tiles)) > 1

        page.click(".axis-pick[data-axis='y']")  # device 0's group along 'y' stays, the rest fade
        assert page.locator("#mesh rect.out").count() == 8 - 2
        page.click("table[data-table='collectives'] tbody tr >> nth=1")
        assert page.text_content("#details h3") == "collective #1"
        assert why.items[1].summary in page.text_content("#details")
        assert errors == []


def test_a_value_split_over_sub_axes_is_painted_on_the_torus(browser, files):
    _, reports = report_pages.gpt()
    module, mesh, _ = reports["communication"].program
    row = next(r for r in propagated_table(module, mesh) if r.spec is None and '":(' in r.sdy)
    with browser_.opened(browser, files["gpt"]) as (page, errors):
        page.fill("input[type=search]", '":(')  # Shardy's sub-axis text, "model":(1)4
        page.locator("table[data-table='values'] tbody tr").first.click()
        assert page.text_content("#details dd >> nth=1") == row.sdy
        tiles = page.eval_on_selector_all("#mesh rect[data-device]", "rs => rs.map(r => r.dataset.tile)")
        assert len(tiles) == 256 and len(set(tiles)) == math.prod(row.pieces)
        assert errors == []


def test_the_plan_page_shows_every_candidate_and_xla_s_programs(browser, files):
    _, reports = report_pages.plan()
    table = reports["table"].to_dict()
    rows = table["candidates"]
    with browser_.opened(browser, files["plan"]) as (page, errors):
        assert page.locator("#plan circle[data-rank]").count() == len(rows)
        compiled = [r for r in rows if r["xla"] and r["xla"]["step_seconds"]]
        assert page.locator("#plan path[data-xla]").count() == len(compiled)
        distinct = [r for r in rows if r["alike"] == r["rank"]]
        steps = cells(page, "candidates", "step")
        assert [float(v) for _, v in steps] == [r["step_seconds"] for r in distinct]
        chosen = [t for t, _ in cells(page, "candidates", "#") if t.startswith("* ")]
        assert chosen == [f"* {next(r['rank'] for r in rows if r['chosen'])}"]
        assert errors == []


def test_the_diff_page_shows_both_programs_and_what_changed(browser, files):
    _, reports = report_pages.diff()
    d = reports["diff"]
    with browser_.opened(browser, files["diff"]) as (page, errors):
        assert page.locator("table[data-table='changed-values'] tbody tr").count() == len(d.values)
        assert page.locator(".program").count() == 2
        for axes, (before, after) in d.by_axes.items():
            shown = page.get_attribute(f".bars [data-axes=\"{axes}\"][data-side='after'] .num", "data-value")
            assert int(shown) == after
            shown = page.get_attribute(f".bars [data-axes=\"{axes}\"][data-side='before'] .num", "data-value")
            assert int(shown) == before
        assert errors == []


def test_each_chip_of_a_multi_slice_target_has_its_own_square(browser, tmp_path):
    example = load_example("mlp_2d")
    train, params, data = example.build(sk.make_mesh((4, 2), ("x", "y")))
    compiled = train.lower(*example.arguments(params, data)).compile(target="tpu-v5e:2x2,slices=2")
    compiled.to_html(tmp_path / "slices.html")
    with browser_.opened(browser, str(tmp_path / "slices.html")) as (page, errors):
        places = page.eval_on_selector_all(
            "#mesh rect[data-device]", "rs => rs.map(r => r.getAttribute('x') + ',' + r.getAttribute('y'))"
        )
        assert len(set(places)) == 8
        assert "2 slices, left to right" in page.text_content("#mesh .note")
        assert errors == []
