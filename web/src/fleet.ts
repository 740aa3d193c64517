// The fleet view (docs/fleet.md, "Fleet view"): served by `sonde fleet
// serve` at / on --listen, it asks /fleet.json for the fleet report of a
// range and label filter and shows the monitors and the label groups in
// tables sortable by each figure (each monitor's name links to its own
// report, /report), and the upstream events (no map: a list). Same origin
// only, no inline script (the server sends a strict CSP).
import { Cell, FleetReport, Table, fleetQuery, groupTable, monitorTable, sortRows, upstreamLines } from "./fleet-data";

const $ = (id: string) => document.getElementById(id)!;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

function fig(label: string, value: string, sub: string, tone = ""): HTMLElement {
  const f = el("div", undefined, "fig" + (tone ? " tone-" + tone : ""));
  f.appendChild(el("div", label, "fig-label"));
  f.appendChild(el("div", value, "fig-value"));
  f.appendChild(el("div", sub, "fig-sub"));
  return f;
}

/** sortable draws a table whose header buttons sort it by their column
 * (again: the other way), aria-sort saying how it is sorted. */
function sortable(box: HTMLElement, t: Table, caption: string, empty: string): void {
  box.textContent = "";
  if (t.rows.length === 0) {
    box.appendChild(el("p", empty, "muted"));
    return;
  }
  const table = el("table");
  table.appendChild(el("caption", caption, "sr-only"));
  const hr = table.createTHead().insertRow();
  const body = table.createTBody();
  let col = -1, asc = true;
  const fill = (rows: Cell[][]) => {
    body.textContent = "";
    for (const r of rows) {
      const tr = body.insertRow();
      r.forEach((c, i) => {
        const td = el("td", undefined, c.cls);
        td.dataset.v = String(c.v);
        if (c.fig) td.dataset.k = t.head[i];
        if (c.href) {
          const a = el("a", c.text);
          a.href = c.href;
          td.appendChild(a);
        } else td.textContent = c.text;
        tr.appendChild(td);
      });
    }
  };
  t.head.forEach((h, i) => {
    const th = el("th");
    th.scope = "col";
    const b = el("button", h);
    b.type = "button";
    b.addEventListener("click", () => {
      asc = col === i ? !asc : true;
      col = i;
      for (const x of Array.from(hr.children)) x.removeAttribute("aria-sort");
      th.setAttribute("aria-sort", asc ? "ascending" : "descending");
      fill(sortRows(t.rows, col, asc));
    });
    th.appendChild(b);
    hr.appendChild(th);
  });
  fill(t.rows);
  box.appendChild(table);
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
    const sent = rep.monitors.reduce((a, m) => a + m.sent, 0), lost = rep.monitors.reduce((a, m) => a + m.lost, 0);
    const failing = rep.monitors.filter((m) => m.verdicts.some((v) => v.verdict === "FAIL")).length;
    const line = rep.monitors.filter((m) => m.line.count > 0).length;
    const s = $("summary");
    s.textContent = "";
    s.appendChild(fig("Monitors", String(rep.monitors.length), `${rep.groups?.length ?? 0} label groups`));
    s.appendChild(fig("Loss", sent ? ((100 * lost) / sent).toFixed(3) + " %" : "no probe", `${lost.toLocaleString("en-US")} of ${sent.toLocaleString("en-US")} probes`));
    s.appendChild(fig("Failing a profile", String(failing), `of ${rep.monitors.length} monitors`, failing ? "bad" : "good"));
    s.appendChild(fig("Upstream events", String(rep.upstream?.length ?? 0), `${line} monitors with outages of their own line`, rep.upstream?.length ? "fair" : "good"));
    sortable($("monitors"), monitorTable(rep, since), "Monitors", rep.notes?.join("; ") || "No monitor.");
    sortable($("groups"), groupTable(rep), "Label groups", "No label shared by two monitors.");
    const ups = upstreamLines(rep);
    const ul = el("ul");
    for (const l of ups) ul.appendChild(el("li", l));
    $("upstream").replaceChildren(ups.length ? ul : el("p", "None in this range.", "muted"));
    const notes = el("ul", undefined, "muted");
    for (const n of rep.notes ?? []) notes.appendChild(el("li", n));
    $("notes").replaceChildren(notes);
    $("state").textContent = `${rep.monitors.length} monitors · ${rep.source}`;
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
