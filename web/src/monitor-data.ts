// The monitor dashboard's data handling, kept free of the DOM so node
// tests run it: the JSON the daemon serves (/status, /series, /alerts and
// /range, internal/monitor) and how the page turns it into figures, the
// smoke graph's buckets, the load lanes, R(L) per profile and events.

export interface StreamStatus {
  name: string; target: string; kind: string; sent: number; answered: number; lost: number; late: number;
  last_rtt_ms: number; loss_last_minute: number; problem?: string;
}
export interface MonitorEvent {
  kind: string; start_ns: number; end_ns: number; stream: number; text: string;
  detail?: Record<string, number>; flags?: string[];
}
export interface Status {
  name: string; started_ns: number; now_ns: number; streams: StreamStatus[];
  load?: { interface: string; state: string; up_rate_bps: number; down_rate_bps: number; up_bps: number; down_bps: number; stale: boolean };
  store: { location: string; healthy: boolean; backlog_rows: number; last_error?: string };
  last_events: MonitorEvent[];
  // Wall-clock steps seen since the start (probe times are monotonic).
  clock?: { steps: number; last_step_s: number; last_step_ns?: number };
}
export interface Reliability { l_ns: number; sent: number; ok: number; r: number; lower?: number; upper?: number }
export interface Point { start_ns: number; sent: number; lost: number; p50_ms: number; p99_ms: number; partial?: boolean }
export interface SeriesStream { name: string; points: Point[]; r10: Reliability[] }
export interface Series { now_ns: number; thresholds_ms: number[]; streams: SeriesStream[] }
export interface Alert {
  rule: string; severity: string; kind: string; status: string; labels: Record<string, string>;
  summary: string; starts_ns: number; ends_ns?: number; value: number;
}
export interface Alerts { firing: Alert[]; recent: Alert[] }

// /range: model.MonitorReport with the dashboard's detail.
export interface SeriesPoint {
  start_ns: number; sent: number; lost: number; p50_ns: number; p99_ns: number;
  smoke_ns?: number[]; within?: number[]; load?: number[];
}
export interface DelayStats { n: number; p50_ns: number; p99_ns: number; min_ns: number; max_ns: number; mean_ns: number }
export interface ProfileVerdict { profile: string; window_ns: number; verdict: string; worst_r: number }
export interface StreamReport {
  stream: number; sent: number; lost: number; late: number; rtt: DelayStats; idle_baseline_ns: number;
  reliability: Reliability[]; verdicts?: ProfileVerdict[];
}
export interface Profile { name: string; latency_ns: number; reliability: number }
export interface Report {
  from_ns: number; to_ns: number; source: string; notes?: string[]; monitor?: string; raw_from_ns?: number;
  streams: { name: string; target: string; kind: string }[];
  stats: StreamReport[]; profiles?: Profile[]; events?: MonitorEvent[];
  thresholds_ns?: number[];
  series?: { stream: number; bucket_ns: number; points: SeriesPoint[] }[];
}
export interface RangeAnswer { now_ns: number; report?: Report; empty?: boolean }

/** The load states in the order of SeriesPoint.load (model.LoadStates). */
export const LOAD_STATES = ["idle", "loaded", "up-saturated", "down-saturated", "both-saturated", "unknown"] as const;

/** ms formats a delay in milliseconds; negative means none. */
export function ms(v: number | undefined | null): string {
  if (v === undefined || v === null || v < 0 || !Number.isFinite(v)) return "–";
  if (v < 10) return v.toFixed(2) + " ms";
  if (v < 100) return v.toFixed(1) + " ms";
  return Math.round(v) + " ms";
}

/** msNum splits ms() into number and unit for the large figures. */
export function msNum(v: number | undefined | null): [string, string] {
  const s = ms(v);
  return s === "–" ? ["–", ""] : [s.slice(0, -3), "ms"];
}

