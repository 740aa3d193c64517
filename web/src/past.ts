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
      `<td><button class="open" data-id="${esc(r.id)}">Open</button></td></tr>`;
  }).join("");
  return `<table class="past"><thead><tr><th>when</th><th>down</th><th>up</th><th>idle RTT</th><th>loaded RTT</th><th>problems</th><th></th></tr></thead><tbody>${tr}</tbody></table>`;
}

/** listPast fills el with the recent results; open is called with a fetched result. */
export async function listPast(el: HTMLElement, open: (r: unknown) => void, onError: (msg: string) => void): Promise<void> {
  try {
    const r = await fetch(`${RESULTS}?limit=20`, { cache: "no-store" });
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    el.innerHTML = pastTable(((await r.json()).results ?? []) as PastRow[]);
  } catch (e) {
    el.textContent = `Past results unavailable: ${(e as Error).message}`;
    return;
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
