// Past results: the server keeps every result it assembled (SQLite,
// internal/history); the page lists the recent ones and opens one again.
import { fmtRate, fmtMs } from "./analysis";

export const RESULTS = "/sonde/v1/results";

export interface PastRow {
  id: string; start: string; software: string;
  download_bps: number; upload_bps: number; idle_rtt_ms: number; loaded_rtt_ms: number; errors: number;
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}

/** pastTable renders rows as an HTML table; each row has an Open button. */
export function pastTable(rows: PastRow[]): string {
  if (rows.length === 0) return "<p>No past results on this server yet.</p>";
  const tr = rows.map((r) => {
    const when = new Date(r.start);
    const date = Number.isNaN(when.getTime()) ? "?" : when.toLocaleString();
    const ms = (v: number) => (v > 0 ? fmtMs(v) : "–");
    const bps = (v: number) => (v > 0 ? fmtRate(v) : "–");
    return `<tr data-id="${esc(r.id)}"><td>${esc(date)}</td><td>${bps(r.download_bps)}</td><td>${bps(r.upload_bps)}</td>` +
      `<td>${ms(r.idle_rtt_ms)}</td><td>${ms(r.loaded_rtt_ms)}</td><td>${r.errors > 0 ? "⚠ " + r.errors : ""}</td>` +
      `<td><button class="open" data-id="${esc(r.id)}" aria-label="Open the result of ${esc(date)}">Open</button> <a href="/r/${encodeURIComponent(r.id)}">link</a></td>` +
      `<td><input type="checkbox" class="cmp" data-id="${esc(r.id)}" aria-label="Compare the result of ${esc(date)}"></td></tr>`;
  }).join("");
  return `<table class="past"><caption class="sr-only">Past results, newest first</caption><thead><tr><th scope="col">when</th><th scope="col">down</th><th scope="col">up</th><th scope="col">idle RTT</th><th scope="col">loaded RTT</th><th scope="col">problems</th><th scope="col">result</th><th scope="col">compare</th></tr></thead><tbody>${tr}</tbody></table>`;
}

/**
 * trendSVG draws download and upload over the past results, oldest left,
 * with a text equivalent in its title (the table below holds every value).
 */
export function trendSVG(rows: PastRow[]): string {
  const pts = rows.filter((r) => r.download_bps > 0 || r.upload_bps > 0).slice().reverse();
  if (pts.length < 2) return "";
  const W = 640, H = 150, L = 56, R = 12, T = 14, B = 24;
  const top = Math.max(...pts.map((r) => Math.max(r.download_bps, r.upload_bps))) * 1.1;
  const x = (i: number) => L + ((W - L - R) * i) / (pts.length - 1);
  const y = (v: number) => T + (H - T - B) * (1 - v / top);
  const line = (k: "download_bps" | "upload_bps") => pts.map((r, i) => (r[k] > 0 ? `${x(i).toFixed(1)},${y(r[k]).toFixed(1)}` : "")).filter(Boolean).join(" ");
  const desc = `Download ${pts.map((r) => fmtRate(r.download_bps)).join(", ")}; upload ${pts.map((r) => fmtRate(r.upload_bps)).join(", ")}, oldest first.`;
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="trend-t trend-d"><title id="trend-t">Throughput of the last ${pts.length} results</title><desc id="trend-d">${esc(desc)}</desc>` +
    `<line x1="${L}" y1="${y(0)}" x2="${W - R}" y2="${y(0)}" stroke="var(--line)"/><line x1="${L}" y1="${y(top / 1.1)}" x2="${W - R}" y2="${y(top / 1.1)}" stroke="var(--line)" stroke-dasharray="3 3"/>` +
    `<text x="${L - 6}" y="${y(top / 1.1) + 4}" text-anchor="end">${esc(fmtRate(top / 1.1))}</text><text x="${L - 6}" y="${y(0) + 4}" text-anchor="end">0</text>` +
    `<polyline points="${line("download_bps")}" fill="none" stroke="var(--down)" stroke-width="2.5"/><polyline points="${line("upload_bps")}" fill="none" stroke="var(--up)" stroke-width="2.5"/>` +
    `<text x="${L}" y="${H - 6}">oldest</text><text x="${W - R}" y="${H - 6}" text-anchor="end">newest</text>` +
    `<text x="${L + 70}" y="${H - 6}" style="fill:var(--down)">■ download</text><text x="${L + 160}" y="${H - 6}" style="fill:var(--up)">■ upload</text></svg>`;
}

/** compareTable sets two past results side by side with the change. */
export function compareTable(a: PastRow, b: PastRow): string {
  const d = (va: number, vb: number, f: (v: number) => string) => (va > 0 && vb > 0 ? `${vb >= va ? "+" : "−"}${f(Math.abs(vb - va))}` : "–");
  const row = (k: string, va: number, vb: number, f: (v: number) => string) =>
    `<tr><th scope="row">${k}</th><td>${va > 0 ? f(va) : "–"}</td><td>${vb > 0 ? f(vb) : "–"}</td><td>${d(va, vb, f)}</td></tr>`;
  const when = (r: PastRow) => esc(new Date(r.start).toLocaleString());
  return `<table><caption class="sr-only">Comparison of two results</caption><thead><tr><th></th><th scope="col">${when(a)}</th><th scope="col">${when(b)}</th><th scope="col">change</th></tr></thead><tbody>` +
    row("download", a.download_bps, b.download_bps, fmtRate) + row("upload", a.upload_bps, b.upload_bps, fmtRate) +
    row("idle RTT", a.idle_rtt_ms, b.idle_rtt_ms, fmtMs) + row("loaded RTT", a.loaded_rtt_ms, b.loaded_rtt_ms, fmtMs) + `</tbody></table>`;
}

/** listPast fills el with the recent results; open is called with a fetched result. */
export async function listPast(el: HTMLElement, open: (r: unknown) => void, onError: (msg: string) => void): Promise<void> {
  let rows: PastRow[] = [];
  try {
    const r = await fetch(`${RESULTS}?limit=20`, { cache: "no-store" });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    rows = ((await r.json()).results ?? []) as PastRow[];
    el.innerHTML = pastTable(rows);
  } catch (e) {
    el.textContent = `Past results unavailable: ${(e as Error).message}`;
    return;
  }
  const trend = document.getElementById("trend"), cmp = document.getElementById("compare");
  if (trend) trend.innerHTML = trendSVG(rows);
  const boxes = Array.from(el.querySelectorAll<HTMLInputElement>("input.cmp"));
  const picked: string[] = [];
  for (const bx of boxes) {
    bx.addEventListener("change", () => {
      const id = bx.dataset.id!;
      if (bx.checked) picked.push(id); else picked.splice(picked.indexOf(id), 1);
      while (picked.length > 2) { const old = picked.shift()!; boxes.find((x) => x.dataset.id === old)!.checked = false; }
      const [a, b] = picked.map((p) => rows.find((r) => r.id === p)!).sort((x, y) => x.start.localeCompare(y.start));
      if (cmp) cmp.innerHTML = a && b ? compareTable(a, b) : picked.length === 1 ? "<p>Pick one more result to compare.</p>" : "";
    });
  }
  el.querySelectorAll<HTMLButtonElement>("button.open").forEach((b) => {
    b.addEventListener("click", async () => {
      try {
        const r = await fetch(`${RESULTS}/${encodeURIComponent(b.dataset.id!)}`);
        const j = await r.json();
        if (!r.ok) throw new Error(j.error ?? `HTTP ${r.status}`);
        open(j);
      } catch (e) {
        onError(`could not open that result: ${(e as Error).message}`);
      }
    });
  });
}
