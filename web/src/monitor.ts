// The monitor's dashboard (docs/monitor.md, "Dashboard"): served by
// `sonde monitor run` at / on --listen. The live figures at the top come
// from /status, /series and /alerts every 5 s; the history below from
// /range (the report `monitor report` makes, raw rows or rollups) over
// 1 h, 24 h, 7 d, 30 d or a custom range: a smoke graph of the RTT
// distribution per interval with the median coloured by loss, the load
// state per direction and the events on the same timeline (each a link
// to its row), and R(L) per requirement profile. Every chart reads with
// the arrow keys and has a table. Same origin only, no inline script or
// style (the daemon sends a strict CSP); the charts are SVG drawn here.
import {
  Alerts, Bucket, LOSS_LEGEND, Lane, MonitorEvent, RANGES, RangeAnswer, Report, Series, Status, alertLine, buckets, clockNote,
  eventFigures, eventTitle, flag, lanes, lineGroups, logTicks, lossClass, ms, msNum, nines, pct, profileLines, rangeQuery, reqLabels, span, stamp,
  tickLabel, timeTicks, verdictOf, when,
} from "./monitor-data";

const POLL_MS = 5000;
const RANGE_REFRESH_MS = 60_000;
const SVG = "http://www.w3.org/2000/svg";

const $ = (id: string) => document.getElementById(id)!;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function svg(tag: string, attrs: Record<string, string | number>, parent?: Element): SVGElement {
  const e = document.createElementNS(SVG, tag) as SVGElement;
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  parent?.appendChild(e);
  return e;
}

async function getJSON<T>(path: string): Promise<T> {
  const r = await fetch(path, { cache: "no-store" });
  if (!r.ok) throw new Error(`${path}: ${(await r.text()).trim() || "HTTP " + r.status}`);
  return (await r.json()) as T;
}

/** fig is one large figure: label, value with unit, a line below. */
function fig(label: string, value: [string, string], sub = "", tone = "", key = ""): HTMLElement {
  const f = el("div", undefined, "fig" + (tone ? " tone-" + tone : ""));
  f.appendChild(el("div", label, "fig-label"));
  const v = el("div", value[0], "fig-value" + (/^[\d.–]/.test(value[0]) ? "" : " word"));
  if (key) v.dataset.k = key;
  if (value[1]) v.appendChild(el("span", value[1], "unit"));
  f.appendChild(v);
  if (sub) f.appendChild(el("div", sub, "fig-sub"));
  return f;
}

function pctNum(f: number, digits = 2): [string, string] {
  const s = pct(f, digits);
  return s === "–" ? ["–", ""] : [s.slice(0, -2), "%"];
}

// ---- state ----

interface View {
  range: { span?: string; from?: number; to?: number };
  stream: string; // the stream's name ("" the first)
}

let view: View = readHash();
let status: Status | undefined;
let answer: RangeAnswer | undefined;
let reading = false;

function readHash(): View {
  const h = new URLSearchParams(location.hash.slice(1));
  const v: View = { range: { span: "24h" }, stream: h.get("stream") ?? "" };
  const r = h.get("range");
  const m = /^(\d+)-(\d+)$/.exec(r ?? "");
  if (m && +m[2] > +m[1]) v.range = { from: +m[1], to: +m[2] };
  else if (RANGES.some((x) => x.span === r)) v.range = { span: r! };
  return v;
}

function writeHash(): void {
  const h = new URLSearchParams();
  h.set("range", view.range.span ?? `${view.range.from}-${view.range.to}`);
  if (view.stream) h.set("stream", view.stream);
  history.replaceState(null, "", "#" + h.toString());
}

// ---- live ----

