// The fleet view's pure part: the report's shape (model.FleetReport,
// schema sonde.fleet/v1), the sortable tables of monitors and label
// groups, and the upstream events' lines.

export interface Verdict {
  profile: string;
  verdict: string;
  whole: { r: number; sent: number };
  approx?: boolean;
  fail_hours?: number;
}

export interface FleetMonitor {
  name: string;
  labels?: Record<string, string>;
  sent: number;
  lost: number;
  rtt?: { n: number; p50_ns: number; p99_ns: number };
  verdicts: Verdict[];
  cause: string;
  line: { count: number; seconds: number };
  upstream: { count: number; seconds: number };
  worst_grade?: string;
}

export interface FleetGroup {
  label: string;
  value: string;
  monitors: number;
  sent: number;
  lost: number;
  verdicts: Verdict[];
  failing: number[];
}

export interface Upstream {
  start_ns: number;
  end_ns: number;
  monitors: string[];
  targets?: string[];
  rule: string;
}

export interface FleetReport {
  schema: string;
  profiles: { name: string }[];
  monitors: FleetMonitor[];
  groups?: FleetGroup[];
  upstream?: Upstream[];
  source: string;
  notes?: string[];
}

/** Cell is one table cell: its text, its sort value, a class, a link. */
export interface Cell {
  text: string;
  v: number | string;
  cls?: string;
  href?: string;
  fig?: boolean; // a figure (checked never to read "--" or NaN)
}

export interface Table {
  head: string[];
  rows: Cell[][];
}

/** fleetQuery is the query string of /fleet.json: since, and one label
 * parameter per KEY=VALUE word of the labels box. */
export function fleetQuery(since: string, labels: string): string {
  const q = new URLSearchParams({ since });
  for (const w of labels.split(/\s+/).filter((w) => w !== "")) q.append("label", w);
  return q.toString();
}

/** reportLink is a monitor's own report over the same range (/report). */
export function reportLink(name: string, since: string): string {
  return "report?" + new URLSearchParams({ monitor: name, since }).toString();
}

function labelText(l?: Record<string, string>): string {
  return Object.keys(l ?? {})
    .sort()
    .map((k) => `${k}=${l![k]}`)
    .join(" ");
}

const GRADES = ["A+", "A", "B", "C", "D", "F"];

function lossCell(sent: number, lost: number): Cell {
  if (!sent) return { text: "no probe", v: -1 };
  const f = (100 * lost) / sent;
  return { text: f.toFixed(3), v: f, cls: f >= 1 ? "bad" : undefined, fig: true };
}

function msCell(ns: number | undefined, n: number | undefined): Cell {
  if (!n || ns === undefined) return { text: "no answer", v: Infinity };
  const v = ns / 1e6;
  return { text: v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : String(Math.round(v)), v, fig: true };
}

function verdictCell(v: Verdict | undefined): Cell {
  if (!v) return { text: "not judged", v: -1 };
  const r = v.whole.sent ? ` ${(100 * v.whole.r).toFixed(2)}${v.approx ? "≥" : ""}` : "";
  return { text: v.verdict + r, v: v.whole.sent ? v.whole.r : -1, cls: v.verdict === "FAIL" ? "bad" : v.verdict === "PASS" ? "good" : "fair", fig: true };
}

/** monitorTable lists the monitors: the link to each one's report, its
 * labels, probes, loss, RTT, verdict and R per profile, outages of its
 * line and upstream, the answer and the worst bufferbloat grade. */
export function monitorTable(rep: FleetReport, since: string): Table {
  const head = ["monitor", "labels", "probes", "loss %", "median ms", "p99 ms", ...rep.profiles.map((p) => p.name), "line outages", "upstream outages", "cause", "worst grade"];
  const rows = rep.monitors.map((m) => {
    const cells: Cell[] = [
      { text: m.name, v: m.name, href: reportLink(m.name, since) },
      { text: labelText(m.labels), v: labelText(m.labels) },
      { text: m.sent.toLocaleString("en-US"), v: m.sent, fig: true },
      lossCell(m.sent, m.lost),
      msCell(m.rtt?.p50_ns, m.rtt?.n),
      msCell(m.rtt?.p99_ns, m.rtt?.n),
    ];
    for (const p of rep.profiles) cells.push(verdictCell(m.verdicts.find((v) => v.profile === p.name)));
    cells.push(
      { text: m.line.count ? `${m.line.count} (${Math.round(m.line.seconds / 60)} min)` : "0", v: m.line.seconds, cls: m.line.count ? "bad" : undefined, fig: true },
      { text: m.upstream.count ? `${m.upstream.count} (${Math.round(m.upstream.seconds / 60)} min)` : "0", v: m.upstream.seconds, fig: true },
      { text: m.cause, v: m.cause },
      { text: m.worst_grade || "none", v: m.worst_grade ? GRADES.indexOf(m.worst_grade) : -1 },
    );
    return cells;
  });
  return { head, rows };
}

/** groupTable lists the label groups: monitors, probes, loss, and per
 * profile the group's R and how many of its monitors fail. */
export function groupTable(rep: FleetReport): Table {
  const head = ["group", "monitors", "probes", "loss %", ...rep.profiles.map((p) => p.name)];
  const rows = (rep.groups ?? []).map((g) => {
    const cells: Cell[] = [
      { text: `${g.label}=${g.value}`, v: `${g.label}=${g.value}` },
      { text: String(g.monitors), v: g.monitors, fig: true },
      { text: g.sent.toLocaleString("en-US"), v: g.sent, fig: true },
      lossCell(g.sent, g.lost),
    ];
    rep.profiles.forEach((p, i) => {
      const c = verdictCell(g.verdicts.find((v) => v.profile === p.name));
      const f = g.failing?.[i] ?? 0;
      if (f > 0) c.text += ` (${f} failing)`;
      cells.push(c);
    });
    return cells;
  });
  return { head, rows };
}

/** sortRows orders rows by column col (numbers before text; equal ones
 * keep their order), ascending or not. */
export function sortRows(rows: Cell[][], col: number, asc: boolean): Cell[][] {
  const key = (c: Cell) => c.v;
  return rows
    .map((r, i) => ({ r, i }))
    .sort((a, b) => {
      const x = key(a.r[col]), y = key(b.r[col]);
      let d: number;
      if (typeof x === "number" && typeof y === "number") d = x === y ? 0 : x < y ? -1 : 1;
      else if (typeof x === "number") d = -1;
      else if (typeof y === "number") d = 1;
      else d = x.localeCompare(y);
      return (asc ? d : -d) || a.i - b.i;
    })
    .map((x) => x.r);
}

function iso(ns: number): string {
  return new Date(ns / 1e6).toISOString().replace("T", " ").slice(0, 16) + " UTC";
}

/** upstreamLines lists the upstream events, one line each. */
export function upstreamLines(rep: FleetReport): string[] {
  return (rep.upstream ?? []).map((u) => {
    const mins = Math.round((u.end_ns - u.start_ns) / 60e9);
    const what = u.targets?.length ? `targets ${u.targets.join(", ")}` : "whole links";
    const who = u.monitors.length > 8 ? `${u.monitors.slice(0, 8).join(", ")} and ${u.monitors.length - 8} more` : u.monitors.join(", ");
    return `${iso(u.start_ns)}, ${mins} min, ${u.monitors.length} monitors (${what}; ${u.rule}): ${who}`;
  });
}
