// The dashboard page: the settings form and layer builder, a run's live curves (server-sent
// events), the history and the comparison of chosen runs. Every check of what is asked is
// the server's: the page sends the fields as typed and shows the messages it gets back.
"use strict";

const $ = (id) => document.getElementById(id);
const NUMBER_FIELDS = ["lr", "batch_size", "epochs", "subset", "test_subset", "steps", "context", "width", "seed"];
const FINAL = ["done", "failed", "cancelled", "interrupted"];
let options = null;
let layers = [{ type: "flatten" }, { type: "linear", out_features: 128 }, { type: "relu" },
  { type: "linear", out_features: 10 }];
let shown = null;   // the run on the live panel: {run, points}
let source = null;  // its EventSource while it streams

async function api(method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  return { ok: response.ok, status: response.status, data };
}

function fill(select, values, labels) {
  select.innerHTML = "";
  values.forEach((v, i) => {
    const o = document.createElement("option");
    o.value = v;
    o.textContent = labels ? labels[i] : v;
    select.appendChild(o);
  });
}

// ------------------------------------------------------------------ the form

function datasetOf(model) { return options.models[model]; }

function showFields() {
  const model = $("model").value, dataset = datasetOf(model);
  $("dataset").value = dataset;
  document.querySelectorAll(".for-mnist").forEach((e) => { e.hidden = dataset !== "mnist"; });
  document.querySelectorAll(".for-shakespeare").forEach((e) => { e.hidden = dataset !== "shakespeare"; });
  document.querySelectorAll(".for-width").forEach((e) => { e.hidden = !["resnet18", "mobilenetv2"].includes(model); });
  document.querySelectorAll(".for-custom").forEach((e) => { e.hidden = model !== "custom"; });
  if (model === "custom") { checkSoon(); }
}

function readNumber(id) {
  const text = $(id).value.trim();
  if (text === "") { return null; }
  const n = Number(text);
  return Number.isFinite(n) ? n : text;  // the server names what is wrong with the text
}

function collect() {
  const s = { model: $("model").value, dataset: $("dataset").value, stage: $("stage").value,
    optimizer: $("optimizer").value, schedule: $("schedule").value };
  NUMBER_FIELDS.forEach((f) => { if (!$(f).closest("label").hidden) { s[f] = readNumber(f); } });
  if (s.model === "custom") { s.architecture = layers; }
  return s;
}

function showErrors(response) {
  document.querySelectorAll(".bad").forEach((e) => e.classList.remove("bad"));
  const box = $("errors");
  if (response.ok) { box.textContent = ""; return; }
  const detail = response.data && response.data.detail;
  if (detail && detail.errors) {
    const lines = [];
    Object.entries(detail.errors).forEach(([field, message]) => {
      const target = field === "architecture" ? $("builder") : $(field);
      if (target) { target.classList.add("bad"); }
      lines.push(`${field}: ${message}`);
    });
    box.textContent = lines.join("\n");
  } else {
    box.textContent = typeof detail === "string" ? detail : `the server answered ${response.status}`;
  }
}

// ------------------------------------------------------------------ the layer builder

function renderLayers() {
  const list = $("layers");
  list.innerHTML = "";
  layers.forEach((layer, i) => {
    const li = document.createElement("li");
    const name = document.createElement("span");
    name.className = "layer-type";
    name.textContent = layer.type;
    li.appendChild(name);
    Object.entries(options.layers[layer.type]).forEach(([field, bounds]) => {
      const label = document.createElement("label");
      label.style.display = "inline";
      label.textContent = ` ${field.replace("_", " ")} `;
      const input = document.createElement("input");
      input.value = field in layer ? layer[field] : bounds.default;
      input.title = `${bounds.min} to ${bounds.max}`;
      input.dataset.field = field;
      input.addEventListener("input", () => {
        const n = Number(input.value);
        layer[field] = input.value.trim() !== "" && Number.isFinite(n) ? n : input.value;
        archChanged();
      });
      label.appendChild(input);
      li.appendChild(label);
    });
    [["\u2191", -1], ["\u2193", 1]].forEach(([text, move]) => {
      const b = document.createElement("button");
      b.type = "button"; b.textContent = text; b.title = move < 0 ? "move up" : "move down";
      b.addEventListener("click", () => {
        const j = i + move;
        if (j < 0 || j >= layers.length) { return; }
        [layers[i], layers[j]] = [layers[j], layers[i]];
        renderLayers(); archChanged();
      });
      li.appendChild(b);
    });
    const remove = document.createElement("button");
    remove.type = "button"; remove.textContent = "\u2715"; remove.title = "remove";
    remove.addEventListener("click", () => { layers.splice(i, 1); renderLayers(); archChanged(); });
    li.appendChild(remove);
    list.appendChild(li);
  });
  $("arch-json").textContent = JSON.stringify(layers, null, 1);
}