function drawLive(st: Status, se: Series, al: Alerts): void {
  $("title").textContent = `Monitor ${st.name}`;
  document.title = `sonde monitor – ${st.name}`;
  const store = st.store.healthy ? `store ${st.store.location} ok` : `store FAILING: ${st.store.last_error ?? ""} (${st.store.backlog_rows} rows held)`;
  const clock = clockNote(st);
  $("state").textContent = `${when(st.now_ns, st.now_ns)} · ${store}${clock ? ` · ${clock}` : ""}`;
  $("state").className = "state" + (st.store.healthy && !clock ? "" : " bad");
  let i = st.streams.findIndex((s) => s.name === view.stream);
  if (i < 0) i = 0;
  const s = st.streams[i];
  $("live-sub").textContent = s ? `· ${s.name}` : "";
  const box = $("live");
  box.textContent = "";
  if (s) {
    box.appendChild(fig("Last round trip", msNum(s.last_rtt_ms), s.problem ?? `${s.kind} to ${s.target}`, s.problem ? "bad" : "", "live_rtt"));
    box.appendChild(fig("Loss, last minute", pctNum(s.loss_last_minute), `${s.lost} of ${s.sent} lost since start`, s.loss_last_minute > 0.01 ? "bad" : "", "live_loss"));
    const r10 = se.streams[i]?.r10 ?? [];
    const k = se.thresholds_ms.findIndex((l) => l >= 100);
    const r = r10[k >= 0 ? k : 0];
    if (r && r.sent > 0) box.appendChild(fig(`R(${se.thresholds_ms[k >= 0 ? k : 0]} ms), 10 min`, pctNum(r.r), `${r.ok} of ${r.sent} in time`, "", "live_r"));
  }
  if (st.load) {
    const l = st.load;
    box.appendChild(fig("Load now", [l.state, ""], `↑ ${(l.up_rate_bps / 1e6).toFixed(1)} ↓ ${(l.down_rate_bps / 1e6).toFixed(1)} Mbit/s on ${l.interface}${l.stale ? " (stale)" : ""}`, "", "live_load"));
  } else {
    box.appendChild(fig("Load now", ["unknown", ""], "no --interface or counters", "", "live_load"));
  }
  box.appendChild(fig("Alerts firing", [String(al.firing.length), ""], al.firing.length ? al.firing.map((a) => a.rule).join(", ") : "none", al.firing.length ? "bad" : "good", "live_alerts"));
  list($("firing"), al.firing.map((a) => alertLine(a, st.now_ns)), "", "firing");
  list($("changes"), al.recent.slice().reverse().map((a) => alertLine(a, st.now_ns)), "No alert change since the daemon started.");
  if (!answer) pickStreams();
}

function list(box: HTMLElement, lines: string[], none: string, cls = ""): void {
  box.textContent = "";
  if (lines.length === 0) {
    if (none) box.appendChild(el("p", none, "muted"));
    return;
  }
  const ul = el("ul", undefined, cls);
  for (const l of lines) ul.appendChild(el("li", l));
  box.appendChild(ul);
}

async function poll(): Promise<void> {
  try {
    const [st, se, al] = await Promise.all([getJSON<Status>("status"), getJSON<Series>("series"), getJSON<Alerts>("alerts")]);
    status = st;
    drawLive(st, se, al);
    $("error").textContent = "";
  } catch (e) {
    $("error").textContent = `The daemon is not answering: ${(e as Error).message}`;
  }
}

// ---- range controls ----

function rangeButtons(): void {
  const box = $("ranges");
  box.textContent = "";
  for (const r of RANGES) {
    const b = el("button", r.label);
    b.type = "button";
    b.setAttribute("aria-pressed", String(view.range.span === r.span));
    b.setAttribute("aria-label", `last ${r.label}`);
    b.addEventListener("click", () => {
      view.range = { span: r.span };
      rangeButtons();
      void loadRange();
    });
    box.appendChild(b);
  }
}

function toLocalInput(ns: number): string {
  return new Date(ns / 1e6).toISOString().slice(0, 16);
}

function customForm(): void {
  const f = $("custom") as HTMLFormElement;
  f.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const from = Date.parse(($("from") as HTMLInputElement).value + ":00Z") / 1e3;
    const to = Date.parse(($("to") as HTMLInputElement).value + ":00Z") / 1e3;
    if (!(to > from)) {
      $("range-state").textContent = "The custom range must end after it starts.";
      return;
    }
    view.range = { from, to };
    rangeButtons();
    void loadRange();
  });
}

function pickStreams(): void {
  const names = answer?.report?.streams.map((s) => s.name) ?? status?.streams.map((s) => s.name) ?? [];
  const box = $("stream-pick");
  if (names.length < 2) {
    box.textContent = "";
    return;
  }
  if (box.querySelector("select")?.dataset.names === names.join("\n")) return;
  box.textContent = "";
  const lab = el("label", "Stream ");
  const sel = el("select");
  sel.dataset.names = names.join("\n");
  for (const n of names) {
    const o = el("option", n);
    o.value = n;
    o.selected = n === view.stream;
    sel.appendChild(o);
  }
  sel.addEventListener("change", () => {
    view.stream = sel.value;
    writeHash();
    drawRange();
    void poll();
  });
  lab.appendChild(sel);
  box.appendChild(lab);
}

// ---- the range ----

function chartWidth(): number {
  return Math.max(280, Math.floor($("smoke").clientWidth || 600));
}