/** pct formats a fraction as a percentage; negative means none. */
export function pct(f: number | undefined | null, digits = 2): string {
  if (f === undefined || f === null || f < 0 || !Number.isFinite(f)) return "–";
  return (100 * f).toFixed(digits) + " %";
}

/** rel formats R(L) with its probe count; no probes gives a dash. */
export function rel(r: Reliability | undefined): string {
  if (!r || r.sent === 0) return "–";
  return `${pct(r.r)} (${r.ok}/${r.sent})`;
}

/** when formats Unix ns as a UTC time of day (with the date when not today). */
export function when(ns: number, nowNs: number): string {
  const d = new Date(ns / 1e6);
  const iso = d.toISOString();
  const sameDay = iso.slice(0, 10) === new Date(nowNs / 1e6).toISOString().slice(0, 10);
  return (sameDay ? "" : iso.slice(0, 10) + " ") + iso.slice(11, 19) + "Z";
}

/** stamp formats Unix ns as "YYYY-MM-DD HH:MM" UTC. */
export function stamp(ns: number): string {
  return new Date(ns / 1e6).toISOString().slice(0, 16).replace("T", " ");
}

/** span formats a duration in ns for people ("5 min", "2.5 h", "3 d"). */
export function span(ns: number): string {
  const s = ns / 1e9;
  if (s < 90) return `${Math.round(s)} s`;
  if (s < 5400) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${+(s / 3600).toFixed(1)} h`;
  return `${+(s / 86400).toFixed(1)} d`;
}

/** alertLine is one alert as the page lists it. */
export function alertLine(a: Alert, nowNs: number): string {
  const t = a.status === "resolved" && a.ends_ns ? a.ends_ns : a.starts_ns;
  return `${when(t, nowNs)} ${a.status.toUpperCase()} ${a.rule} [${a.severity}]: ${a.summary}`;
}

// clockNote is the state line's note on wall-clock steps ("" without
// one): stored times differ from the wall clock by them until a restart.
export function clockNote(st: Status): string {
  const c = st.clock;
  if (!c || c.steps === 0) return "";
  const size = `${c.last_step_s >= 0 ? "+" : ""}${c.last_step_s.toFixed(3)} s`;
  const at = c.last_step_ns ? ` at ${when(c.last_step_ns, st.now_ns)}` : "";
  return `wall clock stepped ${c.steps}× (last ${size}${at}): probe times unaffected, stored times off by it`;
}

/** The ranges the page offers, and their query. */
export const RANGES: { key: string; label: string; span: string }[] = [
  { key: "1h", label: "1 h", span: "1h" },
  { key: "24h", label: "24 h", span: "24h" },
  { key: "7d", label: "7 d", span: "7d" },
  { key: "30d", label: "30 d", span: "30d" },
];

/** rangeQuery is /range's query string: a span, or a custom [from, to)
 * in Unix seconds; points bounded as the daemon bounds them. */
export function rangeQuery(r: { span?: string; from?: number; to?: number }, points: number): string {
  const q = new URLSearchParams();
  if (r.span) q.set("span", r.span);
  else {
    q.set("from", String(Math.floor(r.from!)));
    q.set("to", String(Math.floor(r.to!)));
  }
  q.set("points", String(Math.max(10, Math.min(1500, Math.round(points)))));
  return q.toString();
}

/** LossClass colours a bucket's median (SmokePing's idea): none, under
 * 1 %, under 5 %, under 100 %, and all lost. */
export type LossClass = "l0" | "l1" | "l2" | "l3" | "lfull";

export function lossClass(sent: number, lost: number): LossClass {
  if (sent > 0 && lost >= sent) return "lfull";
  const f = sent > 0 ? lost / sent : 0;
  if (f === 0) return "l0";
  if (f < 0.01) return "l1";
  if (f < 0.05) return "l2";
  return "l3";
}

export const LOSS_LEGEND: [LossClass, string][] = [
  ["l0", "no loss"], ["l1", "loss < 1 %"], ["l2", "loss 1–5 %"], ["l3", "loss ≥ 5 %"], ["lfull", "100 % loss"],
];

/** Lane is a direction's load in a bucket. */
export type Lane = "idle" | "loaded" | "saturated" | "unknown";

/**
 * lanes reads a bucket's load counts (LOAD_STATES order) as one state per
 * direction: saturated when at least half its probes went out with that
 * direction saturated, else loaded when at least half were loaded or
 * saturated (a loaded probe, traffic without saturation, counts for both
 * directions: the counters do not say which), else idle when at least
 * half were idle, else unknown.
 */
export function lanes(load: number[] | undefined): { up: Lane; down: Lane } {
  const n = (load ?? []).reduce((a, b) => a + b, 0);
  if (!load || n === 0) return { up: "unknown", down: "unknown" };
  const [idle, loaded, up, down, both] = load;
  const one = (sat: number, other: number): Lane => {
    if (2 * sat >= n) return "saturated";
    if (2 * (sat + loaded + other) >= n) return "loaded";
    if (2 * idle >= n) return "idle";
    return "unknown";
  };
  return { up: one(up + both, down), down: one(down + both, up) };
}

/** Bucket is one slot of the range's grid: a point, or a gap (no row). */
export interface Bucket {
  start: number; // ns
  end: number;
  p?: SeriesPoint;
}

/**
 * buckets lays a stream's points on the range's grid of bucket_ns from
 * the series' origin: a slot without a point is a gap (no data), told
 * apart from a point whose probes were all lost.
 */
export function buckets(rep: Report, stream: number, maxSlots = 5000): Bucket[] {
  const s = rep.series?.find((x) => x.stream === stream);
  if (!s || s.points.length === 0 || s.bucket_ns <= 0) return [];
  const w = s.bucket_ns;
  const origin = Math.floor(rep.from_ns / 60e9) * 60e9;
  const n = Math.min(maxSlots, Math.ceil((rep.to_ns - origin) / w));
  const out: Bucket[] = [];
  for (let i = 0; i < n; i++) out.push({ start: origin + i * w, end: Math.min(origin + (i + 1) * w, rep.to_ns) });
  for (const p of s.points) {
    const i = Math.round((p.start_ns - origin) / w);
    if (i >= 0 && i < n) out[i].p = p;
  }
  return out;
}

/** profileLines is R per bucket (null: nothing sent) per requirement
 * profile whose latency the report counted. */
export function profileLines(rep: Report, bs: Bucket[]): { profile: Profile; r: (number | null)[] }[] {
  const th = rep.thresholds_ns ?? [];
  const out: { profile: Profile; r: (number | null)[] }[] = [];
  for (const pr of rep.profiles ?? []) {
    const k = th.indexOf(pr.latency_ns);
    if (k < 0) continue;
    out.push({ profile: pr, r: bs.map((b) => (b.p && b.p.sent > 0 && b.p.within ? b.p.within[k] / b.p.sent : null)) });
  }
  return out;
}

/**
 * lineGroups gives each profile line the index of the first line whose
 * R is the same in every interval (its own index when none is): the
 * default profiles' latencies (5 s to 15 min) are beyond every RTT, so
 * their R lines coincide and one would hide the others. The chart draws
 * each group once and its legend names the profiles that share it.
 */
export function lineGroups(lines: { r: (number | null)[] }[]): number[] {
  const same = (a: (number | null)[], b: (number | null)[]) => a.length === b.length && a.every((v, i) => v === b[i]);
  return lines.map((l, k) => {
    const j = lines.findIndex((m) => same(m.r, l.r));
    return j >= 0 && j < k ? j : k;
  });
}

/** reqLabels are the requirement lines, one per distinct reliability, with the profiles that need it. */
export function reqLabels(profiles: Profile[]): { reliability: number; names: string[] }[] {
  const out: { reliability: number; names: string[] }[] = [];
  for (const p of profiles) {
    const x = out.find((o) => o.reliability === p.reliability);
    if (x) x.names.push(p.name);
    else out.push({ reliability: p.reliability, names: [p.name] });
  }
  return out;
}

/** nines maps R to -log10(1 − R), capped at 5 (99.999 %). */
export function nines(r: number): number {
  if (!(r < 1)) return 5;
  return Math.min(5, Math.max(0, -Math.log10(1 - r)));
}

/** logTicks are the 1-2-5 ticks within [lo, hi] (ms). */
export function logTicks(lo: number, hi: number): number[] {
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(Math.max(lo, 1e-3))); e <= Math.ceil(Math.log10(Math.max(hi, 1e-3))); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo && v <= hi) out.push(+v.toPrecision(3));
    }
  }
  return out;
}

/** timeTicks are round UTC instants across [from, to] (ns), about n. */
export function timeTicks(from: number, to: number, n: number): number[] {
  const steps = [60, 300, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800].map((s) => s * 1e9);
  const want = (to - from) / Math.max(1, n);
  const step = steps.find((s) => s >= want) ?? steps[steps.length - 1];
  const out: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to && out.length < 50; t += step) out.push(t);
  return out;
}

/** tickLabel names a time tick: the date at midnight for spans of days, else HH:MM. */
export function tickLabel(t: number, spanNs: number): string {
  const iso = new Date(t / 1e6).toISOString();
  if (spanNs > 2 * 86400e9) return iso.slice(11, 16) === "00:00" ? iso.slice(5, 10) : iso.slice(5, 10) + " " + iso.slice(11, 16);
  return iso.slice(11, 16);
}

/** flag reads a "key=value" flag of an event. */
export function flag(e: MonitorEvent, key: string): string | undefined {
  return e.flags?.find((f) => f.startsWith(key + "="))?.slice(key.length + 1);
}

/** eventTitle is an event's short name on the timeline. */
export function eventTitle(e: MonitorEvent): string {
  switch (e.kind) {
    case "outage": return e.stream < 0 ? "link outage" : "outage";
    case "loaded": {
      const g = flag(e, "grade");
      return `loaded${g ? " " + g : ""}`;
    }
    case "baseline-step": return "baseline step";
    default: return e.kind;
  }
}

/** eventFigures are an event's figures that matter, in words. */
export function eventFigures(e: MonitorEvent): string[] {
  const d = e.detail ?? {};
  const out: string[] = [];
  const dur = e.end_ns - e.start_ns;
  if (dur > 0) out.push(span(dur));
  switch (e.kind) {
    case "loaded": {
      const g = flag(e, "grade"), q = flag(e, "queue");
      if (g) out.push(`grade ${g}`);
      if (d.added_median_ms !== undefined) out.push(`+${ms(d.added_median_ms)} median`);
      if (d.buffer_bits !== undefined) out.push(`buffer ≈ ${Math.round(d.buffer_bits / 1e3)} kbit${d.oversize ? ` (${d.oversize.toFixed(1)}× BDP)` : ""}`);
      if (q) out.push(`queue ${q}`);
      const dir = e.flags?.find((f) => f.endsWith("-saturated"));
      if (dir) out.push(dir);
      break;
    }
    case "outage":
      if (d.probes_lost !== undefined) out.push(`${d.probes_lost} probes lost`);
      break;
    case "baseline-step":
      if (d.before_ms !== undefined && d.after_ms !== undefined) out.push(`${ms(d.before_ms)} → ${ms(d.after_ms)}`);
      break;
    case "restart":
      if (d.gap_s !== undefined) out.push(`gap ${span(d.gap_s * 1e9)}`);
      break;
  }
  return out;
}

/** verdictOf finds a profile's verdict over the whole range. */
export function verdictOf(s: StreamReport | undefined, profile: string): ProfileVerdict | undefined {
  return s?.verdicts?.find((v) => v.profile === profile && v.window_ns === 0);
}
