// The monitor's live dashboard (docs/monitor.md, "Dashboard"): served by
// `sonde monitor run` at / on --listen, it polls /status, /series and
// /alerts every few seconds and draws per stream the last RTT, loss, R(L)
// over the last 10 minutes and the load state, the last hour's RTT p50/p99
// and loss per minute, the recent events and the firing alerts. Same
// origin only, no inline script (the daemon sends a strict CSP).
import uPlot from "uplot";
import { Alerts, Series, Status, alertLine, chartData, clockNote, ms, pct, rel, when } from "./monitor-data";

const POLL_MS = 5000;
const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"];

const $ = (id: string) => document.getElementById(id)!;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

async function getJSON<T>(path: string): Promise<T> {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error(`${path}: HTTP ${r.status}`);
  return (await r.json()) as T;
}

function streamTable(st: Status, se: Series): HTMLTableElement {
  const t = el("table");
  const head = t.createTHead().insertRow();
  const ths = ["stream", "last RTT", "loss (1 min)", ...se.thresholds_ms.filter((l) => l <= 500).map((l) => `R(${l} ms) 10 min`), "problem"];
  for (const h of ths) head.appendChild(el("th", h));
  const body = t.createTBody();
  st.streams.forEach((s, i) => {
    const row = body.insertRow();
    const r10 = se.streams[i]?.r10 ?? [];
    row.appendChild(el("td", s.name));
    row.appendChild(el("td", ms(s.last_rtt_ms)));
    row.appendChild(el("td", pct(s.loss_last_minute)));
    se.thresholds_ms.forEach((l, j) => { if (l <= 500) row.appendChild(el("td", rel(r10[j]))); });
    row.appendChild(el("td", s.problem ?? "", s.problem ? "bad" : ""));
  });
  return t;
}

class Charts {
  private rtt?: uPlot;
  private loss?: uPlot;
  private names = "";
  // The x axis always spans the last hour: uPlot's own range for one
  // point spans years.
  private xr: [number, number] = [0, 1];
  constructor(private box: HTMLElement) {
    new ResizeObserver(() => this.resize()).observe(box);
  }
  private width(): number { return Math.max(280, Math.floor(this.box.clientWidth || 600)); }
  private resize(): void {
    this.rtt?.setSize({ width: this.width(), height: 220 });
    this.loss?.setSize({ width: this.width(), height: 150 });
  }
  update(se: Series): void {
    const d = chartData(se);
    const names = se.streams.map((s) => s.name).join("\n");
    if (names !== this.names) {
      this.names = names;
      this.box.textContent = "";
      const axes = (label: string) => [{}, { label, size: 56 }];
      const x = { time: true, range: (): uPlot.Range.MinMax => this.xr };
      const rttSeries: uPlot.Series[] = [{ label: "time" }];
      const lossSeries: uPlot.Series[] = [{ label: "time" }];
      se.streams.forEach((s, i) => {
        const c = COLORS[i % COLORS.length];
        rttSeries.push({ label: `${s.name} p50`, stroke: c, width: 1.5, value: (_u, v) => ms(v ?? -1) });
        rttSeries.push({ label: `${s.name} p99`, stroke: c, width: 1, dash: [4, 3], value: (_u, v) => ms(v ?? -1) });
        lossSeries.push({ label: s.name, stroke: c, width: 1.5, value: (_u, v) => (v == null ? "–" : v.toFixed(2) + " %") });
      });
      this.rtt = new uPlot({ title: "RTT per minute (p50 solid, p99 dashed)", width: this.width(), height: 220,
        series: rttSeries, axes: axes("ms"), scales: { x, y: { distr: 3 } }, cursor: { drag: { x: false, y: false } } } as uPlot.Options,
        [[]], this.box);
      this.loss = new uPlot({ title: "Loss per minute", width: this.width(), height: 150,
        series: lossSeries, axes: axes("%"), scales: { x, y: { range: (_u, _lo, hi) => [0, Math.max(1, hi)] } }, cursor: { drag: { x: false, y: false } } } as uPlot.Options,
        [[]], this.box);
    }
    this.xr = [se.now_ns / 1e9 - 3600, se.now_ns / 1e9];
    const rtt: (number | null)[][] = [];
    d.p50.forEach((a, i) => { rtt.push(a, d.p99[i]); });
    this.rtt!.setData([d.x, ...rtt] as uPlot.AlignedData);
    this.loss!.setData([d.x, ...d.loss] as uPlot.AlignedData);
  }
}

function list(box: HTMLElement, lines: string[], none: string, cls = ""): void {
  box.textContent = "";
  if (lines.length === 0) { box.appendChild(el("p", none, "muted")); return; }
  const ul = el("ul", undefined, cls);
  for (const l of lines) ul.appendChild(el("li", l));
  box.appendChild(ul);
}

async function poll(charts: Charts): Promise<void> {
  try {
    const [st, se, al] = await Promise.all([getJSON<Status>("status"), getJSON<Series>("series"), getJSON<Alerts>("alerts")]);
    $("title").textContent = `sonde monitor – ${st.name}`;
    const load = st.load ? `load ${st.load.state} on ${st.load.interface} (up ${(st.load.up_rate_bps / 1e6).toFixed(2)}, down ${(st.load.down_rate_bps / 1e6).toFixed(2)} Mbit/s)` : "load state unknown (no --interface)";
    const store = st.store.healthy ? `store ${st.store.location} ok` : `store FAILING: ${st.store.last_error ?? ""} (${st.store.backlog_rows} rows held)`;
    const clock = clockNote(st);
    $("state").textContent = `${when(st.now_ns, st.now_ns)} · ${load} · ${store}${clock ? ` · ${clock}` : ""}`;
    $("state").className = st.store.healthy && !clock ? "" : "bad";
    const tbl = $("streams");
    tbl.textContent = "";
    tbl.appendChild(streamTable(st, se));
    charts.update(se);
    list($("firing"), al.firing.map((a) => alertLine(a, st.now_ns)), "no alert firing", "firing");
    list($("changes"), al.recent.slice().reverse().map((a) => alertLine(a, st.now_ns)), "no alert so far");
    list($("events"), st.last_events.slice().reverse().map((e) => `${when(e.start_ns, st.now_ns)} ${e.kind}: ${e.text}`), "no event yet");
    $("error").textContent = "";
  } catch (e) {
    $("error").textContent = `daemon not answering: ${(e as Error).message}`;
  }
}

if (typeof document !== "undefined") {
  const charts = new Charts($("charts"));
  void poll(charts);
  setInterval(() => void poll(charts), POLL_MS);
}