async function loadRange(): Promise<void> {
  if (reading) return;
  reading = true;
  writeHash();
  const r = view.range;
  const what = r.span ? `the last ${r.span}` : `${stamp(r.from! * 1e9)} to ${stamp(r.to! * 1e9)} UTC`;
  $("range-state").textContent = `Reading ${what} from the store…`;
  try {
    answer = await getJSON<RangeAnswer>("range?" + rangeQuery(r, chartWidth() / 2));
    const rep = answer.report;
    if (!rep) {
      $("range-state").textContent = `No probe stored in ${what}.`;
    } else {
      const raw = rep.raw_from_ns && rep.raw_from_ns > rep.from_ns ? `; per-minute rollups before ${stamp(rep.raw_from_ns)}` : "";
      $("range-state").textContent = `${stamp(rep.from_ns)} to ${stamp(rep.to_ns)} UTC, read from ${rep.source} rows${raw}.`;
      ($("from") as HTMLInputElement).value = toLocalInput(rep.from_ns);
      ($("to") as HTMLInputElement).value = toLocalInput(rep.to_ns);
    }
    pickStreams();
    drawRange();
  } catch (e) {
    $("range-state").textContent = `The range could not be read: ${(e as Error).message}`;
  } finally {
    reading = false;
  }
}

function streamIndex(rep: Report): number {
  const i = rep.streams.findIndex((s) => s.name === view.stream);
  return i < 0 ? 0 : i;
}

function drawRange(): void {
  const rep = answer?.report;
  for (const id of ["summary", "smoke", "smoke-legend", "smoke-table", "rl", "rl-legend", "rl-table", "events", "notes", "smoke-read", "rl-read"]) $(id).textContent = "";
  if (!rep) return;
  const si = streamIndex(rep);
  const bs = buckets(rep, si);
  const evs = (rep.events ?? []).filter((e) => e.stream < 0 || e.stream === si);
  drawSummary(rep, si, evs);
  drawSmoke(rep, bs, evs);
  drawRL(rep, bs, si);
  drawEvents(rep, evs);
  if (rep.notes?.length) list($("notes"), rep.notes, "", "muted");
}

function drawSummary(rep: Report, si: number, evs: MonitorEvent[]): void {
  const s = rep.stats.find((x) => x.stream === si);
  const box = $("summary");
  if (!s || s.sent === 0) return;
  const answered = s.rtt.n > 0;
  if (answered) {
    box.appendChild(fig("Median round trip", msNum(s.rtt.p50_ns / 1e6), `idle baseline ${ms(s.idle_baseline_ns / 1e6)}`, "", "rtt_p50"));
    box.appendChild(fig("99th percentile", msNum(s.rtt.p99_ns / 1e6), `max ${ms(s.rtt.max_ns / 1e6)}`, "", "rtt_p99"));
  }
  const loss = s.lost / s.sent;
  box.appendChild(fig("Loss", pctNum(loss, 3), `${s.lost} of ${s.sent} probes`, loss >= 0.01 ? "bad" : "", "loss"));
  const outs = evs.filter((e) => e.kind === "outage");
  const down = outs.reduce((a, e) => a + Math.max(0, e.end_ns - e.start_ns), 0);
  box.appendChild(fig("Outages", [String(outs.length), ""], outs.length ? `${span(down)} in all` : "none in range", outs.length ? "bad" : "good", "outages"));
  const loaded = evs.filter((e) => e.kind === "loaded");
  const grades = loaded.map((e) => flag(e, "grade")).filter((g): g is string => !!g);
  const order = ["A+", "A", "B", "C", "D", "F"];
  const worst = grades.sort((a, b) => order.indexOf(b) - order.indexOf(a))[0];
  box.appendChild(fig("Loaded episodes", [String(loaded.length), ""], worst ? `worst grade ${worst}` : "none graded", worst && "DF".includes(worst) ? "bad" : "", "loaded"));
  const vs = (rep.profiles ?? []).map((p) => verdictOf(s, p.name)?.verdict);
  const failing = vs.filter((v) => v === "FAIL").length, passing = vs.filter((v) => v === "PASS").length;
  if (vs.length) {
    box.appendChild(fig("Requirement profiles", [`${passing}/${vs.length}`, "pass"], failing ? `${failing} failing` : vs.length > passing ? "some undecided" : "all met",
      failing ? "bad" : passing === vs.length ? "good" : "fair", "profiles"));
  }
}

// Geometry of the smoke chart (px): plot, then the load lanes, then
// the time axis; the events lane is its own SVG below (it holds links).
const M = { left: 46, right: 10, top: 8 };

