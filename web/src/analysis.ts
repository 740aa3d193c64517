// Pure client logic of the page: automatic stream count, rates from
// cumulative counts, and the plain-language summary of a result.

export interface ByteCount { t_s: number; bytes: number }
export interface TCPSample {
  busy_time_us: number; rwnd_limited_us: number; sndbuf_limited_us: number;
  [k: string]: number;
}
export interface LiveFlow { id: number; kind: string; tag?: string; bytes: number; tcpinfo: TCPSample; done: boolean }

/**
 * AutoStreams grows the stream count like the native client
 * (internal/client autoStreams): add a stream while the aggregate goodput
 * grows by more than 5% per added stream and the senders are limited by a
 * window or buffer; stop at the first stream that did not help. limited is
 * null when the sender's TCP_INFO is unknown (a browser upload), in which
 * case only the goodput rule applies.
 */
export class AutoStreams {
  private lastAdd = -1;
  stopped = false;
  constructor(readonly max: number) {}

  step(goodputBps: number, limited: boolean | null, streams: number): "add" | "hold" | "stop" {
    if (this.stopped) return "stop";
    if (streams >= this.max || limited === false) return "hold";
    if (this.lastAdd >= 0 && goodputBps <= this.lastAdd * 1.05) {
      this.stopped = true;
      return "stop";
    }
    this.lastAdd = goodputBps;
    return "add";
  }
}

/**
 * limited reports whether, between two /live readings, the server's
 * sending flows spent more than half of their busy time limited by the
 * receiver window or their send buffer.
 */
export function limited(prev: Map<number, TCPSample>, now: LiveFlow[], kind: string): boolean {
  let busy = 0, lim = 0;
  for (const f of now) {
    if (f.kind !== kind || f.done) continue;
    const p = prev.get(f.id);
    const s = f.tcpinfo;
    if (p && s.busy_time_us >= p.busy_time_us) {
      busy += s.busy_time_us - p.busy_time_us;
      lim += (s.rwnd_limited_us - p.rwnd_limited_us) + (s.sndbuf_limited_us - p.sndbuf_limited_us);
    }
  }
  prev.clear();
  for (const f of now) if (f.kind === kind && !f.done) prev.set(f.id, f.tcpinfo);
  return busy > 0 && lim * 2 > busy;
}

/** Goodput in bit/s between the first and last of a cumulative series. */
export function goodput(c: ByteCount[]): number {
  if (c.length < 2) return 0;
  const a = c[0], b = c[c.length - 1];
  return b.t_s > a.t_s ? ((b.bytes - a.bytes) * 8) / (b.t_s - a.t_s) : 0;
}

/** Rate over the last window seconds of a cumulative series. */
export function recentRate(c: ByteCount[], window: number): number {
  if (c.length < 2) return 0;
  const last = c[c.length - 1];
  let i = c.length - 2;
  while (i > 0 && last.t_s - c[i].t_s < window) i--;
  return goodput([c[i], last]);
}

export function median(xs: number[]): number {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = (s.length - 1) / 2;
  return (s[Math.floor(m)] + s[Math.ceil(m)]) / 2;
}

export function fmtRate(bps: number): string {
  if (!Number.isFinite(bps)) return "–";
  if (bps >= 1e9) return (bps / 1e9).toFixed(2) + " Gbit/s";
  if (bps >= 1e6) return (bps / 1e6).toFixed(1) + " Mbit/s";
  return (bps / 1e3).toFixed(0) + " kbit/s";
}

export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return "–";
  return ms < 10 ? ms.toFixed(2) + " ms" : ms.toFixed(1) + " ms";
}

interface Stats { n: number; min: number; p50: number; mean: number }
interface Dir { goodput_bps: number; streams: number; latency_under_load?: { rtt_ms: Stats }; rfc6349?: { bottleneck?: string } }
export interface ResultLike {
  baseline?: { rtt_ms: Stats };
  download?: Dir;
  upload?: Dir;
  bidir?: { download?: Dir; upload?: Dir; latency_under_load?: { rtt_ms: Stats } };
  grades?: { bufferbloat?: Partial<Record<GradedPhase, LetterLike>> };
  errors?: string[];
  notes?: string[];
}

