// Line charts on a canvas: axes with round-number ticks, one line per series, a legend.
// plot(canvas, series, options): series is [{label, color, points: [[x, y], ...]}];
// options: {xlabel, format (y tick text), zeroBased, legendBottom}. The canvas records how many points
// it drew in data-points, which the browser test reads.
"use strict";

const PALETTE = ["#1565c0", "#c62828", "#2e7d32", "#8e24aa", "#ef6c00", "#00838f", "#6d4c41", "#37474f"];

function niceTicks(lo, hi, count, whole) {
  if (!(hi > lo)) { hi = lo + 1; }
  const raw = whole ? Math.max((hi - lo) / count, 1) : (hi - lo) / count;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * power).find((s) => s >= raw);
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) { ticks.push(t); }
  return { ticks, step };
}

function shortNumber(v) {
  const a = Math.abs(v);
  if (a >= 1e6) { return (v / 1e6).toPrecision(3) + "M"; }
  if (a >= 1e4) { return (v / 1e3).toPrecision(3) + "k"; }
  if (a !== 0 && a < 1e-3) { return v.toExponential(1); }
  return String(Number(v.toPrecision(4)));
}

function plot(canvas, series, options) {
  options = options || {};
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth || 400, height = canvas.clientHeight || 190;
  canvas.width = Math.round(width * ratio);
  canvas.height = Math.round(height * ratio);
  const g = canvas.getContext("2d");
  g.setTransform(ratio, 0, 0, ratio, 0, 0);
  g.clearRect(0, 0, width, height);
  g.font = "11px system-ui, sans-serif";
  const all = [];
  series.forEach((s) => s.points.forEach((p) => { if (p[1] !== null && isFinite(p[1])) { all.push(p); } }));
  canvas.dataset.points = String(all.length);
  const left = 48, right = 10, top = 8, bottom = 30;
  const w = width - left - right, h = height - top - bottom;
  g.strokeStyle = "#ccd2dd";
  g.strokeRect(left, top, w, h);
  if (!all.length) {
    g.fillStyle = "#8a93a6";
    g.fillText("no data yet", left + w / 2 - 25, top + h / 2);
    return;
  }
  let xlo = Math.min(...all.map((p) => p[0])), xhi = Math.max(...all.map((p) => p[0]));
  let ylo = Math.min(...all.map((p) => p[1])), yhi = Math.max(...all.map((p) => p[1]));
  if (options.zeroBased) { ylo = Math.min(0, ylo); }
  if (xhi === xlo) { xhi = xlo + 1; }
  if (yhi === ylo) { const pad = Math.abs(ylo) * 0.1 || 1; ylo -= pad; yhi += pad; }
  const yt = niceTicks(ylo, yhi, 4), xt = niceTicks(xlo, xhi, 6, true);  // steps are whole
  ylo = Math.min(ylo, yt.ticks[0]); yhi = Math.max(yhi, yt.ticks[yt.ticks.length - 1]);
  const X = (x) => left + (x - xlo) / (xhi - xlo) * w;
  const Y = (y) => top + h - (y - ylo) / (yhi - ylo) * h;
  g.fillStyle = "#5b6478";
  g.textAlign = "right";
  g.textBaseline = "middle";
  yt.ticks.forEach((t) => {
    g.strokeStyle = "#eef1f5";
    g.beginPath(); g.moveTo(left, Y(t)); g.lineTo(left + w, Y(t)); g.stroke();
    g.fillText((options.format || shortNumber)(t), left - 4, Y(t));
  });
  g.textAlign = "center";
  g.textBaseline = "top";
  xt.ticks.forEach((t) => { g.fillText(shortNumber(t), X(t), top + h + 4); });
  g.fillText(options.xlabel || "step", left + w / 2, top + h + 16);
  series.forEach((s, i) => {
    g.strokeStyle = s.color || PALETTE[i % PALETTE.length];
    g.fillStyle = g.strokeStyle;
    g.lineWidth = 1.6;
    const pts = s.points.filter((p) => p[1] !== null && isFinite(p[1]));
    g.beginPath();
    pts.forEach((p, j) => { if (j) { g.lineTo(X(p[0]), Y(p[1])); } else { g.moveTo(X(p[0]), Y(p[1])); } });
    g.stroke();
    if (s.marks) { pts.forEach((p) => { g.beginPath(); g.arc(X(p[0]), Y(p[1]), 3, 0, 2 * Math.PI); g.fill(); }); }
  });
  if (series.length > 1 || (series[0] && series[0].label)) {
    // on the right, top or bottom: where a falling (or a rising) curve is not
    g.textAlign = "left";
    g.textBaseline = "middle";
    const widest = Math.max(...series.map((s) => g.measureText(s.label || "").width));
    const x0 = left + w - widest - 30;
    g.fillStyle = "rgba(255, 255, 255, 0.85)";
    const y0 = options.legendBottom ? top + h - 14 * series.length - 6 : top + 2;
    g.fillRect(x0 - 4, y0, widest + 32, 14 * series.length + 4);
    series.forEach((s, i) => {
      const y = y0 + 8 + 14 * i;
      g.fillStyle = s.color || PALETTE[i % PALETTE.length];
      g.fillRect(x0, y - 2, 14, 4);
      g.fillStyle = "#1d2330";
      g.fillText(s.label || "", x0 + 18, y);
    });
  }
}
