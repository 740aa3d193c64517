// The page: one Start button runs baseline RTT, download and upload with an
// automatic stream count and latency under load; the server joins its own
// measurements and returns a sonde.result/v1 (docs/browser.md).
import { AutoStreams, limited, recentRate, summary, fmtRate, fmtMs, median, LiveFlow, TCPSample, ResultLike } from "./analysis";
import type { FromWorker, StartMsg } from "./worker";
import { ForeignProbes } from "./foreign";
import { LiveCharts } from "./charts";
import { listPast } from "./past";
import { localResult } from "./analysis";
import { runRTCQuality, rtcReport, rtcSummary, MESSAGE_BYTES } from "./rtc";
import { headline, rateParts, msParts } from "./headline";
import { latencyBoxes, oneWay } from "./detail";
import { choices, nearest, pingAll, Choice } from "./servers";

// base is the origin of the server under test: "" for this one, else one
// of the listed servers (servers.ts), chosen before a run starts.
let base = "";
const SESSIONS = "/sonde/v1/sessions";
const API = () => base + SESSIONS;
const PING = () => `${base}/sonde/v1/ping`;
const params = new URLSearchParams(location.search);
const DURATION_S = clampNum(Number(params.get("duration") ?? 10), 2, 60);
const PROBE_MS = 20;
const RTC_DURATION_S = clampNum(Number(params.get("rtc_duration") ?? 5), 1, 30);
// Data channel message bytes; the server refuses sizes outside its range.
const RTC_SIZE = clampNum(Number(params.get("rtc_size") ?? MESSAGE_BYTES), 16, 1150);
const MAX_STREAMS = clampNum(Number(params.get("max_streams") ?? 16), 1, 63);
// The streams each direction opens at once before the auto rule grows
// them (internal/tcptest specs: the same count).
const START_STREAMS = 4;
// ?crash=download|upload|probe (tests only): the first worker of that kind
// throws 1.5 s after it starts, to check that the page survives it.
const CRASH = params.get("crash");
const OPEN_TIMEOUT_S = 15;
// Upload frames: 256 KiB, well under Chromium's largest pooled allocation
// (960 KiB), so the messages it queues reuse memory instead of each being a
// fresh mmap (docs/browser.md, "Throughput").
const UPLOAD_FRAME = 256 << 10;
const $ = (id: string) => document.getElementById(id)!;
const clock = () => performance.timeOrigin + performance.now();

function clampNum(v: number, lo: number, hi: number): number {
  return Number.isFinite(v) ? Math.min(hi, Math.max(lo, v)) : lo;
}

interface Sample { t_s: number; rtt_ms: number; server_ms: number }
type Kind = "download" | "upload";
// A load phase: one direction, or both at once (the bidirectional phase,
// whose streams' tags start with "bidir-": protocol.TagBidir).
type LoadPhase = Kind | "bidir";
// ?bidir=0 leaves the bidirectional phase out (shorter runs).
const BIDIR = params.get("bidir") !== "0";
interface Stream { tag: string; worker: Worker; closed: Promise<Extract<FromWorker, { type: "closed" }>>; counts: { t_s: number; bytes: number }[] }

class Run {
  t0 = 0;
  id = "";
  offsetS = 0;
  errors: string[] = [];
  probes: Sample[] = [];
  self: (Sample & { kind: string })[] = [];
  lostAt: number[] = [];
  notes: string[] = []; // not failures: what the run had to work around
  probe?: Stream;
  charts = new LiveCharts($("charts"));
  since = () => (clock() - this.t0) / 1000;