interface Scale { x: (ns: number) => number; from: number; to: number; w: number }

function xScale(rep: Report, w: number): Scale {
  const from = rep.from_ns, to = rep.to_ns;
  const pw = w - M.left - M.right;
  return { from, to, w, x: (ns) => M.left + ((ns - from) / (to - from)) * pw };
}

function timeAxis(g: Element, sc: Scale, y: number, n: number): void {
  for (const t of timeTicks(sc.from, sc.to, n)) {
    const x = sc.x(t);
    svg("line", { x1: x, x2: x, y1: y, y2: y + 4, class: "ax" }, g);
    const tx = svg("text", { x, y: y + 15, "text-anchor": "middle", class: "ax-text" }, g);
    tx.textContent = tickLabel(t, sc.to - sc.from);
  }
}

/** slider wraps a chart's SVG in a focusable slider over its intervals:
 * the arrow keys (Home, End, Page Up/Down) and the pointer move a cursor
 * and say the interval in words. */
function slider(box: HTMLElement, label: string, n: number, read: HTMLElement, say: (i: number) => string, cursorAt: (i: number) => void): HTMLElement {
  const s = el("div", undefined, "chart");
  s.tabIndex = 0;
  s.setAttribute("role", "slider");
  s.setAttribute("aria-label", label);
  s.setAttribute("aria-valuemin", "0");
  s.setAttribute("aria-valuemax", String(Math.max(0, n - 1)));
  s.setAttribute("aria-valuenow", String(Math.max(0, n - 1)));
  s.setAttribute("aria-valuetext", "the newest interval: press an arrow key to read it");
  let cur = -1;
  const set = (i: number) => {
    if (n === 0) return;
    cur = Math.max(0, Math.min(n - 1, i));
    const t = say(cur);
    s.setAttribute("aria-valuenow", String(cur));
    s.setAttribute("aria-valuetext", t);
    read.textContent = t;
    cursorAt(cur);
  };
  s.addEventListener("keydown", (ev) => {
    const step = { ArrowRight: 1, ArrowLeft: -1, PageUp: 10, PageDown: -10 }[ev.key];
    if (step !== undefined) set((cur < 0 ? n - 1 : cur) + step);
    else if (ev.key === "Home") set(0);
    else if (ev.key === "End") set(n - 1);
    else return;
    ev.preventDefault();
  });
  s.addEventListener("focus", () => { if (cur < 0) set(n - 1); });
  box.appendChild(s);
  (s as HTMLElement & { setIndex?: (i: number) => void }).setIndex = set;
  return s;
}

function pointerIndex(s: HTMLElement, sc: Scale, bs: Bucket[], set: (i: number) => void): void {
  s.addEventListener("pointermove", (ev) => {
    const r = s.getBoundingClientRect();
    const ns = sc.from + ((ev.clientX - r.left - M.left) / (r.width - M.left - M.right)) * (sc.to - sc.from);
    const i = bs.findIndex((b) => ns >= b.start && ns < b.end);
    if (i >= 0) set(i);
  });
}

function bucketText(b: Bucket): string {
  const t = `${stamp(b.start)}–${stamp(b.end).slice(11)} UTC`;
  const p = b.p;
  if (!p || p.sent === 0) return `${t}: no data (nothing stored)`;
  if (p.lost >= p.sent) return `${t}: all ${p.sent} probes lost`;
  const q = p.smoke_ns ?? [];
  const ln = lanes(p.load);
  return `${t}: median ${ms(q[3] / 1e6)}, p10–p90 ${ms(q[1] / 1e6)}–${ms(q[5] / 1e6)}, max ${ms(q[6] / 1e6)}, loss ${pct(p.lost / p.sent)} (${p.lost}/${p.sent}), load up ${ln.up}, down ${ln.down}`;
}