function archChanged() {
  $("arch-json").textContent = JSON.stringify(layers, null, 1);
  checkSoon();
}

let checkTimer = null;
function checkSoon() {
  clearTimeout(checkTimer);
  checkTimer = setTimeout(async () => {
    if ($("model").value !== "custom") { return; }
    const r = await api("POST", "/api/check", collect());
    showErrors(r);
    $("arch-size").textContent = r.ok ? `${r.data.parameters.toLocaleString()} parameters; a training step ` +
      `keeps about ${(r.data.activation_bytes / 2 ** 20).toFixed(1)} MiB of activations` : "";
  }, 250);
}

// ------------------------------------------------------------------ a run, live

function fmt(v, digits) { return v === null || v === undefined ? "\u2013" : Number(v).toFixed(digits); }

function seconds(s) {
  if (s === null || s === undefined || !isFinite(s)) { return "\u2013"; }
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

function series(points, field, label, marks) {
  return { label, marks, points: points.filter((p) => p[field] !== null).map((p) => [p.step, p[field]]) };
}

function drawLive() {
  const pts = shown ? shown.points : [];
  const text = shown && shown.run.settings.dataset === "shakespeare";
  plot($("chart-loss"), [series(pts, "loss", "training"),
    series(pts, "val_loss", text ? "validation" : "", true)].filter((s) => s.points.length || s.label === "training"));
  plot($("chart-accuracy"), [series(pts, "accuracy", "training"),
    series(pts, "test_accuracy", "test", true)].filter((s) => s.points.length || s.label === "training"),
  { format: (v) => `${Math.round(v * 100)}%`, legendBottom: true });
  plot($("chart-rate"), [series(pts, "samples_per_s", "")], { zeroBased: true });
  plot($("chart-lr"), [series(pts, "lr", "")], { zeroBased: true });
}

function showProgress() {
  const run = shown.run, last = shown.points.filter((p) => p.loss !== null).pop();
  const total = run.total_steps, done = last ? last.step : 0;
  const fraction = run.status === "done" ? 1 : total ? Math.min(done / total, 1) : 0;
  $("progress-fill").style.width = `${fraction * 100}%`;
  $("progress-text").textContent = total ? `${run.status === "done" ? total : done} / ${total} steps` : "";
  const active = !FINAL.includes(run.status);
  $("eta").textContent = active && last && done ? `ETA ${seconds(last.elapsed / done * (total - done))}` : "";
  $("cancel").disabled = !active;
  const s = run.settings;
  $("run-title").textContent = `Run ${run.id}: ${s.model} on ${run.stage || "stage " + s.stage}`;
  let status = run.status;
  if (run.parameters) { status += ` \u00b7 ${run.parameters.toLocaleString()} parameters`; }
  if (last) {
    status += ` \u00b7 loss ${fmt(last.loss, 4)} \u00b7 ${fmt(last.samples_per_s, 0)} samples/s \u00b7 lr ${Number(Number(last.lr).toPrecision(3))}`;
  }
  if (run.wall_s !== null) { status += ` \u00b7 wall time ${seconds(run.wall_s)}`; }
  if (run.error) { status += ` \u00b7 ${run.error}`; }
  $("run-status").textContent = status;
  $("run-status").className = `note status-${run.status}`;
  const links = $("downloads");
  links.innerHTML = "";
  if (run.status === "done" && run.files) {
    if (run.files.safetensors) { links.appendChild(link(`/api/runs/${run.id}/weights.safetensors`, "weights (safetensors)")); }
    if (run.files.onnx) { links.appendChild(link(`/api/runs/${run.id}/model.onnx`, "model (ONNX)")); }
    if (run.files.checkpoint) { links.appendChild(link(`/api/runs/${run.id}/model.ckpt`, "checkpoint (stagegrad deploy)")); }
    if (run.files.onnx_error) { links.appendChild(document.createTextNode(` no ONNX: ${run.files.onnx_error}`)); }
  }
  showDeployment();
}

function link(href, text) {
  const a = document.createElement("a");
  a.href = href; a.textContent = text; a.download = ""; a.style.marginRight = "1em";
  return a;
}

async function show(id) {
  if (source) { source.close(); source = null; }
  const r = await api("GET", `/api/runs/${id}`);
  if (!r.ok) { return; }
  const run = r.data;
  shown = { run, points: [] };
  if (FINAL.includes(run.status)) {
    shown.points = run.points;
    showProgress(); drawLive(); markShown();
    return;
  }
  source = new EventSource(`/api/runs/${id}/events`);
  let redraw = null;
  const soon = () => { if (!redraw) { redraw = requestAnimationFrame(() => { redraw = null; showProgress(); drawLive(); }); } };
  source.addEventListener("status", (e) => { shown.run = JSON.parse(e.data); soon(); loadHistory(); });
  source.addEventListener("point", (e) => {
    const point = JSON.parse(e.data), last = shown.points[shown.points.length - 1];
    if (!last || point.seq > last.seq) { shown.points.push(point); soon(); }  // a reconnect resends the curve
  });
  source.addEventListener("error", () => {
    if (source && FINAL.includes(shown.run.status)) { source.close(); source = null; }
  });
  source.addEventListener("end", (e) => {
    shown.run = JSON.parse(e.data);
    source.close(); source = null;
    showProgress(); drawLive(); loadHistory();
  });
  showProgress(); drawLive(); markShown();
}

// ------------------------------------------------------------------ serving a finished run

let deployTimer = null;
let deployMenuFor = null;  // the run whose backends the menu lists

function showDeployment() {
  const run = shown.run, box = $("deploy");
  box.hidden = !(run.status === "done" && run.files && run.files.checkpoint);
  clearTimeout(deployTimer);
  if (box.hidden) { return; }
  const d = run.deployment, text = run.settings.dataset === "shakespeare";
  const live = !!d && (d.state === "starting" || d.state === "ready"), ready = !!d && d.state === "ready";
  if (deployMenuFor !== run.id) {
    const backends = options.backends.filter((b) => !(text && b.id === "onnxruntime"));
    fill($("deploy-backend"), backends.map((b) => b.id), backends.map((b) => b.label));
    $("deploy-backend").value = d ? d.backend : String(run.settings.stage);
    deployMenuFor = run.id;
    $("pad-result").innerHTML = ""; $("try-output").textContent = "";
  }
  $("deploy-backend").disabled = live;
  $("deploy-start").hidden = live;
  $("deploy-stop").hidden = !live;
  const states = { starting: "starting the server\u2026", ready: `serving at ${d && d.endpoint}`,
    failed: `the server failed: ${d && d.error}`, stopped: "stopped" };
  $("deploy-status").textContent = d ? states[d.state] : "";
  $("deploy-status").className = `note deploy-${d ? d.state : "none"}`;
  $("deploy-example").hidden = !ready;
  if (ready) {
    $("deploy-example").textContent = text
      ? `curl -sN ${d.endpoint} -H 'Content-Type: application/json' \\\n  -d '{"prompt": "ROMEO:", "max_tokens": 200, "stream": true}'`
      : `curl -s ${d.url}/v1/models/${d.name}\n` +
        `POST {"instances": [28 x 28 pixels in [0, 1], or {"b64": PNG}, ...]} to ${d.endpoint}\n` +
        `python -m stagegrad loadtest ${d.url} --quick`;
  }
  $("try-image").hidden = !(ready && !text);
  $("try-text").hidden = !(ready && text);
  if (d && d.state === "starting") { deployTimer = setTimeout(refreshDeployment, 300); }
}

async function refreshDeployment() {
  const id = shown && shown.run.id;
  const r = await api("GET", `/api/runs/${id}`);
  if (r.ok && shown && shown.run.id === id) { shown.run.deployment = r.data.deployment; showDeployment(); }
}

async function deployAction(path, body) {
  const id = shown.run.id, r = await api("POST", `/api/runs/${id}/${path}`, body);
  if (!shown || shown.run.id !== id) { return; }
  if (r.ok) {
    shown.run.deployment = r.data;
    showDeployment();
  } else {
    const detail = r.data && r.data.detail;
    $("deploy-status").textContent = detail && detail.errors ? Object.values(detail.errors).join("; ")
      : typeof detail === "string" ? detail : `the server answered ${r.status}`;
  }
}

// the drawing pad: white strokes on black, as MNIST's digits are
let drawing = false;

function padPoint(e) {
  const pad = $("pad"), box = pad.getBoundingClientRect();
  return [(e.clientX - box.left) * pad.width / box.width, (e.clientY - box.top) * pad.height / box.height];
}

function clearPad() {
  [$("pad"), $("pad-small")].forEach((c) => {
    const g = c.getContext("2d");
    g.fillStyle = "#000"; g.fillRect(0, 0, c.width, c.height);
  });
  $("pad-result").innerHTML = "";
}

// What the model sees: the strokes' bounding box scaled to 20 pixels and centred in 28 x 28,
// as MNIST's digits were prepared; one 28 x 28 list of values in [0, 1].
function padImage() {
  const pad = $("pad"), w = pad.width, h = pad.height;
  const data = pad.getContext("2d").getImageData(0, 0, w, h).data;
  let x0 = w, y0 = h, x1 = -1, y1 = -1;
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      if (data[4 * (y * w + x)] > 0) { x0 = Math.min(x0, x); x1 = Math.max(x1, x); y0 = Math.min(y0, y); y1 = Math.max(y1, y); }
    }
  }
  const small = $("pad-small"), g = small.getContext("2d");
  g.fillStyle = "#000"; g.fillRect(0, 0, 28, 28);
  g.imageSmoothingQuality = "high";  // grey edges, as MNIST's anti-aliased digits have
  if (x1 >= 0) {
    const bw = x1 - x0 + 1, bh = y1 - y0 + 1, scale = 20 / Math.max(bw, bh);
    g.drawImage(pad, x0, y0, bw, bh, (28 - bw * scale) / 2, (28 - bh * scale) / 2, bw * scale, bh * scale);
  }
  const pixels = g.getImageData(0, 0, 28, 28).data, rows = [];
  for (let y = 0; y < 28; y++) {
    rows.push(Array.from({ length: 28 }, (_, x) => pixels[4 * (y * 28 + x)] / 255));
  }
  return rows;
}