  async session(): Promise<void> {
    this.t0 = clock();
    let r: Response;
    try {
      r = await fetch(API(), { method: "POST", body: JSON.stringify({ client: "sonde-web", duration_s: DURATION_S, tcpinfo_interval_ms: 20 }) });
    } catch (e) {
      // A browser hides why a cross-origin request failed: say both.
      throw new Error(base ? `${base} did not answer this page: it is unreachable, or it does not let ${location.origin} test against it (its sonde serve --cors-origins)` : `session request: ${(e as Error).message}`);
    }
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error ?? `session request: HTTP ${r.status}`);
    this.offsetS = this.since() / 2;
    this.id = body.id;
  }

  open(kind: StartMsg["kind"], tag: string, intervalMs: number): Promise<Stream> {
    const worker = new Worker("/worker.js");
    const s: Stream = { tag, worker, counts: [], closed: null! };
    let opened: (v: Stream) => void, failed: (e: Error) => void;
    const ready = new Promise<Stream>((a, b) => { opened = a; failed = b; });
    let started = false; // the worker's script ran: it has sent a message
    s.closed = new Promise((resolve) => {
      worker.onmessage = (ev: MessageEvent<FromWorker>) => {
        const m = ev.data;
        started = true;
        switch (m.type) {
          case "open": opened(s); break;
          case "count": s.counts.push({ t_s: m.t_s, bytes: m.bytes }); break;
          case "self": for (const x of m.rtts) this.self.push({ ...x, kind }); break;
          case "rtt":
            this.probes.push({ t_s: m.t_s, rtt_ms: m.rtt_ms, server_ms: m.server_ms });
            live.rtt = m.rtt_ms; // drawn by drawLive, not here
            break;
          case "error": failed(new Error(m.message)); break;
          case "closed":
            if (m.error) this.errors.push(`${kind} stream ${tag}: ${m.error}`);
            this.lostAt.push(...(kind === "probe" ? m.lost : []));
            failed(new Error(m.error ?? `${kind} stream closed before it opened`));
            resolve(m);
            worker.terminate();
            break;
        }
      };
      worker.onerror = (ev) => {
        ev.preventDefault();
        worker.terminate(); // a crashed worker's socket must not linger
        const msg = started || ev.message
          ? `${kind} worker ${tag} crashed: ${ev.message || "unknown error"}`
          : `${kind} worker ${tag} could not start: its script did not load (is the server gone?)`;
        this.errors.push(msg);
        failed(new Error(msg));
        resolve({ type: "closed", counts: s.counts, lost: [], sent: 0, error: msg });
      };
    });
    const host = new URL(base || location.origin);
    const url = `${host.protocol === "https:" ? "wss:" : "ws:"}//${host.host}${SESSIONS}/${this.id}/${kind}?tag=${tag}`;
    const crashAfterMs = CRASH === kind && (tag === `${kind[0]}0` || kind === "probe") ? 1500 : undefined;
    worker.postMessage({ cmd: "start", url, kind, t0: this.t0, intervalMs, frameBytes: UPLOAD_FRAME, crashAfterMs } satisfies StartMsg);
    // 15 s: a handshake takes a few RTTs, but Firefox delays new sockets
    // for seconds while it works through a fast download's backlog
    // (docs/browser.md, "Firefox").
    const timeout = setTimeout(() => {
      worker.terminate(); // it must not open later, unseen and never stopped
      failed(new Error(`${kind} stream ${tag} did not open within ${OPEN_TIMEOUT_S} s`));
    }, OPEN_TIMEOUT_S * 1000);
    return ready.finally(() => clearTimeout(timeout));
  }

  async live(): Promise<LiveFlow[]> {
    const r = await fetch(`${API()}/${this.id}/live`, { cache: "no-store" });
    if (!r.ok) throw new Error(`live: HTTP ${r.status}`);
    return (await r.json()).flows as LiveFlow[];
  }

  // settle waits (at most maxS) until a probe sent from now on is answered:
  // a browser that queued incoming data faster than it processed it
  // (Firefox) is still busy with it after a phase ends, and the next
  // phase's streams would time out while opening.
  async settle(maxS: number): Promise<void> {
    const from = this.since(), deadline = from + maxS;
    let gone = false;
    void this.probe?.closed.then(() => { gone = true; });
    while (this.since() < deadline && !gone && !this.probes.some((p) => p.t_s > from)) await sleep(50);
  }

  window(from: number, to: number) {
    const samples = this.probes.filter((s) => s.t_s >= from && s.t_s <= to);
    const lost = this.lostAt.filter((t) => t >= from && t <= to).length;
    return { samples, lost };
  }

  // phase runs a load phase: one direction, or "bidir" (download and
  // upload streams at once, each direction growing its streams on its
  // own). It returns the phase's record per direction.
  async phase(name: LoadPhase) {
    const kinds: Kind[] = name === "bidir" ? ["download", "upload"] : [name];
    const prefix = name === "bidir" ? "bidir-" : "";
    const label = (k: Kind) => (name === "bidir" ? `bidir ${k}` : k);
    const start = this.since();
    const dirs = kinds.map((kind) => ({
      kind, streams: [] as Stream[], auto: new AutoStreams(Math.max(1, Math.floor(MAX_STREAMS / kinds.length))),
      prev: new Map<number, TCPSample>(), serverBytes: [] as { t_s: number; bytes: number }[], lastTotal: 0, lastAt: start,
    }));
    type Dir = (typeof dirs)[number];
    const add = async (d: Dir) => { d.streams.push(await this.open(d.kind, `${prefix}${d.kind[0]}${d.streams.length}`, 100)); };
    // A stream beyond the first that fails to open ends the growth, not
    // the phase: the figures stand for the streams that ran, and a note
    // says why there were not more (Firefox delays new sockets behind a
    // fast download's backlog; docs/browser.md, "Firefox").
    const grow = async (d: Dir) => {
      try { await add(d); } catch (e) { this.notes.push(`${label(d.kind)}: ${(e as Error).message}; continued with ${d.streams.length} stream(s)`); d.auto.stopped = true; }
    };
    let foreign: ForeignProbes | undefined;
    try {
      for (const d of dirs) await add(d);
      foreign = new ForeignProbes(PING());
      // START_STREAMS at once, as the bare page and the speed-test sites
      // open them and as `sonde test --streams auto` starts: a lossy
      // backoff on one of few flows on a long fat path costs the phase's
      // goodput (docs/browser.md, "Throughput").
      for (const d of dirs) while (!d.auto.stopped && d.streams.length < Math.min(START_STREAMS, d.auto.max)) await grow(d);
      const step = Math.max(0.5, (4 * median(this.probes.map((p) => p.rtt_ms))) / 1000 || 0.5);
      let nextStep = this.since() + step;
      // The server's /live (its flows' counts and TCP_INFO) is the only
      // upload count, so an upload reads it every tick. A download counts
      // its own bytes in the workers and needs /live only for the stream
      // count's step (limited: the senders' TCP_INFO since the last
      // reading): read once here and then at each step while it grows, so
      // the page's thread and the server do not serialise and parse it
      // four times a second beside the bytes they move.
      const everyTick = dirs.some((d) => d.kind === "upload");
      if (!everyTick) limited(dirs[0].prev, await this.live().catch(() => []), "download");
      while (this.since() - start < DURATION_S && !stopRequested) {
        await sleep(250);
        const now = this.since();
        let flows: LiveFlow[] = [];
        const stepping = now >= nextStep && dirs.some((d) => !d.auto.stopped);
        if (everyTick || stepping) {
          try { flows = await this.live(); } catch (e) { this.errors.push(`${name}: the server stopped answering (${(e as Error).message})`); break; }
        }
        const point: { t: number; down?: number; up?: number; rtt?: number } = { t: now, rtt: this.probes.at(-1)?.rtt_ms };
        let bps = 0;
        for (const d of dirs) {
          const tags = new Set(d.streams.map((s) => s.tag));
          const total = d.kind === "download"
            ? d.streams.reduce((a, s) => a + (s.counts.at(-1)?.bytes ?? 0), 0)
            : flows.filter((f) => f.kind === "upload" && (f.tag === undefined || tags.has(f.tag))).reduce((a, f) => a + f.bytes, 0);
          d.serverBytes.push({ t_s: now, bytes: total });
          point[d.kind === "download" ? "down" : "up"] = recentRate(d.serverBytes, 0.5);
          bps += recentRate(d.serverBytes, 1);
        }
        this.charts.push(point);
        live.bps = bps; live.rtt = point.rtt ?? NaN;
        live.streams = dirs.reduce((a, d) => a + d.streams.length, 0);
        if (now >= nextStep) {
          nextStep = now + step;
          for (const d of dirs) {
            if (d.auto.stopped) continue;
            const total = d.serverBytes.at(-1)!.bytes;
            const g = ((total - d.lastTotal) * 8) / (now - d.lastAt);
            d.lastTotal = total; d.lastAt = now;
            const lim = d.kind === "download" ? limited(d.prev, flows, d.kind) : null;
            if (d.auto.step(g, lim, d.streams.length) === "add") await grow(d);
          }
        }
      }
    } catch (e) {
      const m = (e as Error).message;
      if (!this.errors.some((x) => x.includes(m))) this.errors.push(`${name}: ${m}`);
    }
    const end = this.since();
    const foreignRes = foreign?.stop();
    const all = dirs.flatMap((d) => d.streams);
    for (const s of all) s.worker.postMessage({ cmd: "stop" });
    await Promise.all(all.map((s) => s.closed));
    const lat = this.window(start, end);
    const out: Partial<Record<Kind, unknown>> = {};
    for (const d of dirs) {
      const closed = await Promise.all(d.streams.map((s) => s.closed));
      const counts: Record<string, { t_s: number; bytes: number }[]> = {};
      d.streams.forEach((s, i) => { counts[s.tag] = closed[i].counts; });
      const selfMs = this.self.filter((s) => s.kind === d.kind && s.t_s >= start && s.t_s <= end).map((s) => s.rtt_ms);
      out[d.kind] = { auto: true, start_s: start, end_s: end, tags: d.streams.map((s) => s.tag), counts: d.kind === "download" ? counts : undefined, latency: lat, self_ms: selfMs, foreign: foreignRes,
        // The server's upload counts as /live showed them: the page's only
        // upload figure if the server is gone before the report.
        live_counts: d.kind === "upload" ? d.serverBytes : undefined };
    }
    return out;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The live view: the phase loop and the probes only write these figures.
// A 250 ms ticker asks for one animation frame, in which drawLive draws
// what changed: drawing never runs on the receive path (the workers),
// never more often than the screen, and at most four times a second, so
// a busy link's page is not kept rendering frames at display rate while
// the browser needs the CPU to receive (docs/browser.md, "Throughput").
type Phase = "idle" | LoadPhase | "webrtc";
const live = { running: false, phase: "idle" as Phase, bps: NaN, rtt: NaN, streams: 0, t0: 0, plannedS: 1 };
const DRAW_EVERY_MS = 250;
let drawTicker: ReturnType<typeof setInterval> | undefined;
let stopRequested = false;
let lastDrawn = "";
function drawLive(): void {
  if (!live.running) return;
  const rate = Number.isFinite(live.bps) ? rateParts(live.bps) : ["–", "Mbit/s"];
  const rtt = Number.isFinite(live.rtt) ? msParts(live.rtt)[0] : "–";
  const progress = Math.min(100, (100 * (clock() - live.t0)) / 1000 / live.plannedS);
  const key = `${live.phase}|${rate[0]}|${rate[1]}|${rtt}|${progress.toFixed(0)}`;
  if (key !== lastDrawn) {
    lastDrawn = key;
    $("live-rate").textContent = rate[0];
    $("live-rate-unit").textContent = rate[1];
    $("live-rate-label").textContent = live.phase === "download" ? "Download" : live.phase === "upload" ? "Upload" : live.phase === "bidir" ? "Both ways, total" : "Throughput";
    $("live-rtt").textContent = rtt;
    $("now").textContent = `${live.phase}: ${fmtRate(live.bps)} over ${live.streams} streams, RTT ${fmtMs(live.rtt)}`;
    ($("progress-bar") as HTMLElement).style.width = progress.toFixed(1) + "%";
    const order: Phase[] = ["idle", "download", "upload", "bidir", "webrtc"];
    document.querySelectorAll<HTMLElement>("#live .phases span").forEach((el) => {
      const i = order.indexOf(el.dataset.p as Phase), cur = order.indexOf(live.phase);
      el.className = i === cur ? "on" : i < cur ? "done" : "";
    });
  }
}
function setPhase(p: Phase): void { live.phase = p; live.bps = NaN; live.streams = 0; }

let lastResult: unknown = null;

async function startTest(): Promise<void> {
  const btn = $("start") as HTMLButtonElement;
  btn.disabled = true;
  ($("save") as HTMLButtonElement).disabled = true;
  ($("server") as HTMLSelectElement).disabled = ($("nearest") as HTMLButtonElement).disabled = true;
  $("report").innerHTML = "";
  $("head").innerHTML = "";
  ($("share") as HTMLAnchorElement).hidden = true;
  $("status").textContent = "Starting…";
  stopRequested = false;
  Object.assign(live, { running: true, phase: "idle", bps: NaN, rtt: NaN, t0: clock(), plannedS: 1.5 + (BIDIR ? 3 : 2) * DURATION_S + 2 * RTC_DURATION_S + 3 });
  $("live").hidden = false;
  $("stop").hidden = false;
  ($("stop") as HTMLButtonElement).disabled = false;
  requestAnimationFrame(drawLive);
  clearInterval(drawTicker);
  drawTicker = setInterval(() => requestAnimationFrame(drawLive), DRAW_EVERY_MS);
  const run = new Run();
  const body: Record<string, unknown> = { software: "sonde-web", user_agent: navigator.userAgent, start: new Date().toISOString(), streams: "auto", duration_s: DURATION_S, probe_interval_ms: PROBE_MS };
  try {
    await run.session();
    body.offset_s = run.offsetS;
    $("status").textContent = "Measuring the idle round trip…";
    run.probe = await run.open("probe", "probe", PROBE_MS);
    const b0 = run.since();
    await sleep(25 * PROBE_MS + 200);
    body.baseline = run.window(b0, run.since());
    for (const p of run.probes) run.charts.push({ t: p.t_s, rtt: p.rtt_ms });
    live.rtt = median(run.probes.map((p) => p.rtt_ms));
    for (const ph of (BIDIR ? ["download", "upload", "bidir"] : ["download", "upload"]) as LoadPhase[]) {
      if (stopRequested) break;
      setPhase(ph);
      $("status").textContent = ph === "bidir" ? "Measuring download and upload at once…" : `Measuring ${ph}…`;
      const rec = await run.phase(ph);
      if (ph === "bidir") body.bidir = rec;
      else body[ph] = rec[ph];
      await run.settle(10);
    }
  } catch (e) {
    run.errors.push((e as Error).message);
  }
  run.probe?.worker.postMessage({ cmd: "stop" });
  if (run.probe) await run.probe.closed;
  if (stopRequested) run.notes.push("stopped by the user before the test's end: the phases not run are absent");
  if (run.id && !stopRequested) {
    setPhase("webrtc");
    // WebRTC quality test (rtc.ts): its failure is one error line, the other results stay.
    const rtc = await runRTCQuality(`${API()}/${run.id}`, { durationS: RTC_DURATION_S, size: RTC_SIZE, status: (s) => ($("status").textContent = s) });
    if (rtc.error) run.errors.push(rtc.error);
    body.webrtc = rtc.result;
  }
  body.errors = run.errors;
  body.notes = run.notes;
  $("status").textContent = "Assembling the report…";
  let result: ResultLike & Record<string, unknown>;
  try {
    if (!run.id) throw new Error("no session");
    const r = await fetch(`${API()}/${run.id}/result`, { method: "POST", body: JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ?? `HTTP ${r.status}`);
    result = j;
  } catch (e) {
    // The server is gone: keep what the page measured itself.
    run.errors.push(`report from the server failed: ${(e as Error).message}; showing the page's own measurements`);
    result = localResult(run.id, body, run.errors);
  }
  fetch(`${API()}/${run.id}`, { method: "DELETE" }).catch(() => {});
  lastResult = result;
  live.running = false;
  clearInterval(drawTicker);
  $("live").hidden = true;
  $("stop").hidden = true;
  render(result, base);
  void showPast();
  $("status").textContent = result.errors?.length ? "Finished with problems (see below)." : "Done.";
  btn.disabled = false;
  ($("server") as HTMLSelectElement).disabled = ($("nearest") as HTMLButtonElement).disabled = false;
  btn.textContent = "Run again";
  ($("save") as HTMLButtonElement).disabled = false;
}

// fmtRPM shows RPM under load beside its idle equivalent (metrics.md §5).
function fmtRPM(p?: { rpm: number; idle_rpm?: number }): string {
  if (!p || !(p.rpm > 0)) return "–";
  return `${p.rpm.toFixed(0)} RPM (idle ${p.idle_rpm ? p.idle_rpm.toFixed(0) : "–"})`;
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}

// render shows a result; from is the origin of the server that holds it
// ("" for this one), whose /r/ID is its permanent link.
function render(r: any, from = ""): void {
  // The hero shrinks so the result is the first screen; not on a stored
  // result's page as it loads, where the shift would move what is read.
  if (!document.body.classList.contains("shared")) document.body.classList.add("has-result");
  $("head").innerHTML = headline(r);
  const share = $("share") as HTMLAnchorElement;
  share.hidden = !r.id || r.partial;
  share.href = `${from}/r/${encodeURIComponent(r.id ?? "")}`;
  const rows: string[] = [];
  if (r.partial) rows.push(`<p class="partial" id="partial">Partial result: the server could not complete the report, so only the page's own figures are shown (no RFC 6349 figures). Save JSON keeps them and the raw measurements.</p>`);
  rows.push(`<section id="summary-box" aria-labelledby="summary-title"><h2 id="summary-title">In words</h2><ul id="summary">${[...summary(r), ...rtcSummary(r)].map((l) => `<li>${esc(l)}</li>`).join("")}</ul></section>`);
  rows.push(latencyBoxes(r), oneWay(r));
  const phases: [string, Kind, any, string][] = [["download", "download", r.download, "Download (server → you)"], ["upload", "upload", r.upload, "Upload (you → server)"],
    ["bidir-download", "download", r.bidir?.download, "Both ways at once: download (server → you)"], ["bidir-upload", "upload", r.bidir?.upload, "Both ways at once: upload (you → server)"]];
  for (const [id, kind, d, title] of phases) {
    if (!d) continue;
    const f = d.rfc6349 ?? { bottleneck: "n/a (no report from the server)" };
    const lat = (d.latency_under_load ?? (id.startsWith("bidir") ? r.bidir?.latency_under_load : undefined))?.rtt_ms;
    const kv: [string, string, string][] = [
      ["goodput", fmtRate(d.goodput_bps), "goodput_bps"],
      ["streams", `${d.streams} (${d.streams_mode})`, "streams"],
      ["RTT under load (median)", fmtMs(lat?.p50 ?? NaN), "loaded_p50"],
      ["responsiveness", fmtRPM(d.rpm), "rpm"],
      ["RFC 6349 window", `${(f.window_start_s ?? 0).toFixed(2)}–${(f.window_end_s ?? 0).toFixed(2)} s`, "window"],
      ["steady-state goodput", fmtRate(f.goodput_bps ?? NaN), "rfc_goodput"],
      ["TCP efficiency", kind === "download" ? `${(f.efficiency_pct ?? 0).toFixed(2)} %` : "n/a (browser sender)", "efficiency"],
      ["buffer delay", `${(f.buffer_delay_pct ?? 0).toFixed(0)} %`, "buffer_delay"],
      ["path MTU / MSS", kind === "download" ? `${f.path_mtu ?? 0} / ${f.mss ?? 0}` : "n/a", "mtu"],
      ["max achievable (window/RTT)", kind === "download" ? fmtRate(f.max_achievable_bps ?? NaN) : "n/a", "max_achievable"],
      ["bottleneck", f.bottleneck || "unknown", "bottleneck"],
    ];
    rows.push(`<section class="dir" id="${id}"><h2>${title}</h2><table>${kv.map(([k, v, id]) => `<tr><th>${k}</th><td data-k="${id}">${esc(v)}</td></tr>`).join("")}</table></section>`);
  }
  if (r.baseline) rows.push(`<p id="baseline">Idle RTT: min <span data-k="baseline_min">${fmtMs(r.baseline.rtt_ms.min)}</span>, median ${fmtMs(r.baseline.rtt_ms.p50)} over ${r.baseline.rtt_ms.n} probes.</p>`);
  rows.push(rtcReport(r));
  const notes = (r.notes ?? []).filter((n: string) => !n.startsWith("browser: "));
  if (notes.length) rows.push(`<h3>Notes</h3><ul id="notes">${notes.map((n: string) => `<li>${esc(n)}</li>`).join("")}</ul>`);
  if (r.errors?.length) rows.push(`<ul id="errors">${r.errors.map((e: string) => `<li>${esc(e)}</li>`).join("")}</ul>`);
  $("report").innerHTML = rows.join("");
}

function save(): void {
  if (!lastResult) return;
  const blob = new Blob([JSON.stringify(lastResult, null, 2)], { type: "application/json" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = `sonde-${(lastResult as any).id || "result"}.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

$("start").addEventListener("click", () => void startTest());
$("stop").addEventListener("click", () => {
  stopRequested = true;
  ($("stop") as HTMLButtonElement).disabled = true;
  $("status").textContent = "Stopping…";
});
// ?autostart=1 runs the test on load: for benchmarks that drive a browser
// without DevTools attached (bench/browser.sh), since a DevTools client
// that watches the network costs the page most of its throughput.
if (params.get("autostart") === "1") void startTest();
$("save").addEventListener("click", save);

function showPast(): Promise<void> {
  return listPast($("past"), (r) => {
    lastResult = r;
    render(r);
    ($("save") as HTMLButtonElement).disabled = false;
    $("status").textContent = `Showing a past result (${(r as any).start ?? ""}).`;
    $("report").scrollIntoView();
  }, (msg) => { $("status").textContent = msg; });
}
void showPast();
// /r/ID (internal/server): a stored result's permanent read-only page:
// render it without running anything.
const shared = /^\/r\/([0-9A-Za-z_-]{1,128})$/.exec(location.pathname);
if (shared) {
  fetch(`/sonde/v1/results/${shared[1]}`).then(async (r) => {
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ?? `HTTP ${r.status}`);
    lastResult = j;
    render(j);
    ($("save") as HTMLButtonElement).disabled = false;
    $("status").textContent = `Showing result ${shared[1]} from ${j.start ?? "an earlier run"}. Start runs a new test.`;
  }).catch((e) => { $("status").textContent = `Could not load result ${shared[1]}: ${(e as Error).message}`; })
    .finally(() => document.body.classList.remove("shared"));
}
// Servers (servers.ts): the other sonde servers this one lists, shown
// only when it lists any; "Pick nearest" measures each and selects the
// one with the lowest round trip.
let servers: Choice[] = [];
const serverSel = $("server") as HTMLSelectElement;
function fillServers(): void {
  serverSel.innerHTML = servers.map((c, i) => `<option value="${i}">${esc(c.name)}${c.origin ? ` (${esc(new URL(c.origin).host)})` : ""}` +
    `${c.rttMs !== undefined ? ` – ${fmtMs(c.rttMs)}` : c.error ? ` – ${esc(c.error)}` : ""}</option>`).join("");
  serverSel.value = String(Math.max(0, servers.findIndex((c) => c.origin === base)));
}
fetch("/sonde/v1/servers", { cache: "no-store" }).then((r) => (r.ok ? r.json() : [])).then((list) => {
  servers = choices(list, location.href);
  if (servers.length < 2) return;
  fillServers();
  $("servers").hidden = false;
}).catch(() => {});
serverSel.addEventListener("change", () => { base = servers[Number(serverSel.value)]?.origin ?? ""; });
$("nearest").addEventListener("click", async () => {
  const b = $("nearest") as HTMLButtonElement;
  b.disabled = serverSel.disabled = true;
  $("status").textContent = `Measuring the round trip to ${servers.length} servers…`;
  await pingAll(servers);
  const i = nearest(servers);
  if (i >= 0) base = servers[i].origin;
  fillServers();
  $("status").textContent = i >= 0 ? `Nearest: ${servers[i].name}, ${fmtMs(servers[i].rttMs!)}.` : "No server answered.";
  b.disabled = serverSel.disabled = false;
});
(window as any).sonde = { result: () => lastResult, server: () => base };
