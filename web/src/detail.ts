// Below the fold: latency distributions per phase (box plots of the RTT
// percentiles, as Cloudflare shows them) and one-way delay per direction
// under load, each with a table that says the same in text. Pure: returns
// HTML for the page and node tests.

interface S { n: number; min: number; p10?: number; p50: number; p90?: number; p99?: number; max?: number }
interface OWD { owd_ms: S }
interface UDP { replies: number; forward: OWD; backward: OWD }
interface Phase { latency_under_load?: { rtt_ms: S }; udp_latency_under_load?: UDP }
export interface DetailResult { baseline?: { rtt_ms: S }; baseline_udp?: UDP; download?: Phase; upload?: Phase; bidir?: Phase }

const ok = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);
const ms = (v: number | undefined) => (ok(v) ? (v < 10 ? v.toFixed(2) : v.toFixed(1)) : "–");

/** latencyBoxes draws one box (p10–p90, median line, whiskers min–p99) per phase. */
export function latencyBoxes(r: DetailResult): string {
  const phases = ([["idle", r.baseline?.rtt_ms, "var(--muted)"], ["download", r.download?.latency_under_load?.rtt_ms, "var(--down)"],
    ["upload", r.upload?.latency_under_load?.rtt_ms, "var(--up)"], ["both ways", r.bidir?.latency_under_load?.rtt_ms, "var(--rtt)"]] as const).filter(([, s]) => s && s.n > 0 && ok(s.p50)) as [string, S, string][];
  if (phases.length === 0) return "";
  const hi = Math.max(...phases.map(([, s]) => (ok(s.p99) ? s.p99 : s.p50))) * 1.08 || 1;
  const W = 640, L = 80, R = 16, rowH = 34, H = phases.length * rowH + 30;
  const x = (v: number) => L + ((W - L - R) * Math.max(0, v)) / hi;
  const boxes = phases.map(([name, s, c], i) => {
    const y = 10 + i * rowH, m = y + rowH / 2 - 4;
    const lo = ok(s.p10) ? s.p10 : s.min, up = ok(s.p90) ? s.p90 : s.p50;
    return `<text x="${L - 8}" y="${m + 4}" text-anchor="end">${name}</text>` +
      `<line x1="${x(s.min)}" y1="${m}" x2="${x(ok(s.p99) ? s.p99 : up)}" y2="${m}" stroke="${c}"/>` +
      `<rect x="${x(lo)}" y="${m - 9}" width="${Math.max(2, x(up) - x(lo))}" height="18" fill="${c}" fill-opacity=".35" stroke="${c}"/>` +
      `<line x1="${x(s.p50)}" y1="${m - 11}" x2="${x(s.p50)}" y2="${m + 11}" stroke="${c}" stroke-width="3"/>`;
  }).join("");
  const axisY = H - 14;
  const ticks = [0, hi / 2, hi / 1.08].map((v) => `<text x="${x(v)}" y="${axisY + 10}" text-anchor="middle">${ms(v)} ms</text>`).join("");
  const rows = phases.map(([n, s]) => `<tr><th scope="row">${n}</th><td>${ms(s.min)}</td><td>${ms(s.p10)}</td><td>${ms(s.p50)}</td><td>${ms(s.p90)}</td><td>${ms(s.p99)}</td><td>${s.n}</td></tr>`).join("");
  return `<section class="dir" id="distributions" aria-labelledby="dist-t"><h2 id="dist-t">Round-trip time per phase</h2>` +
    `<svg class="boxes" viewBox="0 0 ${W} ${H}" role="img" aria-label="Round-trip time distributions per phase; the table below gives the values">${boxes}` +
    `<line x1="${L}" y1="${axisY - 6}" x2="${W - R}" y2="${axisY - 6}" stroke="var(--line)"/>${ticks}</svg>` +
    `<p class="scale">Box: 10th to 90th percentile; thick line: median; whisker: minimum to 99th percentile.</p>` +
    `<div class="scroll" tabindex="0" role="region" aria-labelledby="dist-t"><table><thead><tr><th scope="col">phase</th><th scope="col">min</th><th scope="col">p10</th><th scope="col">median</th><th scope="col">p90</th><th scope="col">p99</th><th scope="col">probes</th></tr></thead><tbody>${rows}</tbody></table></div></section>`;
}

/** oneWay shows the UDP probes' one-way delay per direction, idle and under each load. */
export function oneWay(r: DetailResult): string {
  const cols = ([["idle", r.baseline_udp], ["during download", r.download?.udp_latency_under_load], ["during upload", r.upload?.udp_latency_under_load], ["both ways at once", r.bidir?.udp_latency_under_load]] as const)
    .filter(([, u]) => u && u.replies > 0) as [string, UDP][];
  if (cols.length === 0) return "";
  const cell = (s?: S) => (s && s.n > 0 ? `${ms(s.p50)} ms <span class="scale">(p99 ${ms(s.p99)})</span>` : "–");
  return `<section class="dir" id="oneway" aria-labelledby="owd-t"><h2 id="owd-t">One-way delay (UDP probes, median)</h2><div class="scroll" tabindex="0" role="region" aria-labelledby="owd-t"><table>` +
    `<thead><tr><th></th>${cols.map(([n]) => `<th scope="col">${n}</th>`).join("")}</tr></thead><tbody>` +
    `<tr><th scope="row">you → server</th>${cols.map(([, u]) => `<td>${cell(u.forward.owd_ms)}</td>`).join("")}</tr>` +
    `<tr><th scope="row">server → you</th>${cols.map(([, u]) => `<td>${cell(u.backward.owd_ms)}</td>`).join("")}</tr></tbody></table></div>` +
    `<p class="scale">The rise under load shows which direction's queue filled. Without a shared clock the split between directions is an estimate.</p></section>`;
}