async function classify() {
  const id = shown.run.id, r = await api("POST", `/api/runs/${id}/deploy/try`, { instances: [padImage()] });
  const list = $("pad-result");
  list.innerHTML = "";
  if (!r.ok) { list.textContent = (r.data && r.data.detail) || `the server answered ${r.status}`; return; }
  const p = r.data.predictions[0];
  [...p.keys()].sort((a, b) => p[b] - p[a]).slice(0, 3).forEach((k) => {
    const li = document.createElement("li");
    li.textContent = `${k}: ${(p[k] * 100).toFixed(1)}%`;
    li.dataset.p = p[k];
    list.appendChild(li);
  });
}

async function generate() {
  const id = shown.run.id, prompt = $("try-prompt").value;
  $("try-output").textContent = "\u2026";
  const r = await api("POST", `/api/runs/${id}/deploy/try`, { prompt, max_tokens: 200, temperature: 0.8, seed: 0 });
  $("try-output").textContent = r.ok ? prompt + r.data.text : (r.data && r.data.detail) || `the server answered ${r.status}`;
}

function initPad() {
  const pad = $("pad"), g = pad.getContext("2d");
  clearPad();
  pad.addEventListener("pointerdown", (e) => {
    drawing = true;
    pad.setPointerCapture && pad.setPointerCapture(e.pointerId);
    const [x, y] = padPoint(e);
    g.beginPath(); g.moveTo(x, y); g.lineTo(x, y);
    g.strokeStyle = "#fff"; g.lineWidth = 22; g.lineCap = "round"; g.lineJoin = "round"; g.stroke();
  });
  pad.addEventListener("pointermove", (e) => {
    if (!drawing) { return; }
    const [x, y] = padPoint(e);
    g.lineTo(x, y); g.stroke();
  });
  ["pointerup", "pointerleave"].forEach((t) => pad.addEventListener(t, () => { drawing = false; }));
  $("pad-clear").addEventListener("click", clearPad);
  $("pad-classify").addEventListener("click", classify);
  $("try-generate").addEventListener("click", generate);
  $("deploy-start").addEventListener("click", () => deployAction("deploy", { backend: $("deploy-backend").value }));
  $("deploy-stop").addEventListener("click", () => deployAction("deploy/stop", {}));
}