function drawSmoke(rep: Report, bs: Bucket[], evs: MonitorEvent[]): void {
  const box = $("smoke");
  if (bs.length === 0) {
    box.appendChild(el("p", "No interval to draw.", "muted"));
    return;
  }
  const w = chartWidth();
  const phone = w < 500;
  const ph = phone ? 170 : 230; // plot height
  const laneH = 11, lanesTop = M.top + ph + 6, axisY = lanesTop + 2 * laneH + 4, h = axisY + 20;
  const sc = xScale(rep, w);
  // The y range: up to the highest p90 (a loaded episode shows whole),
  // down to the p10 that all but the lowest 2 % of intervals stay above
  // (one odd interval does not squash the rest); the extremes beyond are
  // clipped at the edges.
  const p10s: number[] = [];
  let hi = 0;
  for (const b of bs) {
    const q = b.p?.smoke_ns;
    if (!q) continue;
    p10s.push(q[1] / 1e6);
    hi = Math.max(hi, q[5] / 1e6, q[3] / 1e6 * 1.3);
  }
  p10s.sort((a, b) => a - b);
  let lo = p10s[Math.floor(p10s.length * 0.02)] ?? 1;
  if (!(hi > 0)) { lo = 1; hi = 100; }
  lo = Math.max(0.01, lo / 1.15);
  hi = Math.max(hi * 1.1, lo * 3);
  const ly = (v: number) => M.top + ph - ((Math.log(Math.max(v, lo)) - Math.log(lo)) / (Math.log(hi) - Math.log(lo))) * ph;
  const y = (v: number) => Math.max(M.top, Math.min(M.top + ph, ly(v)));

  const root = svg("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, "aria-hidden": "true", focusable: "false" });
  const defs = svg("defs", {}, root);
  const pat = svg("pattern", { id: "hatch", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
  svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "hatch-line" }, pat);
  // Ticks at least 16 px apart: 1-2-5, else decades only.
  let ticks = logTicks(lo, hi);
  if (ticks.length > ph / 16) ticks = ticks.filter((t) => Number.isInteger(+Math.log10(t).toFixed(6)));
  for (const t of ticks) {
    svg("line", { x1: M.left, x2: w - M.right, y1: ly(t), y2: ly(t), class: "ax" }, root);
    const tx = svg("text", { x: M.left - 5, y: ly(t) + 4, "text-anchor": "end", class: "ax-text" }, root);
    tx.textContent = t >= 1000 ? `${t / 1000} s` : `${t} ms`;
  }
  const bw = (b: Bucket) => Math.max(1, sc.x(b.end) - sc.x(b.start));
  // Gaps (no rows) hatched, runs merged; 100 % loss a full red column.
  for (let i = 0; i < bs.length; i++) {
    if (bs[i].p && bs[i].p!.sent > 0) continue;
    let j = i;
    while (j + 1 < bs.length && !(bs[j + 1].p && bs[j + 1].p!.sent > 0)) j++;
    svg("rect", { x: sc.x(bs[i].start), y: M.top, width: sc.x(bs[j].end) - sc.x(bs[i].start), height: ph, class: "nodata" }, root);
    i = j;
  }
  const meds: Record<string, string[]> = {};
  for (const b of bs) {
    const p = b.p;
    if (!p || p.sent === 0) continue;
    const x = sc.x(b.start), wd = bw(b);
    if (p.lost >= p.sent) {
      svg("rect", { x, y: M.top, width: wd, height: ph, class: "lfull" }, root);
      svg("rect", { x, y: M.top, width: wd, height: 4, class: "lfull-top" }, root);
      continue;
    }
    const q = p.smoke_ns!;
    for (const [a, z, cls] of [[0, 6, "s1"], [1, 5, "s2"], [2, 4, "s3"]] as [number, number, string][]) {
      const y1 = y(q[z] / 1e6), y0 = y(q[a] / 1e6);
      svg("rect", { x, y: y1, width: wd, height: Math.max(0.8, y0 - y1), class: cls }, root);
    }
    const c = lossClass(p.sent, p.lost);
    (meds[c] ??= []).push(`M${x.toFixed(1)} ${y(q[3] / 1e6).toFixed(1)}h${Math.max(wd, 1.5).toFixed(1)}`);
  }
  for (const [c, d] of Object.entries(meds)) svg("path", { d: d.join(""), class: `med ${c}` }, root);
  // The load lanes: up then down.
  for (const [k, dir] of [[0, "up"], [1, "down"]] as [number, "up" | "down"][]) {
    const yy = lanesTop + k * laneH;
    const tx = svg("text", { x: M.left - 5, y: yy + 9, "text-anchor": "end", class: "lane-text" }, root);
    tx.textContent = dir === "up" ? "load ↑" : "load ↓";
    let runStart = -1, runCls = "";
    const flush = (i: number) => {
      if (runStart >= 0 && runCls !== "") svg("rect", { x: sc.x(bs[runStart].start), y: yy, width: sc.x(bs[i - 1].end) - sc.x(bs[runStart].start), height: laneH - 2, class: "ln-" + runCls }, root);
    };
    bs.forEach((b, i) => {
      const cls: Lane | "" = b.p && b.p.sent > 0 ? lanes(b.p.load)[dir] : "";
      if (cls !== runCls) { flush(i); runStart = i; runCls = cls; }
    });
    flush(bs.length);
  }
  svg("line", { x1: M.left, x2: w - M.right, y1: axisY, y2: axisY, class: "ax" }, root);
  timeAxis(root, sc, axisY, phone ? 4 : 8);
  const cursor = svg("line", { x1: -10, x2: -10, y1: M.top, y2: axisY, class: "cursor", visibility: "hidden" }, root);

  const s = slider(box, "Round-trip time per interval: arrow keys read each one", bs.length, $("smoke-read"), (i) => bucketText(bs[i]), (i) => {
    const x = sc.x(bs[i].start) + bw(bs[i]) / 2;
    cursor.setAttribute("x1", String(x));
    cursor.setAttribute("x2", String(x));
    cursor.setAttribute("visibility", "visible");
  });
  s.appendChild(root);
  pointerIndex(s, sc, bs, (s as HTMLElement & { setIndex: (i: number) => void }).setIndex);
  box.appendChild(eventLane(evs, sc));
  smokeLegend();
  lazyTable($("smoke-table"), () => smokeTable(bs));
}

/** eventLane draws the events on the smoke graph's time axis, each a
 * link to its row in the events table. */
function eventLane(evs: MonitorEvent[], sc: Scale): SVGElement {
  const h = 22;
  const root = svg("svg", { viewBox: `0 0 ${sc.w} ${h}`, width: sc.w, height: h, role: "group", "aria-label": `${evs.length} events on the timeline` });
  const t = svg("text", { x: M.left - 5, y: 14, "text-anchor": "end", class: "lane-text" }, root);
  t.textContent = "events";
  evs.slice(-400).forEach((e) => {
    const i = (answer?.report?.events ?? []).indexOf(e);
    const a = svg("a", { href: `#ev-${i}`, "aria-label": `${eventTitle(e)} at ${stamp(e.start_ns)} UTC` }, root);
    a.addEventListener("click", () => highlight(`ev-${i}`));
    const x0 = sc.x(Math.max(e.start_ns, sc.from)), x1 = sc.x(Math.min(Math.max(e.end_ns, e.start_ns), sc.to));
    const kind = ["outage", "loaded", "baseline-step", "restart", "alert"].includes(e.kind) ? e.kind : "other";
    const r = svg("rect", { x: Math.min(x0, x1 - 4), y: 3, width: Math.max(5, x1 - x0), height: 14, rx: 2, class: `ev ev-${kind}` }, a);
    svg("title", {}, r).textContent = `${eventTitle(e)}, ${stamp(e.start_ns)} UTC: ${e.text}`;
  });
  return root;
}

function highlight(id: string): void {
  document.querySelectorAll("tr.hl").forEach((r) => r.classList.remove("hl"));
  $(id)?.classList.add("hl");
}

function swatch(cls: string, line = false): SVGElement {
  const s = svg("svg", { viewBox: "0 0 24 12", "aria-hidden": "true" });
  if (line) svg("path", { d: "M0 6h24", class: cls }, s);
  else svg("rect", { x: 0, y: 1, width: 24, height: 10, class: cls }, s);
  return s;
}

function legendItem(box: HTMLElement, sw: SVGElement, text: string): void {
  const sp = el("span");
  sp.appendChild(sw);
  sp.appendChild(document.createTextNode(text));
  box.appendChild(sp);
}

function smokeLegend(): void {
  const box = $("smoke-legend");
  legendItem(box, swatch("s3"), "p25–p75");
  legendItem(box, swatch("s2"), "p10–p90");
  legendItem(box, swatch("s1"), "min–max");
  for (const [c, t] of LOSS_LEGEND) legendItem(box, c === "lfull" ? swatch("lfull-top") : swatch(`med line ${c}`, true), c === "lfull" ? t : `median, ${t}`);
  const hatch = swatch("nodata");
  const defs = svg("defs", {});
  const pat = svg("pattern", { id: "hatch-l", width: 6, height: 6, patternUnits: "userSpaceOnUse", patternTransform: "rotate(45)" }, defs);
  svg("line", { x1: 0, y1: 0, x2: 0, y2: 6, class: "hatch-line" }, pat);
  hatch.prepend(defs);
  hatch.querySelector("rect")!.setAttribute("fill", "url(#hatch-l)");
  legendItem(box, hatch, "no data");
  for (const l of ["idle", "loaded", "saturated"]) legendItem(box, swatch("ln-" + l), `load ${l}`);
}

function lazyTable(box: HTMLElement, make: () => HTMLElement): void {
  const d = box.closest("details")!;
  const fill = () => { if (d.open && !box.firstChild) box.appendChild(make()); };
  d.ontoggle = fill;
  fill();
}

function table(head: string[], rows: string[][]): HTMLTableElement {
  const t = el("table");
  const hr = t.createTHead().insertRow();
  for (const h of head) {
    const th = el("th", h);
    th.scope = "col";
    hr.appendChild(th);
  }
  const body = t.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    for (const c of r) tr.appendChild(el("td", c));
  }
  return t;
}