/** A bufferbloat letter of the result's grades (internal/grade). */
export interface LetterLike { added_ms: number; loaded_mean_ms: number; grade: string }
export type GradedPhase = "download" | "upload" | "bidir";

/**
 * addedDelay is a phase's added delay under load, ms, as the server graded
 * it (grades.bufferbloat: mean RTT under load minus the idle mean,
 * spec/grades.md), NaN when the result has no grade for it. The page never
 * computes it again: its figure, this summary and the grade's "what
 * limits this connection" sentence are one number.
 */
export function addedDelay(r: ResultLike, phase: GradedPhase): number {
  return r.grades?.bufferbloat?.[phase]?.added_ms ?? NaN;
}

/** verdict names the effect of a queueing delay on interactive use. */
export function verdict(addedMs: number): string {
  if (!Number.isFinite(addedMs)) return "";
  if (addedMs >= 100) return "bufferbloat: calls and games will suffer while this link is busy";
  if (addedMs >= 30) return "noticeable queueing: interactive use slows down under load";
  return "little queueing: the link stays responsive under load";
}

/** One line per finding, in plain words. */
/**
 * downloadLimit says in words what held the download back when it was not
 * the network: the verdict of the server's TCP_INFO over the RFC 6349
 * window (internal/metrics, Bottleneck). Only the download has one, since
 * a browser cannot read its own socket's TCP_INFO.
 */
export function downloadLimit(bottleneck: string | undefined): string {
  switch (bottleneck) {
    case "receiver window":
      return "Download was limited by this device, not the network: the browser read the data more slowly than the server could send it (the server waited on the receive window), so the connection may be faster than this figure.";
    case "sender buffer":
      return "Download was limited by the server's send buffer, not the network, so the connection may be faster than this figure.";
    default:
      return "";
  }
}

export function summary(r: ResultLike): string[] {
  const out: string[] = [];
  if (r.baseline && r.baseline.rtt_ms.n > 0) out.push(`Idle round trip to the server: ${fmtMs(r.baseline.rtt_ms.min)} (best), ${fmtMs(r.baseline.rtt_ms.p50)} (typical).`);
  for (const [name, d] of [["download", r.download], ["upload", r.upload]] as const) {
    if (!d) continue;
    const s = d.streams === 1 ? "stream" : "streams";
    out.push(`${name[0].toUpperCase() + name.slice(1)}: ${fmtRate(d.goodput_bps)} over ${d.streams} ${s}.`);
    const limit = name === "download" ? downloadLimit(d.rfc6349?.bottleneck) : "";
    if (limit) out.push(limit);
    const added = addedDelay(r, name);
    const inBrowser = (r.notes ?? []).some((n) => n.startsWith(`${name}: the page's RTT under load`));
    const cap = name[0].toUpperCase() + name.slice(1);
    if (inBrowser) out.push(`${cap} latency under load: most of ${Number.isFinite(added) ? `the ${Math.max(0, added).toFixed(0)} ms` : "the delay"} the page saw was delay inside this browser, not on the network (see notes).`);
    else if (Number.isFinite(added)) out.push(`${cap} adds ${Math.max(0, added).toFixed(added < 10 ? 1 : 0)} ms of queueing delay (mean): ${verdict(added)}.`);
  }
  const b = r.bidir;
  if (b && (b.download || b.upload)) {
    out.push(`Both ways at once: download ${fmtRate(b.download?.goodput_bps ?? NaN)}, upload ${fmtRate(b.upload?.goodput_bps ?? NaN)}.`);
    const added = addedDelay(r, "bidir");
    if (Number.isFinite(added)) out.push(`Loading both ways at once adds ${Math.max(0, added).toFixed(added < 10 ? 1 : 0)} ms of queueing delay (mean): ${verdict(added)}.`);
  }
  for (const e of r.errors ?? []) out.push(`Problem: ${e}`);
  return out;
}

/**
 * HighWater is the upload's bufferedAmount target. It follows the rate at
 * which the socket drains its queue so that the queue holds about
 * targetMs of data: enough to cover a refill timer that fires late, little
 * enough that a self-probe (queued behind the data) is not delayed by
 * seconds on a slow uplink. A queue found empty means the target starved
 * the socket, so it doubles then; it never leaves [min, max].
 */
