// shardkit's report page. It reads the JSON the reports wrote (embedded once, in #shardkit-data) and draws it:
// the mesh on the devices, the values and their tiles, the collectives and why, the step, memory, a plan's
// candidates, a diff's two programs. No framework and nothing fetched: plain DOM and SVG.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("shardkit-data").textContent);
  // The tile colours of shardkit.inspect.visualize.PALETTE, so a tile looks the same in the terminal and here.
  const PALETTE = ["#393B79", "#637939", "#8C6D31", "#843C39", "#7B4173", "#5254A3", "#8CA252", "#BD9E39",
    "#AD494A", "#A55194", "#6B6ECF", "#B5CF6B", "#E7BA52", "#D6616B", "#CE6DBD", "#9C9EDE", "#CEDB9C", "#E7CB94",
    "#E7969C", "#DE9ED6"];

  // -- numbers, as the text reports print them -------------------------------------------------------------

  // shardkit.inspect.units.human_bytes
  function humanBytes(n) {
    if (n === null || n === undefined) return "-";
    for (const [unit, scale] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]]) {
      if (n >= scale) return (n / scale).toFixed(1) + " " + unit;
    }
    return n + " B";
  }

  // shardkit.autosharding.plan.human_seconds (inspect.timing.human_seconds, and ns below a microsecond)
  function humanSeconds(s) {
    if (s === null || s === undefined) return "-";
    if (s === 0) return "0";
    if (s < 1e-6) return (s * 1e9).toFixed(0) + " ns";
    if (s >= 1) return s.toFixed(2) + " s";
    if (s >= 1e-3) return (s / 1e-3).toFixed(2) + " ms";
    return (s / 1e-6).toFixed(1) + " us";
  }

  const count = (n) => n.toLocaleString("en-US");
  const fileLine = (src) => (src ? src.split("/").pop() : "");
  const typeOf = (row) => `${row.dtype}[${row.shape.join(",")}]`;
  const specText = (spec) => spec === null ? null :
    "P(" + spec.map((e) => e === null ? "None" : Array.isArray(e) ? "(" + e.map((a) => `'${a}'`).join(", ") +
      (e.length === 1 ? ",)" : ")") : `'${e}'`).join(", ") + (spec.length === 1 ? ",)" : ")");

  // -- DOM -------------------------------------------------------------------------------------------------

  // Children as given: nested lists flattened, null and undefined left out.
  const nodes = (kids) => kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false);

  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    node.append(...nodes(kids));
    return node;
  }

  function svg(tag, attrs, ...kids) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (v !== null && v !== undefined) node.setAttribute(k, v);
    }
    node.append(...nodes(kids));
    return node;
  }

  const tip = (text) => svg("title", {}, text);
  const section = (id, title, note, ...kids) =>
    el("section", { id }, el("h2", { text: title }), note ? el("p", { class: "note", text: note }) : null, kids);

  // A table whose columns say how to show and sort a row: {title, value(row), text(row)?, num?, mono?, full(row)?}.
  // Numeric cells carry their exact number in data-value; the text shows it as the reports print it.
  function dataTable(columns, rows, { onPick, name, sortable = true } = {}) {
    const body = el("tbody");
    const head = el("tr");
    let keep = () => true, order = null;
    const draw = () => {
      const shown = rows.filter(keep);
      if (order) shown.sort(order);
      body.replaceChildren(...shown.map((row) => {
        const tr = el("tr", { class: onPick ? "clickable" : null, "data-key": row.__key });
        for (const c of columns) {
          const value = c.value(row);
          const text = c.text ? c.text(row) : value === null || value === undefined ? "" : String(value);
          const cls = [c.num ? "num" : "", c.mono ? "mono" : ""].join(" ").trim() || null;
          tr.append(el("td", { class: cls, "data-col": c.title, "data-value": c.num ? value : null,
            title: c.full ? c.full(row) : null }, text));
        }
        if (onPick) tr.addEventListener("click", () => onPick(row, tr));
        return tr;
      }));
      return shown.length;
    };
    columns.forEach((c) => {
      const th = el("th", { class: [c.num ? "num" : "", sortable ? "sortable" : ""].join(" ").trim() }, c.title);
      if (sortable) th.addEventListener("click", () => {
        const dir = th.classList.contains("sorted-desc") ? 1 : th.classList.contains("sorted-asc") ? -1 : c.num ? -1 : 1;
        head.querySelectorAll("th").forEach((h) => h.classList.remove("sorted-asc", "sorted-desc"));
        th.classList.add(dir > 0 ? "sorted-asc" : "sorted-desc");
        order = (a, b) => {
          const x = c.value(a), y = c.value(b);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;  // unknowns last, either way
          if (y === null || y === undefined) return -1;
          return (typeof x === "number" ? x - y : String(x).localeCompare(String(y))) * dir;
        };
        draw();
      });
      head.append(th);
    });
    draw();
    const table = el("table", { "data-table": name || null }, el("thead", {}, head), body);
    table.filterRows = (predicate) => { keep = predicate; return draw(); };
    return table;
  }

  function markSelected(tr) {
    document.querySelectorAll("tr.selected").forEach((r) => r.classList.remove("selected"));
    if (tr) tr.classList.add("selected");
  }

  // -- tiles: which piece of a value each device of the mesh holds ---------------------------------------------

  // Mesh coordinates of the device at position k (row-major over the mesh's axes, as shardkit lays meshes).
  function meshCoords(axes, k) {
    const out = new Array(axes.length);
    for (let i = axes.length - 1; i >= 0; i--) { out[i] = k % axes[i][1]; k = Math.floor(k / axes[i][1]); }
    return out;
  }

  // Per dimension, the mesh axes splitting it, major first, as {name, pre, size}: a whole axis (pre 1, its size)
  // or Shardy's sub-axis "x":(pre)size. From the value's PartitionSpec, else from its #sdy.sharding text; null
  // where neither says it (an axis not in this mesh).
  function splits(row, axes) {
    const sizes = Object.fromEntries(axes);
    let dims;
    if (row.spec !== null) {
      dims = row.shape.map((_, d) => {
        const e = row.spec[d] === undefined ? null : row.spec[d];
        return (e === null ? [] : Array.isArray(e) ? e : [e]).map((name) => ({ name, pre: 1, size: sizes[name] }));
      });
    } else {
      const list = row.sdy.slice(row.sdy.indexOf("["), row.sdy.lastIndexOf("]") + 1);
      dims = [...list.matchAll(/\{([^}]*)\}/g)].map((m) => [...m[1].matchAll(/"([^"]+)"(?::\((\d+)\)(\d+))?/g)]
        .map(([, name, pre, size]) => ({ name, pre: pre ? +pre : 1, size: size ? +size : sizes[name] })));
    }
    return dims.length === row.shape.length && dims.flat().every((r) => r.size) ? dims : null;
  }

  // The number of tiles along each dimension, and each device position's tile (a flat id, its per-dim index):
  // along a dimension, a device's index is its coordinates on the splitting (sub-)axes, major first.
  function tiling(dims, axes) {
    const index = Object.fromEntries(axes.map(([name], i) => [name, i]));
    const counts = dims.map((refs) => refs.reduce((n, r) => n * r.size, 1));
    const size = axes.reduce((n, a) => n * a[1], 1);
    const tiles = [];
    for (let k = 0; k < size; k++) {
      const c = meshCoords(axes, k);
      const at = dims.map((refs) => refs.reduce((t, r) => t * r.size + Math.floor(c[index[r.name]] / r.pre) % r.size, 0));
      tiles.push({ at, id: at.reduce((f, t, d) => f * counts[d] + t, 0) });
    }
    return { counts, tiles };
  }

  // The tiles as jax.debug.visualize_array_sharding draws them: leading dimensions flattened into rows, the
  // last into columns, each tile labelled with the devices holding it.
  function tileGrid(dims, mesh) {
    const rank = dims.length;
    const { counts, tiles } = tiling(dims, mesh.axes);
    const cols = rank ? counts[rank - 1] : 1;
    const holders = new Map();
    tiles.forEach((t, k) => holders.set(t.id, [...(holders.get(t.id) || []), mesh.device_ids[k]]));
    const grid = el("div", { class: "tiles", style: `grid-template-columns: repeat(${cols}, auto)` });
    const total = counts.reduce((n, c) => n * c, 1);
    for (let id = 0; id < total; id++) {
      const devs = (holders.get(id) || []).sort((a, b) => a - b);
      const label = devs.length > 6 ? `${devs.slice(0, 4).join(",")},… (${devs.length})` : devs.join(",");
      grid.append(el("div", { style: `background:${PALETTE[id % PALETTE.length]}`, title: `devices ${devs.join(", ")}` },
        label));
    }
    return grid;
  }

  // A value's tiles in the details panel: the grid where it is small enough to read, else how many there are.
  function tilesOf(row, mesh) {
    const dims = splits(row, mesh.axes);
    if (!dims) return null;
    const total = dims.flat().reduce((n, r) => n * r.size, 1);
    return total <= 64 ? tileGrid(dims, mesh) : el("p", { class: "note", text: `${total} tiles: see them on the mesh` });
  }

  // -- the mesh on the devices ---------------------------------------------------------------------------------

  // Each device position's cell: on a TPU slice where its chip sits on the torus (one small grid per z plane),
  // elsewhere the mesh folded into rows (first axis) and columns (the rest).
  function layout(mesh) {
    const n = mesh.device_ids.length;
    if (mesh.coords) {  // planes of a 3-D slice side by side, then the slices of a multi-slice target
      const [X, Y, Z] = [mesh.torus[0], mesh.torus[1] || 1, mesh.torus[2] || 1];
      const S = mesh.slices ? Math.max(...Object.values(mesh.slices)) + 1 : 1;
      const cells = mesh.device_ids.map((id) => {
        const [x, y = 0, z = 0] = mesh.coords[String(id)];
        const slice = mesh.slices ? mesh.slices[String(id)] : 0;
        return { col: x + (z + slice * Z) * (X + 1), row: y };
      });
      return { cells, cols: S * Z * (X + 1) - 1, rows: Y, torus: true, planes: Z, slices: S };
    }
    const rows = mesh.axes.length > 1 ? mesh.axes[0][1] : 1;
    const cols = Math.max(1, Math.round(n / rows));
    return { cells: mesh.device_ids.map((_, k) => ({ row: Math.floor(k / cols), col: k % cols })), cols, rows };
  }

  function meshPanel(program, state) {
    const mesh = program.mesh;
    const place = layout(mesh);
    const size = Math.max(14, Math.min(72, Math.floor(560 / Math.max(place.cols, place.rows))));
    const width = place.cols * size, height = place.rows * size;
    const cells = place.cells.map((c, k) => {
      const id = mesh.device_ids[k];
      const coords = meshCoords(mesh.axes, k).map((v, i) => `${mesh.axes[i][0]}=${v}`).join(" ");
      const where = mesh.coords ? `, chip (${mesh.coords[String(id)].join(",")})` : "";
      const rect = svg("rect", { class: "dev", x: c.col * size, y: c.row * size, width: size, height: size,
        fill: "#c8d0db", "data-device": id }, tip(`device ${id}: mesh ${coords}${where}`));
      const label = size >= 24 ? svg("text", { x: c.col * size + size / 2, y: c.row * size + size / 2 + 4,
        "text-anchor": "middle", "font-size": Math.min(12, size / 3), fill: "#fff", "pointer-events": "none" },
      String(id)) : null;
      return { rect, label };
    });
    const picture = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img" },
      cells.map((c) => [c.rect, c.label]));
    const caption = el("div", { class: "legend" });
    const axisPicks = el("div", { class: "legend" }, el("span", { text: "highlight a group along:" }),
      mesh.axes.map(([name, s]) => el("span", { class: "axis-pick", "data-axis": name, text: `${name} (${s})`,
        onclick: (e) => { state.axis = state.axis === name ? null : name; paint(); e.currentTarget.blur(); } })));

    // Colours each device by the tile of the selected value it holds; fades all but the group of device 0 (or of
    // the last one hovered) along the chosen axis, which shows how that mesh axis lies on the chips.
    function paint() {
      const value = state.value;
      const dims = value ? splits(value, mesh.axes) : null;
      const tiles = dims ? tiling(dims, mesh.axes) : null;
      cells.forEach((c, k) => {
        c.rect.setAttribute("fill", tiles ? PALETTE[tiles.tiles[k].id % PALETTE.length] : "#c8d0db");
        c.rect.dataset.tile = tiles ? tiles.tiles[k].at.join(",") : "";
      });
      const anchor = meshCoords(mesh.axes, state.anchor || 0);
      const axis = mesh.axes.findIndex(([name]) => name === state.axis);
      cells.forEach((c, k) => {
        const mine = meshCoords(mesh.axes, k);
        const inGroup = axis >= 0 && mine.every((v, i) => i === axis || v === anchor[i]);
        c.rect.classList.toggle("out", axis >= 0 && !inGroup);
      });
      caption.replaceChildren(value ? (tiles === null ?
        el("span", { text: `${value.label}: ${value.sdy} (its axes are not this mesh's: not painted)` }) :
        el("span", {}, el("b", { text: value.label }), ` ${specText(value.spec) || value.sdy}: ${tiles.counts.join(" x ")} tiles, `,
          `each held by ${tiles.tiles.length / tiles.counts.reduce((n, c) => n * c, 1)} device(s); colour = tile`)) :
        el("span", { text: "select a value below to paint its tiles on the devices" }));
      axisPicks.querySelectorAll(".axis-pick").forEach((p) => p.classList.toggle("on", p.dataset.axis === state.axis));
    }
    cells.forEach((c, k) => c.rect.addEventListener("mouseenter", () => { if (state.axis) { state.anchor = k; paint(); } }));
    state.paint = paint;
    paint();
    const axes = mesh.axes.map(([n, s]) => `${n}=${s}`).join(" x ") || "no mesh";
    const where = mesh.coords ? `laid on the chips of a ${mesh.torus.join("x")} slice (${mesh.wraps.map((w, i) =>
      `dim ${i} ${w ? "wraps" : "open"}`).join(", ")}${place.planes > 1 ? "; one grid per z plane" : ""}` +
      `${place.slices > 1 ? `; ${place.slices} slices, left to right` : ""})` :
      "rows: the first axis, columns: the others";
    return section("mesh", "The mesh on the devices", `${axes}, ${mesh.device_ids.length} devices, ${where}.`,
      axisPicks, el("div", { class: "scroll", style: "max-height:none;border:none" }, picture), caption);
  }

  // -- one program ------------------------------------------------------------------------------------------

  // The explanation of each collective (by report index), and the collectives whose causes name each value.
  function explanations(program) {
    const items = program.explanation ? program.explanation.collectives : [];
    const byValue = new Map();
    items.forEach((item, i) => item.causes.forEach((cause) => {
      const v = cause.value;
      const key = `${v.op}|${v.index}|${v.op_name}|${v.source}`;
      if (!byValue.has(key)) byValue.set(key, new Set());
      byValue.get(key).add(i);
    }));
    return { items, byValue };
  }

  function whyBlock(program, i, why) {
    const c = program.communication.collectives[i];
    const item = why.items[i];
    const timed = program.step ? program.step.collectives[i] : null;
    return el("div", { class: "why", "data-collective": i },
      el("div", { class: "what" }, `#${i} ${c.kind} over ${c.over}`,
        ` of ${c.results.join(", ")}: ${humanBytes(c.wire_bytes_per_device)} sent per device x ${c.executions}`,
        timed ? `, ${humanSeconds(timed.total_seconds)} (${humanSeconds(timed.exposed_seconds)} exposed)` : ""),
      item ? el("div", {}, item.reasons.map((r) => el("span", { class: "tag", text: r })), item.summary) :
        el("div", { class: "empty", text: "no explanation in this report" }));
  }

  function details(program, state, why) {
    const box = el("div", { class: "details" });
    function show(kind, thing) {
      if (kind === "value") {
        const r = thing;
        const key = `${r.op}|${r.index}|${r.op_name}|${r.source}`;
        const moving = [...(why.byValue.get(key) || [])];
        const atLine = program.communication.collectives.map((c, i) => [c, i])
          .filter(([c, i]) => r.source && c.source === r.source && !moving.includes(i)).map(([, i]) => i);
        box.replaceChildren(...nodes([
          el("h3", { text: `${r.op} #${r.index}` }),
          el("dl", {},
            el("dt", { text: "type" }), el("dd", { text: typeOf(r) }),
            el("dt", { text: "sharding" }), el("dd", { text: specText(r.spec) || r.sdy }),
            el("dt", { text: "per device" }), el("dd", { text: r.shard_shape ? `${r.dtype}[${r.shard_shape.join(",")}]`
              + `, ${humanBytes(r.bytes_per_device)}` : "-" }),
            el("dt", { text: "jax op" }), el("dd", { text: r.op_name || "-" }),
            el("dt", { text: "line" }), el("dd", { text: r.source || "-" })),
          tilesOf(r, program.mesh),
          el("div", { class: "note", text: moving.length ? `collectives that move it (${moving.length}):` :
            "no collective of this program moves it" }),
          moving.map((i) => whyBlock(program, i, why)),
          atLine.length ? el("div", { class: "note", text: `other collectives at its line (${atLine.length}):` }) : null,
          atLine.map((i) => whyBlock(program, i, why))]));
      } else {
        box.replaceChildren(...nodes([el("h3", { text: `collective #${thing}` }), whyBlock(program, thing, why),
          explainedValues(program, why.items[thing])]));
      }
    }
    state.show = show;
    // Until something is picked: the costliest collectives (modelled time, else bytes sent per call).
    const cost = (i) => program.step ? program.step.collectives[i].total_seconds :
      program.communication.collectives[i].wire_bytes_per_device * program.communication.collectives[i].executions;
    const costliest = program.communication.collectives.map((_, i) => i).sort((a, b) => cost(b) - cost(a)).slice(0, 3);
    box.append(...nodes([el("p", { class: "note", text: costliest.length ? "The costliest collectives (click a value, " +
      "a collective or a bar of the timeline for more):" : "Click a value for its tiles and source line." }),
    costliest.map((i) => whyBlock(program, i, why))]));
    return section("details", "Selected", null, box);
  }

  // The values a collective's causes name (link back into the values table) and where their shardings came from.
  function explainedValues(program, item) {
    if (!item || !item.causes.length) return null;
    return el("div", {}, item.causes.slice(0, 6).map((c) => el("dl", {},
      el("dt", { text: "value" }), el("dd", { text: `${c.value.op} #${c.value.index} ${c.value.type} at ${c.value.source || "?"}` }),
      el("dt", { text: c.have.role }), el("dd", { text: `${c.have.spec} ${c.have.origins.map(originText).join("; ")}` }),
      el("dt", { text: c.need.role }), el("dd", { text: `${c.need.spec} ${c.need.origins.map(originText).join("; ")}` }))));
  }
  const originText = (o) => `(${o.label} ${o.spec}${o.source ? " at " + fileLine(o.source) : ""})`;

  function valuesPanel(program, state, why) {
    const rows = program.table.map((r, i) => ({ ...r, __key: `v${i}`,
      __text: `${r.op} ${typeOf(r)} ${specText(r.spec) || r.sdy} ${r.op_name} ${r.source || ""}`.toLowerCase() }));
    const moves = (r) => (why.byValue.get(`${r.op}|${r.index}|${r.op_name}|${r.source}`) || new Set()).size;
    const columns = [
      { title: "op", value: (r) => r.op, mono: true },
      { title: "#", value: (r) => r.index, num: true },
      { title: "type", value: typeOf, mono: true },
      { title: "sharding", value: (r) => specText(r.spec) || r.sdy, mono: true },
      { title: "per device", value: (r) => r.shard_shape ? `${r.dtype}[${r.shard_shape.join(",")}]` : "", mono: true },
      { title: "bytes/device", value: (r) => r.bytes_per_device, text: (r) => humanBytes(r.bytes_per_device), num: true },
      { title: "collectives", value: moves, num: true, text: (r) => moves(r) || "" },
      { title: "jax op", value: (r) => r.op_name, mono: true },
      { title: "line", value: (r) => fileLine(r.source), full: (r) => r.source || "", mono: true },
    ];
    const table = dataTable(columns, rows, { name: "values", onPick: (r, tr) => {
      markSelected(tr); state.value = { ...r, label: `${r.op} #${r.index}` }; state.paint(); state.show("value", r);
    } });
    const shown = el("span", { class: "count", text: `${rows.length} values` });
    const search = el("input", { type: "search", placeholder: "search: op, type, sharding, jax op, file:line",
      "aria-label": "search values" });
    search.addEventListener("input", () => {
      const q = search.value.trim().toLowerCase();
      const n = table.filterRows((r) => !q || r.__text.includes(q));
      shown.textContent = q ? `${n} of ${rows.length} values` : `${rows.length} values`;
    });
    return section("values", "Values", "Every value after Shardy's propagation: arguments and op results, with the " +
      "sharding Shardy chose, the piece each device holds and its Python line. Click a header to sort, a row to " +
      "paint its tiles on the mesh and see the collectives that move it.",
    el("div", { class: "toolbar" }, search, shown), el("div", { class: "scroll" }, table));
  }

  function collectivesPanel(program, state, why) {
    const comm = program.communication;
    const step = program.step;
    const rows = comm.collectives.map((c, i) => ({ ...c, i, __key: `c${i}`, time: step ? step.collectives[i] : null,
      reasons: why.items[i] ? why.items[i].reasons : [] }));
    const label = comm.columns;  // the text report's column labels
    const columns = [
      { title: label.index, value: (c) => c.i, num: true },
      { title: label.kind, value: (c) => c.kind + (c.is_async ? " (async)" : "") },
      { title: label.over, value: (c) => c.over, mono: true },
      { title: label.operands, value: (c) => c.operands.join(", "), mono: true },
      { title: label.results, value: (c) => c.results.join(", "), mono: true },
      { title: label.bytes, value: (c) => c.bytes_per_device, text: (c) => count(c.bytes_per_device), num: true },
      { title: label.sent, value: (c) => c.wire_bytes_per_device, text: (c) => count(c.wire_bytes_per_device), num: true },
      { title: label.runs, value: (c) => c.executions, num: true },
    ];
    if (step) columns.push(
      { title: "time", value: (c) => c.time.total_seconds, text: (c) => humanSeconds(c.time.total_seconds), num: true },
      { title: "exposed", value: (c) => c.time.exposed_seconds, text: (c) => humanSeconds(c.time.exposed_seconds), num: true });
    columns.push({ title: "why", value: (c) => c.reasons.join(" ") },
      { title: "line", value: (c) => fileLine(c.source), full: (c) => c.source || "", mono: true });
    const table = dataTable(columns, rows, { name: "collectives", onPick: (c, tr) => { markSelected(tr); state.show("collective", c.i); } });
    const totals = Object.entries(comm.by_axes).map(([axes, t]) => el("span", {}, el("b", { text: axes }),
      `: ${t.ops} ops, ${t.executions} runs, ${humanBytes(t.wire_bytes)} sent/device`));
    return section("collectives", `Collectives: ${comm.collectives.length}`, `${comm.title}: ${humanBytes(comm.wire_bytes_per_device)} sent ` +
      "per device per call. Click a row for why it is there.", el("div", { class: "legend" }, totals),
    rows.length ? el("div", { class: "scroll" }, table) : el("p", { class: "empty", text: "no collectives" }));
  }

  // The step as in StepTime.save_image: compute on one row, each collective on its axes' row in program order,
  // the hidden parts under the compute, the exposed parts after it.
  function timelinePanel(program, state) {
    const step = program.step;
    if (!step) {
      return section("timeline", "The modelled step", null, el("p", { class: "empty", text:
        program.communication.stage === "xla" ? "No hardware profile to time it on: give one (to_html(hardware=" +
        "'tpu-v5e'), shardkit-report --hardware), or compile for a TPU target." :
          "Shardy's plan has no device groups to time: compile it (Compiled.to_html) for the modelled step." }));
    }
    const warnings = step.warnings.map((w) => el("p", { class: "warning", text: `Warning: ${w}` }));
    if (step.refused) {  // a figure that cannot be true is never drawn (StepTime.refused)
      return section("timeline", `The modelled step on ${step.hardware}: refused`, null,
        el("p", { class: "warning", "data-refused": "true", text: `No modelled step: ${step.refused}.` }));
    }
    const names = ["compute / memory", ...new Set(step.collectives.map((t) => t.over))];
    const end = Math.max(step.step_seconds, 1e-12);
    const W = 900, left = 150, rowH = 24, top = 8, H = top + names.length * rowH + 34;
    const x = (s) => left + (s / end) * (W - left - 10);
    const kids = [];
    names.forEach((name, r) => kids.push(svg("text", { x: left - 8, y: top + r * rowH + 16, "text-anchor": "end",
      "font-size": 11, fill: "#33415a" }, name)));
    const colours = { compute: "#3b5b92", hidden: "#9ec5f0", exposed: "#d9412b" };
    const bars = [];
    for (const seg of step.timeline) {  // StepTime.timeline(): laid out by the time model, drawn here
      const r = names.indexOf(seg.row);
      const box = { x: x(seg.start), y: top + r * rowH + 4, width: Math.max(1, x(seg.start + seg.seconds) - x(seg.start)),
        height: rowH - 8, fill: colours[seg.part] };
      if (seg.index === null) {
        kids.push(svg("rect", box, tip(`compute ${humanSeconds(step.compute_seconds)}, memory ${humanSeconds(step.memory_seconds)}`)));
        continue;
      }
      const t = step.collectives[seg.index];
      const bar = svg("rect", { ...box, class: "bar", "data-collective": t.index, "data-part": seg.part,
        onclick: () => { state.show("collective", t.index);
          bars.forEach((b) => b.classList.toggle("selected", b.dataset.collective === String(t.index))); } },
      tip(`#${t.index} ${t.kind} over ${t.over}: ${humanSeconds(seg.seconds)} ${seg.part === "hidden" ?
        "hidden under compute" : "exposed"} (${humanBytes(t.wire_bytes_per_device)} x ${t.executions})`));
      bars.push(bar); kids.push(bar);
    }
    const axisY = top + names.length * rowH + 4;
    kids.push(svg("line", { x1: x(0), x2: x(end), y1: axisY, y2: axisY, stroke: "#99a3b0" }));
    for (let i = 0; i <= 5; i++) {
      kids.push(svg("text", { x: x((end * i) / 5), y: axisY + 14, "text-anchor": i === 5 ? "end" : "middle", "font-size": 10, fill: "#5f6b7a" },
        humanSeconds((end * i) / 5)));
    }
    kids.push(svg("line", { x1: x(step.step_seconds), x2: x(step.step_seconds), y1: top, y2: axisY, stroke: "#111",
      "stroke-dasharray": "4 3" }, tip(`step ${humanSeconds(step.step_seconds)}`)));
    const picture = svg("svg", { width: "100%", viewBox: `0 0 ${W} ${H}`, style: "max-width:1100px", role: "img",
      "data-step": step.step_seconds }, kids);
    const byAxes = Object.entries(step.by_axes).map(([axes, s]) => ({ axes, s, t: program.communication.by_axes[axes] }));
    const totals = dataTable([
      { title: "mesh axes", value: (r) => r.axes, mono: true },
      { title: "collectives", value: (r) => r.t ? r.t.ops : 0, num: true },
      { title: "sent/device", value: (r) => r.t ? r.t.wire_bytes : 0, text: (r) => humanBytes(r.t ? r.t.wire_bytes : 0), num: true },
      { title: "communication", value: (r) => r.s, text: (r) => humanSeconds(r.s), num: true },
    ], byAxes, { name: "by-axes", sortable: false });
    const busy = Object.entries(step.busy_seconds).map(([k, v]) => `${k} ${humanSeconds(v)}`).join(", ") || "nothing";
    const basis = step.scheduled ? `on XLA's schedule = busy (${busy})` :
      `= max(compute ${humanSeconds(step.compute_seconds)}, memory ${humanSeconds(step.memory_seconds)})`;
    const peak = step.utilization === null ? "" : ` The program's flops run at ${Math.round(100 * step.utilization)}% of peak.`;
    return section("timeline", `The modelled step on ${step.hardware}: ${humanSeconds(step.step_seconds)}`,
      `step ${basis} + ${humanSeconds(step.exposed_seconds)} exposed communication ` +
      `(of ${humanSeconds(step.communication_seconds)}).${peak} ` +
      "Dark: compute; light: communication hidden under it (async, in program order); red: exposed, after it; " +
      "dashed: the step. Click a bar for the collective.", ...warnings,
    el("div", { class: "legend" }, [["#3b5b92", "compute / memory"], ["#9ec5f0", "hidden"], ["#d9412b", "exposed"]]
      .map(([c, t]) => el("span", {}, el("span", { class: "sw", style: `background:${c}` }), t))), picture,
    el("div", { style: "max-width:560px" }, totals));
  }

  function memoryPanel(program) {
    const m = program.memory;
    if (!m) {
      return section("memory", "Memory per device", null, el("p", { class: "empty", text:
        "Compile the program (Compiled.to_html) for XLA's memory per device." }));
    }
    const parts = [["arguments", m.arguments, "#5254A3"], ["outputs, not aliased", m.outputs - m.aliased, "#8CA252"],
      ["temporaries", m.temporaries, "#E7BA52"], ["code", m.code, "#AD494A"]];
    const scale = Math.max(m.capacity || 0, m.total, parts.reduce((n, p) => n + p[1], 0), m.host || 0, 1);
    const bar = (label, value, colour, text) => el("div", { class: "bar-row", "data-memory": label },
      el("span", { text: label }), el("div", { class: "track" }, el("div", { class: "fill",
        style: `width:${(100 * value) / scale}%;background:${colour}` })), el("span", { class: "num", "data-value": value,
        text: text || humanBytes(value) }));
    const verdict = m.error ? el("span", { class: "tag bad", text: "does not fit: XLA refused it" }) :
      m.fits === null ? null : el("span", { class: `tag ${m.fits ? "good" : "bad"}`, text: m.fits ? "fits" : "DOES NOT FIT" });
    const buffers = dataTable([
      { title: "kind", value: (b) => b.kind },
      { title: "shape/device", value: (b) => b.shape, mono: true },
      { title: "bytes", value: (b) => b.bytes, text: (b) => humanBytes(b.bytes), num: true },
      { title: "jax op", value: (b) => b.op_name, mono: true },
      { title: "line", value: (b) => fileLine(b.source), full: (b) => b.source || "", mono: true },
    ], m.largest.map((b, i) => ({ ...b, __key: `b${i}` })), { name: "buffers" });
    return section("memory", `Memory per device: ${humanBytes(m.total)}${m.capacity ? " of " + humanBytes(m.capacity) : ""}`,
      `XLA's sizes for ${m.target || "this process's devices"} (${m.num_devices} devices). ` +
      `${m.peak ? "The peak is XLA's own; the parts below are what the program holds in all, not all live at once." :
        m.host ? "XLA's peak counts the host's memory as the device's: the total is everything on the device live at " +
        "once, an upper bound." : "No peak from this backend: the total is everything live at once, an upper bound."}` +
      `${m.host ? " Host (offloaded): what XLA keeps in the host's memory, not the device's." : ""}`,
      m.error ? el("p", { class: "empty", text: m.error }) : null, verdict,
      el("div", { class: "bars", style: "max-width:720px;margin:8px 0" },
        parts.map(([l, v, c]) => bar(l, v, c)), bar(m.peak ? "peak" : "total", m.total, "#1d2330"),
        m.capacity ? bar("capacity", m.capacity, "#c8d0db") : null,
        m.host ? bar("host (offloaded)", m.host, "#9aa5b1") : null),
      el("div", { class: "note", text: `the ${m.largest.length} largest buffers, with the lines that made them:` }),
      el("div", { class: "scroll" }, buffers));
  }

  function programView(program) {
    const state = { value: null, axis: null, anchor: 0, paint: () => {}, show: () => {} };
    const why = explanations(program);
    const view = el("div", { class: "program", "data-program": program.name });
    view.append(el("div", { class: "grid2 row" }, meshPanel(program, state), details(program, state, why)));
    view.append(timelinePanel(program, state), collectivesPanel(program, state, why));
    if (program.table) view.append(valuesPanel(program, state, why));
    view.append(memoryPanel(program));
    return view;
  }

  function summaryChips(program) {
    const c = program.communication, m = program.memory, s = program.step;
    const chips = [
      ["devices", String(c.num_devices)],
      ["mesh", program.mesh.axes.map(([n, v]) => `${n}=${v}`).join(" ") || "none"],
      ["collectives", String(c.collectives.length)],
      ["sent/device", humanBytes(c.wire_bytes_per_device)],
    ];
    if (m) chips.unshift(["target", m.target || "this process's devices"]);
    if (s) chips.push(["step", s.refused ? `refused on ${s.hardware}` : `${humanSeconds(s.step_seconds)} on ${s.hardware}`]);
    const p = program.performance;  // a trainer's count of its work at the step (MaxText's TFLOP/s per chip, MFU)
    if (p) chips.push(["MFU", `${(100 * p.mfu).toFixed(1)}% (${p.tflops_per_chip.toFixed(1)} TFLOP/s/chip)`]);
    if (m) chips.push(["memory/device", humanBytes(m.total) + (m.capacity ? ` of ${humanBytes(m.capacity)}` : "")]);
    return el("div", { class: "chips" }, chips.map(([k, v]) => el("span", { class: "chip", "data-chip": k },
      el("span", { text: k }), el("b", { text: v }))));
  }

  // -- a plan: the candidates against memory, and why the winner wins ----------------------------------------

  function planPanel(plan) {
    const t = plan.table, rows = t.candidates;
    const shown = rows.filter((r) => r.alike === r.rank);
    const runner = plan.explanation.runner_up;
    const isRunner = (r) => runner && r.summary === runner.layout && JSON.stringify(r.mesh) === JSON.stringify(runner.mesh);
    const W = 720, H = 360, pad = { l: 70, r: 20, t: 12, b: 40 };
    const xs = rows.flatMap((r) => [r.peak_bytes_per_device, r.xla && r.xla.peak_bytes_per_device]).filter((v) => v > 0);
    const ys = rows.flatMap((r) => [r.step_seconds, r.xla && r.xla.step_seconds]).filter((v) => v > 0);
    const limitShown = t.memory_limit && t.memory_limit < 10 * Math.max(...xs);  // else it would squeeze the points
    if (limitShown) xs.push(t.memory_limit);
    // log scales a little wider than the points; bytes ticked at powers of two, seconds at 1, 2 and 5 x 10^k
    const lg = Math.log10;
    const [x0, x1] = [lg(Math.min(...xs) / 1.3), lg(Math.max(...xs) * 1.3)];
    const [y0, y1] = [lg(Math.min(...ys) / 1.3), lg(Math.max(...ys) * 1.3)];
    const X = (v) => pad.l + ((lg(v) - x0) / (x1 - x0)) * (W - pad.l - pad.r);
    const Y = (v) => H - pad.b - ((lg(v) - y0) / (y1 - y0)) * (H - pad.t - pad.b);
    const inside = (lo, hi) => (v) => lg(v) >= lo && lg(v) <= hi;
    const twos = Array.from({ length: 64 }, (_, k) => 2 ** k).filter(inside(x0, x1));
    const xTicks = twos.filter((_, i) => i % Math.ceil(twos.length / 8) === 0);
    const yTicks = Array.from({ length: 24 }, (_, i) => i - 12).flatMap((d) => [1, 2, 5].map((m) => m * 10 ** d))
      .filter(inside(y0, y1));
    const kids = [];
    for (const v of xTicks) kids.push(svg("line", { x1: X(v), x2: X(v), y1: pad.t, y2: H - pad.b, stroke: "#eef1f4" }),
      svg("text", { x: X(v), y: H - pad.b + 14, "text-anchor": "middle", "font-size": 10, fill: "#5f6b7a" }, humanBytes(v)));
    for (const v of yTicks) kids.push(svg("line", { x1: pad.l, x2: W - pad.r, y1: Y(v), y2: Y(v), stroke: "#eef1f4" }),
      svg("text", { x: pad.l - 6, y: Y(v) + 3, "text-anchor": "end", "font-size": 10, fill: "#5f6b7a" }, humanSeconds(v)));
    kids.push(svg("text", { x: (W + pad.l) / 2, y: H - 6, "text-anchor": "middle", "font-size": 11 }, "memory per device (log)"),
      svg("text", { x: 12, y: H / 2, transform: `rotate(-90 12 ${H / 2})`, "text-anchor": "middle", "font-size": 11 }, "modelled step (log)"));
    if (limitShown) kids.push(svg("line", { x1: X(t.memory_limit), x2: X(t.memory_limit), y1: pad.t, y2: H - pad.b,
      stroke: "#d9412b", "stroke-dasharray": "5 3" }, tip(`memory limit ${humanBytes(t.memory_limit)}`)));
    const meshText = (r) => Object.entries(r.mesh).map(([n, s]) => `${n}=${s}`).join(" ");
    [...rows].reverse().forEach((r) => {
      const colour = r.chosen ? "#1b9e3e" : isRunner(r) ? "#e07b00" : r.fits === false ? "#d9a0a0" : "#7d8aa0";
      const label = `#${r.rank} ${meshText(r)} | ${r.summary}: step ${humanSeconds(r.step_seconds)}, ${humanBytes(r.peak_bytes_per_device)}/device`;
      if (r.xla && r.xla.step_seconds) {
        kids.push(svg("line", { x1: X(r.peak_bytes_per_device), y1: Y(r.step_seconds), x2: X(r.xla.peak_bytes_per_device),
          y2: Y(r.xla.step_seconds), stroke: colour, "stroke-dasharray": "2 2" }));
        const [cx, cy] = [X(r.xla.peak_bytes_per_device), Y(r.xla.step_seconds)];
        kids.push(svg("path", { d: `M${cx} ${cy - 6}L${cx + 6} ${cy}L${cx} ${cy + 6}L${cx - 6} ${cy}Z`, fill: colour,
          stroke: "#111", "data-xla": r.rank }, tip(`XLA's program for #${r.rank}: step ${humanSeconds(r.xla.step_seconds)}, ${humanBytes(r.xla.peak_bytes_per_device)}/device`)));
      }
      kids.push(svg("circle", { cx: X(r.peak_bytes_per_device), cy: Y(r.step_seconds), r: r.chosen || isRunner(r) ? 6 : 3.5,
        fill: colour, stroke: r.chosen ? "#111" : "none", "data-rank": r.rank }, tip(label)));
    });
    const chart = svg("svg", { width: "100%", viewBox: `0 0 ${W} ${H}`, style: "max-width:760px", role: "img" }, kids);
    const table = dataTable([
      { title: "#", value: (r) => r.rank, num: true, text: (r) => (r.chosen ? "* " : "") + r.rank },
      { title: "mesh", value: meshText, mono: true },
      { title: "step", value: (r) => r.step_seconds, text: (r) => humanSeconds(r.step_seconds), num: true },
      { title: "compute", value: (r) => r.compute_seconds, text: (r) => humanSeconds(r.compute_seconds), num: true },
      { title: "memory", value: (r) => r.memory_seconds, text: (r) => humanSeconds(r.memory_seconds), num: true },
      { title: "comm", value: (r) => r.communication_seconds, text: (r) => humanSeconds(r.communication_seconds), num: true },
      { title: "sent/dev", value: (r) => r.wire_bytes_per_device, text: (r) => humanBytes(r.wire_bytes_per_device), num: true },
      { title: "mem/dev", value: (r) => r.peak_bytes_per_device, text: (r) => humanBytes(r.peak_bytes_per_device), num: true },
      { title: "fits", value: (r) => r.fits === null ? "-" : r.fits ? "yes" : "NO" },
      { title: "XLA step", value: (r) => r.xla ? r.xla.step_seconds : null, num: true,
        text: (r) => !r.xla ? "-" : r.xla.step_seconds === null ? "refused" : humanSeconds(r.xla.step_seconds) },
      { title: "XLA mem", value: (r) => r.xla ? r.xla.peak_bytes_per_device : null, num: true,
        text: (r) => r.xla && r.xla.peak_bytes_per_device ? humanBytes(r.xla.peak_bytes_per_device) : "-" },
      { title: "layout", value: (r) => r.summary, mono: true },
    ], shown.map((r) => ({ ...r, __key: `k${r.rank}` })), { name: "candidates" });
    const e = plan.explanation;
    const lines = [];
    if (e.runner_up) {
      lines.push(el("p", {}, el("b", { text: "Why the winner: " }), `mesh ${meshText(e.winner)}: ${e.winner.layout} beats mesh ` +
        `${meshText(e.runner_up)}: ${e.runner_up.layout} by ${humanSeconds(e.runner_up.step_seconds - e.winner.step_seconds)} per ` +
        `step (${humanSeconds(e.winner.step_seconds)} against ${humanSeconds(e.runner_up.step_seconds)}, ${e.basis}).`));
      lines.push(el("ul", {}, e.differences.map((d) => el("li", { class: "mono" }, `it ${d.verb} ${d.kind} of ${d.shapes}` +
        `${d.source ? " at " + fileLine(d.source) : ""} (${humanSeconds(d.winner_seconds)} against ${humanSeconds(d.runner_up_seconds)} per step)`))));
      lines.push(el("p", { class: "mono" }, `communication ${humanSeconds(e.winner.communication_seconds)} against ` +
        `${humanSeconds(e.runner_up.communication_seconds)}; memory per device ${humanBytes(e.winner.peak_bytes_per_device)} against ` +
        `${humanBytes(e.runner_up.peak_bytes_per_device)}`));
    } else {
      lines.push(el("p", { text: "The winner is the only candidate that fits." }));
    }
    return section("plan", `autoshard for ${t.target} on ${t.hardware}: ${rows.length} candidates`,
      `${t.evaluations} Shardy plans, ${rows.filter((r) => r.xla).length} compiled by XLA, in ${t.search_seconds.toFixed(1)} s` +
      `${t.memory_limit ? `; limit ${humanBytes(t.memory_limit)} per device (${limitShown ? "red dashes" : "off the chart"})` : ""}` +
      ". Green: the winner; " +
      "orange: the runner-up; diamonds: XLA's compiled programs (dotted to their estimates); pale red: does not fit.",
    el("div", { class: "grid2" }, el("div", {}, chart), el("div", {}, lines)),
    el("div", { class: "note", text: `the ${shown.length} distinct candidates, best first (* chosen):` }),
    el("div", { class: "scroll" }, table));
  }

  // -- a diff: what changed, then the two programs side by side --------------------------------------------

  function diffPanel(d, programs) {
    const kids = [];
    const values = dataTable([
      { title: "op", value: (v) => v.op, mono: true },
      { title: "#", value: (v) => v.index, num: true },
      { title: "type", value: (v) => v.type, mono: true },
      { title: "before", value: (v) => v.before, mono: true },
      { title: "after", value: (v) => v.after, mono: true },
      { title: "jax op", value: (v) => v.op_name, mono: true },
      { title: "line", value: (v) => fileLine(v.source), full: (v) => v.source || "", mono: true },
    ], d.values.map((v, i) => ({ ...v, __key: `d${i}` })), { name: "changed-values" });
    kids.push(el("div", { class: "note", text: `${d.values.length} value shardings changed` }), el("div", { class: "scroll" }, values));
    const label = programs[0].communication.columns;  // the text report's column labels
    const collective = (title, list) => {
      kids.push(el("div", { class: "note", text: `collectives ${title}: ${list.length}` }));
      if (list.length) kids.push(dataTable([
        { title: label.kind, value: (c) => c.kind },
        { title: label.over, value: (c) => c.over, mono: true },
        { title: label.results, value: (c) => c.results.join(", "), mono: true },
        { title: label.sent, value: (c) => c.wire_bytes_per_device, text: (c) => count(c.wire_bytes_per_device), num: true },
        { title: "line", value: (c) => fileLine(c.source), full: (c) => c.source || "", mono: true },
      ], list.map((c, i) => ({ ...c, __key: `${title}${i}` })), { name: `collectives-${title}` }));
    };
    collective("added", d.added);
    collective("removed", d.removed);
    if (d.resized.length) {
      kids.push(el("div", { class: "note", text: `collectives resized: ${d.resized.length}` }), dataTable([
        { title: "kind", value: (p) => p.before.kind },
        { title: "before", value: (p) => p.before.results.join(", "), mono: true },
        { title: "after", value: (p) => p.after.results.join(", "), mono: true },
        { title: "sent before", value: (p) => p.before.wire_bytes_per_device, text: (p) => count(p.before.wire_bytes_per_device), num: true },
        { title: "sent after", value: (p) => p.after.wire_bytes_per_device, text: (p) => count(p.after.wire_bytes_per_device), num: true },
        { title: "line", value: (p) => fileLine(p.after.source), mono: true },
      ], d.resized.map((p, i) => ({ ...p, __key: `r${i}` })), { name: "collectives-resized" }));
    }
    const axes = Object.entries(d.by_axes);
    const top = Math.max(1, ...axes.flatMap(([, v]) => [v.before, v.after]));
    kids.push(el("div", { class: "note", text: "bytes sent per device per call, by mesh axes (before, after):" }),
      el("div", { class: "bars", style: "max-width:720px" }, axes.flatMap(([k, v]) => [["before", v.before, "#9C9EDE"],
        ["after", v.after, "#393B79"]].map(([w, n, colour]) => el("div", { class: "bar-row", "data-axes": k, "data-side": w },
        el("span", { class: "mono", text: `${k} ${w}` }), el("div", { class: "track" }, el("div", { class: "fill",
          style: `width:${(100 * n) / top}%;background:${colour}` })), el("span", { class: "num", "data-value": n, text: humanBytes(n) }))))));
    return section("diff", `What changed from ${programs[0].name} to ${programs[1].name}`,
      d.stage === "xla" ? "XLA's programs compared." : "Shardy's plans compared.", kids);
  }

  // -- the page -------------------------------------------------------------------------------------------

  function page() {
    const programs = DATA.programs;
    const header = el("header", {}, el("h1", { text: DATA.title }));
    if (DATA.kind !== "diff") header.append(summaryChips(programs[0]));
    const main = el("main");
    if (DATA.kind === "plan") main.append(planPanel(DATA.plan));
    if (DATA.kind === "diff") {
      main.append(diffPanel(DATA.diff, programs));
      main.append(el("div", { class: "grid2 sides" }, programs.map((p) => el("div", {},
        el("h2", { style: "font-size:15px;margin:6px 0", text: p.name }), summaryChips(p), programView(p)))));
    } else {
      main.append(programView(programs[0]));
    }
    document.body.append(header, main);
    document.body.dataset.ready = "true";
    performance.mark("shardkit-ready");  // drawn and interactive (benchmarks/bench_report_page.py reads it)
  }

  page();
})();