function smokeTable(bs: Bucket[]): HTMLElement {
  const rows = bs.filter((b) => b.p && b.p.sent > 0).map((b) => {
    const p = b.p!, q = p.smoke_ns ?? [], ln = lanes(p.load);
    const v = (k: number) => (q.length ? ms(q[k] / 1e6) : "all lost");
    return [stamp(b.start), String(p.sent), pct(p.lost / p.sent), v(0), v(1), v(2), v(3), v(4), v(5), v(6), ln.up, ln.down];
  });
  return table(["interval (UTC)", "sent", "loss", "min", "p10", "p25", "median", "p75", "p90", "max", "load ↑", "load ↓"], rows);
}

function drawRL(rep: Report, bs: Bucket[], si: number): void {
  const box = $("rl");
  const lines = profileLines(rep, bs).slice(0, 6);
  if (lines.length === 0 || bs.length === 0) {
    box.appendChild(el("p", "No requirement profile to draw.", "muted"));
    return;
  }
  const w = chartWidth();
  const ph = w < 500 ? 130 : 160, axisY = M.top + ph + 4, h = axisY + 20;
  const sc = xScale(rep, w);
  const top = Math.min(5, Math.max(3, ...lines.map((l) => Math.ceil(nines(l.profile.reliability)) + 1)));
  const y = (r: number) => M.top + ph - (Math.min(nines(r), top) / top) * ph;
  const root = svg("svg", { viewBox: `0 0 ${w} ${h}`, width: w, height: h, "aria-hidden": "true", focusable: "false" });
  for (let k = 0; k <= top; k++) {
    const yy = M.top + ph - (k / top) * ph;
    svg("line", { x1: M.left, x2: w - M.right, y1: yy, y2: yy, class: "ax" }, root);
    const tx = svg("text", { x: M.left - 5, y: yy + 4, "text-anchor": "end", class: "ax-text" }, root);
    tx.textContent = k === 0 ? "0 %" : k >= 5 ? "99.999 %" : `${(100 * (1 - 10 ** -k)).toFixed(Math.max(0, k - 2))} %`;
  }
  // One dashed grey line per required reliability, labelled with it
  // directly: profiles that need the same share one line.
  // Labels closer than a line of text to the one before move left of
  // it, so that close requirements (98 %, 99 %, 99.5 %) stay readable.
  let prev = { y: -1e9, right: w - M.right - 4 };
  for (const q of reqLabels(lines.map((l) => l.profile)).sort((a, b) => a.reliability - b.reliability)) {
    const yy = y(q.reliability);
    svg("line", { x1: M.left, x2: w - M.right, y1: yy, y2: yy, class: "rl-req" }, root);
    const text = `needs ${pct(q.reliability, 1)}`;
    const right = Math.abs(prev.y - yy) < 12 ? prev.right - 6 * text.length - 10 : w - M.right - 4;
    const tx = svg("text", { x: right, y: yy - 3, "text-anchor": "end", class: "rl-req-text" }, root);
    tx.textContent = text;
    prev = { y: yy, right };
  }
  // Lines whose R is the same in every interval are drawn once (the
  // first's colour and dash); the legend says which profiles share it.
  const group = lineGroups(lines);
  const drawn = [...new Set(group)];
  drawn.forEach((k, n) => {
    let d = "";
    let pen = false;
    lines[k].r.forEach((r, i) => {
      if (r === null) { pen = false; return; }
      const x0 = sc.x(bs[i].start), x1 = sc.x(bs[i].end);
      d += `${pen ? "L" : "M"}${x0.toFixed(1)} ${y(r).toFixed(1)}L${x1.toFixed(1)} ${y(r).toFixed(1)}`;
      pen = true;
    });
    // Each its own dash, and wider lines underneath: lines that meet in
    // some intervals still show each one there.
    svg("path", { d, class: `rl-line p${k}`, "stroke-width": 1.6 + 1.4 * (drawn.length - 1 - n) }, root);
  });
  svg("line", { x1: M.left, x2: w - M.right, y1: axisY, y2: axisY, class: "ax" }, root);
  timeAxis(root, sc, axisY, w < 500 ? 4 : 8);
  const cursor = svg("line", { x1: -10, x2: -10, y1: M.top, y2: axisY, class: "cursor", visibility: "hidden" }, root);
  const say = (i: number) => {
    const b = bs[i];
    const t = `${stamp(b.start)}–${stamp(b.end).slice(11)} UTC`;
    if (!b.p || b.p.sent === 0) return `${t}: no data`;
    return `${t}: ` + lines.map((l) => `${l.profile.name} R(${span(l.profile.latency_ns)}) ${pct(l.r[i] ?? -1, 3)} (needs ${pct(l.profile.reliability, 1)})`).join("; ");
  };
  const s = slider(box, "R(L) per requirement profile per interval: arrow keys read each one", bs.length, $("rl-read"), say, (i) => {
    const x = sc.x(bs[i].start) + Math.max(1, sc.x(bs[i].end) - sc.x(bs[i].start)) / 2;
    cursor.setAttribute("x1", String(x));
    cursor.setAttribute("x2", String(x));
    cursor.setAttribute("visibility", "visible");
  });
  s.appendChild(root);
  pointerIndex(s, sc, bs, (s as HTMLElement & { setIndex: (i: number) => void }).setIndex);
  const lg = $("rl-legend");
  const st = rep.stats.find((x) => x.stream === si);
  lines.forEach((l, k) => {
    const v = verdictOf(st, l.profile.name)?.verdict;
    const r = st?.reliability.find((x) => x.l_ns === l.profile.latency_ns);
    const same = group[k] !== k ? ` (identical to ${lines[group[k]].profile.name} in every interval: one line)` : "";
    legendItem(lg, swatch(`rl-line line p${group[k]}`, true), `${l.profile.name}: R(${span(l.profile.latency_ns)}) ${r ? pct(r.r, 3) : "–"} over the range, needs ${pct(l.profile.reliability, 1)} (grey dashed line)${same}`);
    if (v) lg.lastElementChild!.appendChild(el("strong", ` ${v}`, v === "PASS" ? "good" : v === "FAIL" ? "bad" : "fair"));
  });
  lazyTable($("rl-table"), () => table(["interval (UTC)", ...lines.map((l) => `${l.profile.name} R(${span(l.profile.latency_ns)})`)],
    bs.flatMap((b, i) => (b.p && b.p.sent > 0 ? [[stamp(b.start), ...lines.map((l) => pct(l.r[i] ?? -1, 3))]] : []))));
}