export class HighWater {
  bytes: number;
  private rate = 0; // bytes per ms, smoothed
  private gapMs = 0; // the longest recent time between refills, decaying
  constructor(readonly max: number, readonly min = 64 << 10, readonly targetMs = 40) {
    this.bytes = Math.min(max, 1 << 20);
  }

  /** drained: bytes the socket took since the last call, dtMs later; emptied: the queue was found empty. */
  update(drained: number, dtMs: number, emptied: boolean): number {
    if (dtMs > 0 && drained >= 0) {
      const r = drained / dtMs;
      // A queue that ran empty drained less than the socket could take:
      // its rate is a floor, never a reason to shrink the queue.
      this.rate = this.rate === 0 ? r : emptied ? Math.max(this.rate, r) : 0.8 * this.rate + 0.2 * r;
      this.gapMs = Math.max(dtMs, 0.9 * this.gapMs);
    }
    // Enough for targetMs, and for twice the longest recent wait between
    // refills: on a busy machine a timer fires late, and a queue shorter
    // than the wait starves the socket until it does.
    let next = this.rate * Math.max(this.targetMs, 2 * this.gapMs);
    if (emptied) next = Math.max(next, this.bytes * 2);
    this.bytes = Math.min(this.max, Math.max(this.min, next));
    return this.bytes;
  }
}

export interface StatsFull { n: number; min: number; p10: number; p50: number; p90: number; max: number; mean: number }

/** stats summarises samples like metrics.Summarize (nearest-rank-free, linear interpolation). */
export function stats(xs: number[]): StatsFull {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  const n = s.length;
  if (n === 0) return { n: 0, min: 0, p10: 0, p50: 0, p90: 0, max: 0, mean: 0 };
  const q = (p: number) => {
    const i = p * (n - 1), lo = Math.floor(i), hi = Math.ceil(i);
    return s[lo] + (s[hi] - s[lo]) * (i - lo);
  };
  return { n, min: s[0], p10: q(0.1), p50: q(0.5), p90: q(0.9), max: s[n - 1], mean: s.reduce((a, b) => a + b, 0) / n };
}

interface PageProbes { samples: { t_s: number; rtt_ms: number }[]; lost: number }
interface PagePhase {
  start_s: number; end_s: number; tags: string[];
  counts?: Record<string, ByteCount[]>; live_counts?: ByteCount[]; latency?: PageProbes;
}

/**
 * localResult builds what the page can say on its own when the server is
 * gone before the report: the baseline, each direction's goodput (its own
 * receive counts for download, the server's counts it last saw on /live
 * for upload) and latency under load. No RFC 6349 figures: those need the
 * server's TCP_INFO. The raw measurements stay under browser_measurements.
 */
export function localResult(id: string, body: Record<string, unknown>, errors: string[]) {
  const probes = (p?: PageProbes) => (p ? { rtt_ms: stats(p.samples.map((s) => s.rtt_ms)), lost: p.lost } : undefined);
  const dir = (name: "download" | "upload", ph?: PagePhase) => {
    if (!ph || ph.tags.length === 0) return undefined;
    let bps = 0;
    if (name === "download") {
      let bytes = 0, t0 = Infinity, t1 = -Infinity;
      for (const c of Object.values(ph.counts ?? {})) {
        if (c.length < 2) continue;
        bytes += c[c.length - 1].bytes - c[0].bytes;
        t0 = Math.min(t0, c[0].t_s);
        t1 = Math.max(t1, c[c.length - 1].t_s);
      }
      bps = t1 > t0 ? (bytes * 8) / (t1 - t0) : 0;
    } else {
      bps = goodput(ph.live_counts ?? []);
    }
    return { direction: name, streams_mode: "auto", streams: ph.tags.length, duration_s: ph.end_s - ph.start_s, goodput_bps: bps, latency_under_load: probes(ph.latency) };
  };
  return {
    schema: "sonde.result/v1", id, partial: true, errors,
    notes: ["partial: the server could not assemble the report, so these are the page's own figures (no RFC 6349 or TCP_INFO figures)"],
    baseline: probes(body.baseline as PageProbes | undefined),
    download: dir("download", body.download as PagePhase | undefined),
    upload: dir("upload", body.upload as PagePhase | undefined),
    browser_measurements: body,
  };
}
