// Charts: the overview's live charts of the daemon's last hour (GET
// /v1/stats/history, then the event stream's "sample" events), and the
// sparklines of what a session's sandbox uses. Drawn by uPlot on canvas.
import uPlot from "uplot";
import { h, api, live, bytes } from "./lib.js";

const palette = ["#2456a6", "#1d7a3a", "#b3261e", "#9a6700", "#7b3fa0", "#0f7c8c", "#c2410c", "#4b5563"];
const outcomeColors = { ok: "#1d7a3a", nonzero: "#9a6700", timeout: "#c2410c", oom: "#7b3fa0", error: "#b3261e", denied: "#4b5563" };

// A chart's definition: its title, and from the samples its series
// (label, color, dashed, value of a sample or null for a gap).
function chartSpecs(samples) {
  const perSecond = (n, s) => (s.seconds > 0 ? (n || 0) / s.seconds : 0);
  // Languages whose pools did anything in the window, busiest first.
  const active = {};
  for (const s of samples) for (const [l, p] of Object.entries(s.pools || {})) active[l] = (active[l] || 0) + p.busy + p.hits + p.misses;
  const langs = Object.keys(active).filter((l) => active[l] > 0).sort((a, b) => active[b] - active[a]).slice(0, 6);
  const color = (i) => palette[i % palette.length];
  return [
    { title: "Executions per second, by outcome", series: Object.keys(outcomeColors).map((o) => ({ label: o, color: outcomeColors[o], value: (s) => perSecond(s.outcomes[o], s) })) },
    { title: "Latency (ms)", series: [
      { label: "p50", color: palette[0], value: (s) => (sum(s.outcomes) ? s.latency_p50_ms : null) },
      { label: "p95", color: palette[2], value: (s) => (sum(s.outcomes) ? s.latency_p95_ms : null) }] },
    { title: "Pool containers: busy, idle (dashed)", series: langs.flatMap((l, i) => [
      { label: `${l} busy`, color: color(i), value: (s) => ((s.pools || {})[l] || {}).busy || 0 },
      { label: `${l} idle`, color: color(i), dash: true, value: (s) => ((s.pools || {})[l] || {}).idle || 0 }]) },
    { title: "Pool hit rate (%)", series: langs.map((l, i) => ({ label: l, color: color(i), value: (s) => {
      const p = (s.pools || {})[l];
      return p && p.hits + p.misses ? (100 * p.hits) / (p.hits + p.misses) : null;
    } })) },
    { title: "Runs started warm and cold, per second", series: [
      { label: "warm", color: palette[1], value: (s) => perSecond(s.warm_runs, s) },
      { label: "cold", color: palette[6], value: (s) => perSecond(s.cold_runs, s) }] },
    { title: "Egress connections per second", series: [
      { label: "allowed", color: palette[0], value: (s) => perSecond(s.egress.allowed, s) },
      { label: "denied", color: palette[2], value: (s) => perSecond(s.egress.denied, s) }] },
  ];
}

const sum = (m) => Object.values(m || {}).reduce((a, b) => a + b, 0);

// overviewCharts draws the charts in box and keeps them live until signal.
export async function overviewCharts(box, signal) {
  const history = await api("GET", "/v1/stats/history");
  const samples = history.samples;
  const charts = new Map(); // title -> {plot, key}
  const draw = () => {
    const xs = samples.map((s) => Date.parse(s.at) / 1000);
    for (const spec of chartSpecs(samples)) {
      const key = spec.series.map((s) => s.label).join();
      const data = [xs, ...spec.series.map((s) => samples.map(s.value))];
      let c = charts.get(spec.title);
      if (c && c.key === key) {
        c.plot.setData(data);
        continue;
      }
      if (c) c.plot.destroy();
      const holder = c ? c.holder : box.appendChild(h("div", { class: "chart", "data-title": spec.title }));
      const plot = new uPlot({
        title: spec.title, width: Math.max(240, holder.clientWidth - 8), height: 170,
        series: [{}, ...spec.series.map((s) => ({ label: s.label, stroke: s.color, width: 1.5, dash: s.dash ? [4, 3] : undefined, spanGaps: false }))],
        axes: [{ space: 60 }, { size: 56 }],
        scales: { y: { range: (u, lo, hi) => [0, Math.max(hi, 1)] } },
        legend: { live: false },
      }, data, holder);
      charts.set(spec.title, { plot, key, holder });
    }
    box.dataset.samples = String(samples.length);
    box.dataset.executions = String(samples.reduce((n, s) => n + sum(s.outcomes), 0));
  };
  if (!samples.length) box.append(h("p", { class: "muted", id: "charts-empty" }, `The charts fill in as the daemon takes a sample every ${history.every}.`));
  draw();
  const stop = live((type, s) => {
    if (type !== "sample") return;
    samples.push(s);
    if (samples.length > 720) samples.shift();
    const empty = document.getElementById("charts-empty");
    if (empty) empty.remove();
    draw();
  });
  signal.addEventListener("abort", () => { stop(); for (const c of charts.values()) c.plot.destroy(); });
}

// usageSparklines shows what a session's sandbox uses: each figure now,
// and a sparkline of the last minutes, polled as the daemon samples.
export function usageSparklines(box, id, signal) {
  const figures = [
    { key: "cpu_percent", label: "CPU", show: (v) => `${v.toFixed(1)}%` },
    { key: "memory_bytes", label: "Memory", show: bytes },
    { key: "processes", label: "Processes", show: String },
    { key: "workspace_bytes", label: "Workspace", show: bytes },
    { key: "network_received_bytes", label: "Network in", show: bytes },
  ];
  const cells = figures.map((f) => {
    const value = h("span", { class: "value", "data-key": f.key }, "…");
    const plot = h("div", { class: "spark" });
    box.append(h("div", { class: "figure" }, h("div", { class: "muted" }, f.label), value, plot));
    return { ...f, value, plot, chart: null };
  });
  const draw = async () => {
    const m = await api("GET", `/v1/sessions/${encodeURIComponent(id)}/metrics`);
    const series = m.series.slice();
    if (m.now) series.push(m.now);
    const xs = series.map((s) => Date.parse(s.at) / 1000);
    for (const c of cells) {
      const now = m.now ? c.show(m.now[c.key]) : "hibernated";
      c.value.textContent = now;
      box.dataset[c.key.replace(/_(\w)/g, (_, x) => x.toUpperCase())] = m.now ? String(m.now[c.key]) : "";
      const data = [xs, series.map((s) => s[c.key])];
      if (c.chart) { c.chart.setData(data); continue; }
      c.chart = new uPlot({
        width: 150, height: 36, legend: { show: false }, cursor: { show: false }, select: { show: false },
        axes: [{ show: false }, { show: false }], series: [{}, { stroke: "#2456a6", fill: "rgba(36,86,166,.12)", width: 1.2 }],
        scales: { x: { time: false }, y: { range: (u, lo, hi) => [0, Math.max(hi, 1)] } },
      }, data, c.plot);
    }
    box.dataset.samples = String(series.length);
  };
  draw().catch((err) => box.replaceChildren(h("div", { class: "error" }, err.message)));
  const timer = setInterval(() => draw().catch(() => {}), 2000);
  signal.addEventListener("abort", () => { clearInterval(timer); for (const c of cells) if (c.chart) c.chart.destroy(); });
}