function drawEvents(rep: Report, evs: MonitorEvent[]): void {
  const box = $("events");
  if (evs.length === 0) {
    box.appendChild(el("p", "No event in this range.", "muted"));
    return;
  }
  const all = rep.events ?? [];
  const t = el("table");
  const hr = t.createTHead().insertRow();
  for (const h of ["start (UTC)", "event", "stream", "figures", "what happened"]) {
    const th = el("th", h);
    th.scope = "col";
    hr.appendChild(th);
  }
  const body = t.createTBody();
  for (const e of evs.slice().reverse()) {
    const tr = body.insertRow();
    tr.id = `ev-${all.indexOf(e)}`;
    tr.appendChild(el("td", stamp(e.start_ns)));
    const k = el("td");
    const kind = ["outage", "loaded", "baseline-step", "restart", "alert"].includes(e.kind) ? e.kind : "other";
    k.appendChild(el("span", eventTitle(e), `kind ev-${kind}`));
    tr.appendChild(k);
    tr.appendChild(el("td", e.stream < 0 ? "all" : rep.streams[e.stream]?.name ?? String(e.stream)));
    tr.appendChild(el("td", eventFigures(e).join(", ")));
    tr.appendChild(el("td", e.text));
  }
  box.appendChild(t);
  if (location.hash.includes("ev-")) highlight(location.hash.slice(1));
}

if (typeof document !== "undefined") {
  rangeButtons();
  customForm();
  void poll();
  void loadRange();
  setInterval(() => void poll(), POLL_MS);
  // A link or a bookmark with another range (#range=7d, #range=FROM-TO).
  addEventListener("hashchange", () => {
    if (!location.hash.startsWith("#range=")) return;
    view = readHash();
    rangeButtons();
    void loadRange();
  });
  setInterval(() => { if (view.range.span) void loadRange(); }, RANGE_REFRESH_MS);
  let last = 0;
  new ResizeObserver(() => {
    const w = chartWidth();
    if (Math.abs(w - last) > 20 && answer) { last = w; drawRange(); }
    last = last || w;
  }).observe($("smoke"));
}
