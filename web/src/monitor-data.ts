// The monitor dashboard's data handling, kept free of the DOM so node
// tests run it: the JSON the daemon serves (/status, /series, /alerts,
// internal/monitor) and how the page formats it.

export interface StreamStatus {
  name: string; target: string; kind: string; sent: number; answered: number; lost: number; late: number;
  last_rtt_ms: number; loss_last_minute: number; problem?: string;
}
export interface MonitorEvent { kind: string; start_ns: number; end_ns: number; stream: number; text: string; flags?: string[] }
export interface Status {
  name: string; started_ns: number; now_ns: number; streams: StreamStatus[];
  load?: { interface: string; state: string; up_rate_bps: number; down_rate_bps: number; up_bps: number; down_bps: number; stale: boolean };
  store: { location: string; healthy: boolean; backlog_rows: number; last_error?: string };
  last_events: MonitorEvent[];
  // Wall-clock steps seen since the start (probe times are monotonic).
  clock?: { steps: number; last_step_s: number; last_step_ns?: number };
}
export interface Reliability { l_ns: number; sent: number; ok: number; r: number }
export interface Point { start_ns: number; sent: number; lost: number; p50_ms: number; p99_ms: number; partial?: boolean }
export interface SeriesStream { name: string; points: Point[]; r10: Reliability[] }
export interface Series { now_ns: number; thresholds_ms: number[]; streams: SeriesStream[] }
export interface Alert {
  rule: string; severity: string; kind: string; status: string; labels: Record<string, string>;
  summary: string; starts_ns: number; ends_ns?: number; value: number;
}
export interface Alerts { firing: Alert[]; recent: Alert[] }

/** ms formats a delay in milliseconds; negative means none. */
export function ms(v: number | undefined): string {
  if (v === undefined || v < 0 || !Number.isFinite(v)) return "–";
  if (v < 10) return v.toFixed(2) + " ms";
  if (v < 100) return v.toFixed(1) + " ms";
  return Math.round(v) + " ms";
}

/** pct formats a fraction as a percentage; negative means none. */
export function pct(f: number | undefined, digits = 2): string {
  if (f === undefined || f < 0 || !Number.isFinite(f)) return "–";
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

/** lossPct is a point's lost share in percent (null: nothing sent). */
export function lossPct(p: Point): number | null {
  return p.sent > 0 ? (100 * p.lost) / p.sent : null;
}

/**
 * chartData aligns the streams' points on one time axis (seconds) for
 * uPlot: x, then per stream p50, p99 (ms) and loss (%), null where a
 * stream has no point or no answered probe.
 */
export function chartData(s: Series): { x: number[]; p50: (number | null)[][]; p99: (number | null)[][]; loss: (number | null)[][] } {
  const times = new Set<number>();
  for (const st of s.streams) for (const p of st.points) times.add(p.start_ns);
  const xs = [...times].sort((a, b) => a - b);
  const at = new Map(xs.map((t, i) => [t, i]));
  const empty = () => xs.map((): number | null => null);
  const out = { x: xs.map((t) => t / 1e9), p50: [] as (number | null)[][], p99: [] as (number | null)[][], loss: [] as (number | null)[][] };
  for (const st of s.streams) {
    const a = empty(), b = empty(), l = empty();
    for (const p of st.points) {
      const i = at.get(p.start_ns)!;
      a[i] = p.p50_ms >= 0 ? p.p50_ms : null;
      b[i] = p.p99_ms >= 0 ? p.p99_ms : null;
      l[i] = lossPct(p);
    }
    out.p50.push(a); out.p99.push(b); out.loss.push(l);
  }
  return out;
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
