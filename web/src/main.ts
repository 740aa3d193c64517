// The page: one Start button runs baseline RTT, download and upload with an
// automatic stream count and latency under load; the server joins its own
// measurements and returns a sonde.result/v1 (docs/browser.md).
import { AutoStreams, limited, recentRate, summary, fmtRate, fmtMs, median, LiveFlow, TCPSample, ResultLike } from "./analysis";
import type { FromWorker, StartMsg } from "./worker";

const API = "/sonde/v1/sessions";
const params = new URLSearchParams(location.search);
const DURATION_S = clampNum(Number(params.get("duration") ?? 10), 2, 60);
const PROBE_MS = 20;
const MAX_STREAMS = clampNum(Number(params.get("max_streams") ?? 16), 1, 63);
const $ = (id: string) => document.getElementById(id)!;
const clock = () => performance.timeOrigin + performance.now();

function clampNum(v: number, lo: number, hi: number): number {
  return Number.isFinite(v) ? Math.min(hi, Math.max(lo, v)) : lo;
}

interface Sample { t_s: number; rtt_ms: number; server_ms: number }
interface Stream { tag: string; worker: Worker; closed: Promise<Extract<FromWorker, { type: "closed" }>>; counts: { t_s: number; bytes: number }[] }

class Run {
  t0 = 0;
  id = "";
  offsetS = 0;
  errors: string[] = [];
  probes: Sample[] = [];
  self: Sample[] = [];
  lostAt: number[] = [];
  probe?: Stream;
  chart: { t: number; down?: number; up?: number; rtt?: number }[] = [];
  since = () => (clock() - this.t0) / 1000;

  async session(): Promise<void> {
    this.t0 = clock();
    const r = await fetch(API, { method: "POST", body: JSON.stringify({ client: "sonde-web", duration_s: DURATION_S, tcpinfo_interval_ms: 20 }) });
    const body = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(body.error ?? `session request: HTTP ${r.status}`);
    this.offsetS = this.since() / 2;
    this.id = body.id;
  }

