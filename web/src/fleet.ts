// The fleet view (docs/fleet.md, "Fleet view"): served by `sonde fleet
// serve` at / on --listen, it asks /fleet.json for the fleet report of a
// range and label filter and lists the monitors with their verdict per
// requirement profile and whether their outages were their line's or
// upstream's, and the upstream events (no map: a list). Same origin only,
// no inline script (the server sends a strict CSP).
import { FleetReport, fleetQuery, monitorRows, upstreamLines } from "./fleet-data";

const $ = (id: string) => document.getElementById(id)!;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function table(rep: FleetReport): HTMLElement {
  const rows = monitorRows(rep);
  if (rows.body.length === 0) return el("p", rep.notes?.join("; ") || "No monitor.", "muted");
  const t = el("table");
  const head = t.createTHead().insertRow();
  for (const h of rows.head) head.appendChild(el("th", h));
  const body = t.createTBody();
  for (const r of rows.body) {
    const tr = body.insertRow();
    for (const c of r) tr.appendChild(el("td", c.text, c.cls));
  }
  return t;
}

async function load(): Promise<void> {
  const since = ($("since") as HTMLSelectElement).value;
  const labels = ($("labels") as HTMLInputElement).value;
  $("error").textContent = "";
  $("state").textContent = "reading the store…";
  try {
    const r = await fetch("fleet.json?" + fleetQuery(since, labels), { cache: "no-store" });
    if (!r.ok) throw new Error((await r.text()).trim() || `HTTP ${r.status}`);
    const rep = (await r.json()) as FleetReport;
    $("monitors").replaceChildren(table(rep));
    const ups = upstreamLines(rep);
    const ul = el("ul");
    for (const l of ups) ul.appendChild(el("li", l));
    $("upstream").replaceChildren(ups.length ? ul : el("p", "None in this range.", "muted"));
    $("state").textContent = `${rep.monitors.length} monitors, ${rep.source}`;
  } catch (e) {
    $("state").textContent = "";
    $("error").textContent = String(e instanceof Error ? e.message : e);
  }
}

$("query").addEventListener("submit", (ev) => {
  ev.preventDefault();
  void load();
});
void load();