// ------------------------------------------------------------------ history and comparison

async function loadHistory() {
  const r = await api("GET", "/api/runs");
  if (!r.ok) { return; }
  const chosen = new Set([...document.querySelectorAll("#runs input:checked")].map((c) => c.value));
  const body = $("runs");
  body.innerHTML = "";
  r.data.forEach((run) => {
    const tr = document.createElement("tr");
    tr.dataset.id = run.id;
    const f = run.final || {}, s = run.settings;
    const accuracy = f.test_accuracy !== undefined && f.test_accuracy !== null ? `${(f.test_accuracy * 100).toFixed(2)}% test`
      : f.val_loss !== undefined && f.val_loss !== null ? `val loss ${fmt(f.val_loss, 3)}` : "\u2013";
    const cells = ["", `#${run.id}`, run.status, s.model, run.stage || `stage ${s.stage}`,
      `${s.optimizer} ${s.lr} ${s.schedule}`, fmt(f.final_loss, 4), accuracy, fmt(f.samples_per_s, 0),
      run.wall_s === null ? "\u2013" : seconds(run.wall_s)];
    cells.forEach((text, i) => {
      const td = document.createElement("td");
      if (i === 0) {
        const box = document.createElement("input");
        box.type = "checkbox"; box.value = run.id; box.checked = chosen.has(String(run.id));
        td.appendChild(box);
      } else if (i === 1) {
        const a = document.createElement("a");
        a.className = "run-link"; a.textContent = text;
        a.addEventListener("click", () => show(run.id));
        td.appendChild(a);
      } else {
        td.textContent = text;
        if (i === 2) { td.className = `status-${run.status}`; }
        if (i >= 6) { td.classList.add("num"); }
      }
      tr.appendChild(td);
    });
    body.appendChild(tr);
  });
  markShown();
}

