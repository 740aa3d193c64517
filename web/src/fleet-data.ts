// The fleet view's pure part: the report's shape (model.FleetReport,
// schema sonde.fleet/v1) and the rows and lines the page shows.

export interface Verdict {
  profile: string;
  verdict: string;
  whole: { r: number; sent: number };
  approx?: boolean;
}

export interface FleetMonitor {
  name: string;
  labels?: Record<string, string>;
  sent: number;
  lost: number;
  verdicts: Verdict[];
  cause: string;
  line: { count: number; seconds: number };
  upstream: { count: number; seconds: number };
  worst_grade?: string;
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
  upstream?: Upstream[];
  source: string;
  notes?: string[];
}

export interface Cell {
  text: string;
  cls?: string;
}

/** fleetQuery is the query string of /fleet.json: since, and one label
 * parameter per KEY=VALUE word of the labels box. */
export function fleetQuery(since: string, labels: string): string {
  const q = new URLSearchParams({ since });
  for (const w of labels.split(/\s+/).filter((w) => w !== "")) q.append("label", w);
  return q.toString();
}

function labelText(l?: Record<string, string>): string {
  return Object.keys(l ?? {})
    .sort()
    .map((k) => `${k}=${l![k]}`)
    .join(" ");
}

/** monitorRows is the monitors' table: verdict and R per profile, loss,
 * outages of the line and upstream, the answer, the worst grade. */
export function monitorRows(rep: FleetReport): { head: string[]; body: Cell[][] } {
  const head = ["monitor", "labels", "loss %", ...rep.profiles.map((p) => p.name), "line outages", "upstream", "cause", "grade"];
  const body = rep.monitors.map((m) => {
    const cells: Cell[] = [{ text: m.name }, { text: labelText(m.labels) }, { text: m.sent ? ((100 * m.lost) / m.sent).toFixed(3) : "-" }];
    for (const v of m.verdicts) {
      const r = v.whole.sent ? ` ${(100 * v.whole.r).toFixed(2)}${v.approx ? "≥" : ""}` : "";
      cells.push({ text: v.verdict + r, cls: v.verdict === "FAIL" ? "bad" : undefined });
    }
    cells.push({ text: String(m.line.count) }, { text: String(m.upstream.count) }, { text: m.cause }, { text: m.worst_grade || "-" });
    return cells;
  });
  return { head, body };
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