  open(kind: StartMsg["kind"], tag: string, intervalMs: number): Promise<Stream> {
    const worker = new Worker("worker.js");
    const s: Stream = { tag, worker, counts: [], closed: null! };
    let opened: (v: Stream) => void, failed: (e: Error) => void;
    const ready = new Promise<Stream>((a, b) => { opened = a; failed = b; });
    s.closed = new Promise((resolve) => {
      worker.onmessage = (ev: MessageEvent<FromWorker>) => {
        const m = ev.data;
        switch (m.type) {
          case "open": opened(s); break;
          case "count": s.counts.push({ t_s: m.t_s, bytes: m.bytes }); break;
          case "rtt": (m.self ? this.self : this.probes).push({ t_s: m.t_s, rtt_ms: m.rtt_ms, server_ms: m.server_ms }); break;
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
        const msg = `${kind} worker ${tag} crashed: ${ev.message || "unknown error"}`;
        this.errors.push(msg);
        failed(new Error(msg));
        resolve({ type: "closed", counts: s.counts, lost: [], sent: 0, error: msg });
      };
    });
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const url = `${proto}//${location.host}${API}/${this.id}/${kind}?tag=${tag}`;
    worker.postMessage({ cmd: "start", url, kind, t0: this.t0, intervalMs } satisfies StartMsg);
    const timeout = setTimeout(() => failed(new Error(`${kind} stream did not open within 5 s`)), 5000);
    return ready.finally(() => clearTimeout(timeout));
  }

  async live(): Promise<LiveFlow[]> {
    const r = await fetch(`${API}/${this.id}/live`, { cache: "no-store" });
    if (!r.ok) throw new Error(`live: HTTP ${r.status}`);
    return (await r.json()).flows as LiveFlow[];
  }

  window(from: number, to: number) {
    const samples = this.probes.filter((s) => s.t_s >= from && s.t_s <= to);
    const lost = this.lostAt.filter((t) => t >= from && t <= to).length;
    return { samples, lost };
  }

  async phase(kind: "download" | "upload") {
    const streams: Stream[] = [];
    const auto = new AutoStreams(MAX_STREAMS);
    const start = this.since();
    const add = async () => { streams.push(await this.open(kind, `${kind[0]}${streams.length}`, 100)); };
    const prev = new Map<number, TCPSample>();
    let serverBytes: { t_s: number; bytes: number }[] = [];
    let lastTotal = 0, lastAt = this.since();
    try {
      await add();
      await add();
      const step = Math.max(0.5, (4 * median(this.probes.map((p) => p.rtt_ms))) / 1000 || 0.5);
      let nextStep = this.since() + step;
      while (this.since() - start < DURATION_S) {
        await sleep(250);
        const now = this.since();
        let flows: LiveFlow[] = [];
        try { flows = await this.live(); } catch (e) { this.errors.push(`${kind}: ${(e as Error).message}`); break; }
        const total = kind === "download"
          ? streams.reduce((a, s) => a + (s.counts.at(-1)?.bytes ?? 0), 0)
          : flows.filter((f) => f.kind === kind).reduce((a, f) => a + f.bytes, 0);
        serverBytes.push({ t_s: now, bytes: total });
        const rtt = this.probes.at(-1)?.rtt_ms;
        this.chart.push({ t: now, [kind === "download" ? "down" : "up"]: recentRate(serverBytes, 0.5), rtt });
        draw(this.chart);
        $("now").textContent = `${kind}: ${fmtRate(recentRate(serverBytes, 1))} over ${streams.length} streams, RTT ${fmtMs(rtt ?? NaN)}`;
        if (now >= nextStep && !auto.stopped) {
          const g = ((total - lastTotal) * 8) / (now - lastAt);
          lastTotal = total; lastAt = now;
          nextStep = now + step;
          const lim = kind === "download" ? limited(prev, flows, kind) : null;
          if (auto.step(g, lim, streams.length) === "add") await add();
        }
      }
    } catch (e) {
      this.errors.push(`${kind}: ${(e as Error).message}`);
    }
    const end = this.since();
    for (const s of streams) s.worker.postMessage({ cmd: "stop" });
    const closed = await Promise.all(streams.map((s) => s.closed));
    const counts: Record<string, { t_s: number; bytes: number }[]> = {};
    streams.forEach((s, i) => { counts[s.tag] = closed[i].counts; });
    const lat = this.window(start, end);
    const selfMs = this.self.filter((s) => s.t_s >= start && s.t_s <= end).map((s) => s.rtt_ms);
    return { auto: true, start_s: start, end_s: end, tags: streams.map((s) => s.tag), counts: kind === "download" ? counts : undefined, latency: lat, self_ms: selfMs };
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function draw(points: Run["chart"]): void {
  const c = $("chart") as HTMLCanvasElement;
  const w = (c.width = c.clientWidth * devicePixelRatio);
  const h = (c.height = c.clientHeight * devicePixelRatio);
  const g = c.getContext("2d")!;
  g.clearRect(0, 0, w, h);
  if (points.length < 2) return;
  const t0 = points[0].t, t1 = points.at(-1)!.t;
  const maxRate = Math.max(1, ...points.map((p) => Math.max(p.down ?? 0, p.up ?? 0)));
  const maxRtt = Math.max(1, ...points.map((p) => p.rtt ?? 0));
  const x = (t: number) => ((t - t0) / Math.max(1e-3, t1 - t0)) * w;
  const line = (key: "down" | "up" | "rtt", max: number, color: string) => {
    g.strokeStyle = color;
    g.lineWidth = 2 * devicePixelRatio;
    g.beginPath();
    let on = false;
    for (const p of points) {
      const v = p[key];
      if (v === undefined) { on = false; continue; }
      const y = h - (v / max) * (h - 4) - 2;
      on ? g.lineTo(x(p.t), y) : g.moveTo(x(p.t), y);
      on = true;
    }
    g.stroke();
  };
  line("down", maxRate, "#1f77b4");
  line("up", maxRate, "#2ca02c");
  line("rtt", maxRtt, "#d62728");
  $("scale").textContent = `rate scale ${fmtRate(maxRate)}, RTT scale ${fmtMs(maxRtt)}`;
}

let lastResult: unknown = null;

async function startTest(): Promise<void> {
  const btn = $("start") as HTMLButtonElement;
  btn.disabled = true;
  ($("save") as HTMLButtonElement).disabled = true;
  $("report").innerHTML = "";
  $("status").textContent = "Starting…";
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
    for (const kind of ["download", "upload"] as const) {
      $("status").textContent = `Measuring ${kind}…`;
      body[kind] = await run.phase(kind);
    }
  } catch (e) {
    run.errors.push((e as Error).message);
  }
  run.probe?.worker.postMessage({ cmd: "stop" });
  if (run.probe) await run.probe.closed;
  body.errors = run.errors;
  $("status").textContent = "Assembling the report…";
  let result: ResultLike & Record<string, unknown>;
  try {
    if (!run.id) throw new Error("no session");
    const r = await fetch(`${API}/${run.id}/result`, { method: "POST", body: JSON.stringify(body) });
    const j = await r.json();
    if (!r.ok) throw new Error(j.error ?? `HTTP ${r.status}`);
    result = j;
  } catch (e) {
    // The server is gone: keep what the page measured itself.
    run.errors.push(`report from the server failed: ${(e as Error).message}; showing the page's own measurements`);
    result = { schema: "sonde.result/v1", id: run.id, errors: run.errors, browser_measurements: body };
  }
  fetch(`${API}/${run.id}`, { method: "DELETE" }).catch(() => {});
  lastResult = result;
  render(result);
  $("status").textContent = result.errors?.length ? "Finished with problems (see below)." : "Done.";
  btn.disabled = false;
  ($("save") as HTMLButtonElement).disabled = false;
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}

function render(r: any): void {
  const rows: string[] = [];
  rows.push(`<ul id="summary">${summary(r).map((l) => `<li>${esc(l)}</li>`).join("")}</ul>`);
  for (const kind of ["download", "upload"]) {
    const d = r[kind];
    if (!d) continue;
    const f = d.rfc6349 ?? {};
    const lat = d.latency_under_load?.rtt_ms;
    const kv: [string, string, string][] = [
      ["goodput", fmtRate(d.goodput_bps), "goodput_bps"],
      ["streams", `${d.streams} (${d.streams_mode})`, "streams"],
      ["RTT under load (median)", fmtMs(lat?.p50 ?? NaN), "loaded_p50"],
      ["RFC 6349 window", `${(f.window_start_s ?? 0).toFixed(2)}–${(f.window_end_s ?? 0).toFixed(2)} s`, "window"],
      ["steady-state goodput", fmtRate(f.goodput_bps ?? NaN), "rfc_goodput"],
      ["TCP efficiency", kind === "download" ? `${(f.efficiency_pct ?? 0).toFixed(2)} %` : "n/a (browser sender)", "efficiency"],
      ["buffer delay", `${(f.buffer_delay_pct ?? 0).toFixed(0)} %`, "buffer_delay"],
      ["path MTU / MSS", kind === "download" ? `${f.path_mtu ?? 0} / ${f.mss ?? 0}` : "n/a", "mtu"],
      ["max achievable (window/RTT)", kind === "download" ? fmtRate(f.max_achievable_bps ?? NaN) : "n/a", "max_achievable"],
      ["bottleneck", f.bottleneck || "unknown", "bottleneck"],
    ];
    rows.push(`<section class="dir" id="${kind}"><h2>${kind === "download" ? "Download (server → you)" : "Upload (you → server)"}</h2><table>${kv.map(([k, v, id]) => `<tr><th>${k}</th><td data-k="${id}">${esc(v)}</td></tr>`).join("")}</table></section>`);
  }
  if (r.baseline) rows.push(`<p id="baseline">Idle RTT: min <span data-k="baseline_min">${fmtMs(r.baseline.rtt_ms.min)}</span>, median ${fmtMs(r.baseline.rtt_ms.p50)} over ${r.baseline.rtt_ms.n} probes.</p>`);
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
$("save").addEventListener("click", save);
(window as any).sonde = { result: () => lastResult };