function markShown() {
  document.querySelectorAll("#runs tr").forEach((tr) => {
    tr.classList.toggle("shown", !!shown && tr.dataset.id === String(shown.run.id));
  });
}

async function compare() {
  const ids = [...document.querySelectorAll("#runs input:checked")].map((c) => c.value);
  if (ids.length < 1) { $("compare-note").textContent = "choose runs with the boxes in the first column"; return; }
  $("compare-note").textContent = "";
  const runs = (await Promise.all(ids.map((id) => api("GET", `/api/runs/${id}`)))).filter((r) => r.ok).map((r) => r.data);
  const label = (run) => `#${run.id} ${run.settings.model} ${run.stage || "stage " + run.settings.stage}`;
  $("comparison").hidden = false;
  plot($("compare-loss"), runs.map((run) => ({ label: label(run), points: series(run.points, "loss").points })));
  plot($("compare-accuracy"), runs.map((run) => ({ label: label(run), points: series(run.points, "accuracy").points })),
    { format: (v) => `${Math.round(v * 100)}%`, legendBottom: true });
  plot($("compare-rate"), runs.map((run) => ({ label: label(run), points: series(run.points, "samples_per_s").points })),
    { zeroBased: true, legendBottom: true });
}

// ------------------------------------------------------------------ start-up

async function start(event) {
  event.preventDefault();
  const r = await api("POST", "/api/runs", collect());
  showErrors(r);
  if (r.ok) { await loadHistory(); show(r.data.id); }
}

async function init() {
  options = (await api("GET", "/api/options")).data;
  const models = Object.keys(options.models);
  fill($("model"), models, models.map((m) => m === "custom" ? "custom (build it below)" : m));
  fill($("dataset"), ["mnist", "shakespeare"], ["MNIST", "Shakespeare"]);
  $("dataset").disabled = true;  // each model has its dataset
  fill($("stage"), options.stages.map((s) => s.id), options.stages.map((s) => `${s.id} (${s.package})`));
  if (options.stages.some((s) => s.id === "3")) { $("stage").value = "3"; }
  fill($("optimizer"), options.optimizers);
  fill($("schedule"), options.schedules);
  NUMBER_FIELDS.forEach((f) => { $(f).value = options.numbers[f].default; });
  fill($("new-layer"), Object.keys(options.layers));
  renderLayers();
  $("model").addEventListener("change", showFields);
  $("batch_size").addEventListener("input", () => { if ($("model").value === "custom") { checkSoon(); } });
  $("add-layer").addEventListener("click", () => {
    const type = $("new-layer").value, layer = { type };
    Object.entries(options.layers[type]).forEach(([f, b]) => { layer[f] = b.default; });
    layers.push(layer); renderLayers(); archChanged();
  });
  $("settings").addEventListener("submit", start);
  $("cancel").addEventListener("click", async () => {
    if (shown) { await api("POST", `/api/runs/${shown.run.id}/cancel`, {}); }
  });
  $("compare").addEventListener("click", compare);
  initPad();
  showFields();
  drawLive();
  await loadHistory();
  document.body.dataset.ready = "1";
}

window.addEventListener("resize", () => { drawLive(); });
init();
