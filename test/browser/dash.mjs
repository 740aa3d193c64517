// Looks at the monitor's dashboard and the fleet view as people see them:
// in headless Chromium at desktop (1280×800) and phone (390×844) sizes,
// light and dark, it loads each, saves screenshots to OUT_DIR, audits
// them with axe-core and checks what they show. Called by dash_test.go:
//   node --experimental-websocket dash.mjs DASH_URL FLEET_URL OUT_DIR MARKS_JSON
// MARKS_JSON: {"outage_s", "gap_from_s", "gap_to_s"} of the stored history.
// Writes OUT_DIR/dash.json: per page, size and scheme, the problems found.
// Exit status: 0 ran (problems are in dash.json), 1 failed to run, 2 usage.
import { readFileSync, writeFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Browser, audit as auditWith, sleep, viewShot } from "./cdp.mjs";

const [dash, fleetURL, out, marksArg] = process.argv.slice(2);
if (!dash || !fleetURL || !out || !marksArg) {
  console.error("usage: node --experimental-websocket dash.mjs DASH_URL FLEET_URL OUT_DIR MARKS_JSON");
  process.exit(2);
}
const marks = JSON.parse(marksArg);
const here = dirname(fileURLToPath(import.meta.url));
const axe = readFileSync(join(here, "../../web/node_modules/axe-core/axe.min.js"), "utf8");
const audit = (b) => auditWith(b, axe);

// Figures: none reads "--", NaN, undefined, Infinity, or a bare dash
// where the store holds data.
const figureCheck = (sel) => `(() => {
  const problems = [];
  const els = [...document.querySelectorAll(${JSON.stringify(sel)})];
  for (const el of els) {
    const t = el.textContent.trim();
    if (t === "" || t === "--" || t === "–" || /\\bNaN\\b|undefined|Infinity/.test(t)) problems.push("figure reads " + JSON.stringify(t) + " at " + (el.dataset.k ?? el.tagName));
  }
  const page = document.body.innerText;
  if (/\\bNaN\\b|undefined|Infinity|(^|\\s)--(\\s|$)/.test(page)) problems.push("the page reads NaN, undefined, Infinity or --");
  return { checked: els.length, problems, overflow: document.documentElement.scrollWidth - window.innerWidth };
})()`;

// The charts hold what the range holds.
const chartCheck = `(() => {
  const p = [], q = (s) => document.querySelectorAll(s).length;
  if (q("#smoke svg rect.s3") < 10) p.push("smoke graph: " + q("#smoke svg rect.s3") + " intervals drawn");
  if (q("#smoke svg path.med") < 1) p.push("smoke graph: no median");
  if (q("#smoke svg rect[class^=ln-]") < 2) p.push("no load lanes");
  if (q("#smoke svg a") < 5) p.push("event lane: " + q("#smoke svg a") + " events");
  const rl = [...document.querySelectorAll("#rl svg path.rl-line")].filter((e) => (e.getAttribute("d") || "").length > 20).length;
  if (rl < 1) p.push("R(L) chart: no line");
  if (q("#events tbody tr") < 5) p.push("events table: " + q("#events tbody tr") + " rows");
  return p;
})()`;

const report = {};
const sizes = [["desktop", 1280, 800, false], ["phone", 390, 844, true]];
const b = await Browser.launch();
try {
  for (const [size, w, h, mobile] of sizes) {
    for (const scheme of ["light", "dark"]) {
      const key = `${size}-${scheme}`;
      await b.viewport(w, h, mobile);
      await b.call("Emulation.setEmulatedMedia", { features: [{ name: "prefers-color-scheme", value: scheme }] });

      // The dashboard, a week.
      let r = (report[`dash-${key}`] = { axe: {}, problems: [] });
      await b.navigate(dash + "#range=7d");
      await b.waitFor(`document.querySelectorAll("#smoke svg rect.s3").length > 0 && document.querySelector("#live [data-k=live_rtt]")`, 30_000, 200);
      await sleep(300);
      await viewShot(b, join(out, `dash-${key}.png`));
      await b.screenshot(join(out, `dash-${key}-full.png`));
      await b.eval(`window.scrollTo(0, document.getElementById("smoke").closest(".panel").offsetTop - 8)`);
      await viewShot(b, join(out, `dash-${key}-charts.png`));
      await b.eval(`window.scrollTo(0, 0)`);
      r.axe.week = await audit(b);
      const f = await b.eval(figureCheck("#live [data-k], #summary [data-k]"));
      r.checked = f.checked;
      r.problems.push(...f.problems, ...(await b.eval(chartCheck)));
      if (f.overflow > 0) r.problems.push(`page is ${f.overflow} px wider than the screen`);
      // The keyboard reads the smoke graph interval by interval.
      const read = await b.eval(`(() => { const s = document.querySelector("#smoke [role=slider]"); s.focus();
        s.dispatchEvent(new KeyboardEvent("keydown", { key: "Home", bubbles: true }));
        s.dispatchEvent(new KeyboardEvent("keydown", { key: "ArrowRight", bubbles: true }));
        return { now: s.getAttribute("aria-valuenow"), text: document.getElementById("smoke-read").textContent }; })()`);
      if (read.now !== "1" || !/UTC: /.test(read.text)) r.problems.push("keyboard: " + JSON.stringify(read));
      // An event on the timeline leads to its row.
      const link = await b.eval(`(() => { const a = document.querySelector("#smoke svg a"); const id = a.getAttribute("href").slice(1);
        a.dispatchEvent(new MouseEvent("click", { bubbles: true })); const row = document.getElementById(id);
        return row ? row.className + " " + row.textContent.slice(0, 80) : null; })()`);
      if (!link || !link.startsWith("hl")) r.problems.push("event link: " + link);
      // The other ranges draw too (desktop light: each one's screenshot).
      for (const span of ["1h", "24h", "30d"]) {
        await b.eval(`[...document.querySelectorAll("#ranges button")].find((x) => x.textContent.replace(" ", "") === "${span}").click()`);
        await b.waitFor(`document.getElementById("range-state").textContent.includes("read from")`, 30_000, 200);
        await sleep(200);
        const c = await b.eval(chartCheck);
        // An hour may hold no event; every range holds intervals and lines.
        r.problems.push(...c.filter((x) => !(span === "1h" && /event/.test(x))).map((x) => `${span}: ${x}`));
        if (key === "desktop-light") {
          await b.eval(`window.scrollTo(0, document.getElementById("smoke").closest(".panel").offsetTop - 8)`);
          await viewShot(b, join(out, `dash-${key}-${span}.png`));
        }
      }
      // Around the outage and the gap: 100 % loss and no data drawn apart.
      for (const [name, at] of [["outage", marks.outage_s], ["gap", marks.gap_from_s]]) {
        await b.navigate(dash + `#range=${at - 3600}-${at + 3 * 3600}`);
        await b.waitFor(`document.getElementById("range-state").textContent.includes("read from")`, 30_000, 200);
        await sleep(200);
        const n = await b.eval(`({ full: document.querySelectorAll("#smoke svg rect.lfull").length, gap: document.querySelectorAll("#smoke svg rect.nodata").length })`);
        if (name === "outage" && n.full < 2) r.problems.push(`around the outage: ${n.full} intervals of 100 % loss drawn`);
        if (name === "gap" && n.gap < 1) r.problems.push("around the gap: no hatched interval");
        if (size === "desktop" || scheme === "dark") {
          await b.eval(`window.scrollTo(0, document.getElementById("smoke").closest(".panel").offsetTop - 8)`);
          await viewShot(b, join(out, `dash-${key}-${name}.png`));
        }
        if (name === "outage") r.axe.outage = await audit(b);
      }

      // The fleet view.
      r = (report[`fleet-${key}`] = { axe: {}, problems: [] });
      await b.navigate(fleetURL);
      await b.waitFor(`document.querySelectorAll("#monitors tbody tr").length >= 4`, 60_000, 200);
      await sleep(200);
      await viewShot(b, join(out, `fleet-${key}.png`));
      await b.screenshot(join(out, `fleet-${key}-full.png`));
      r.axe.load = await audit(b);
      const ff = await b.eval(figureCheck("#monitors td[data-k], #groups td[data-k]"));
      r.checked = ff.checked;
      r.problems.push(...ff.problems);
      if (ff.overflow > 0) r.problems.push(`page is ${ff.overflow} px wider than the screen`);
      const fc = await b.eval(`({ groups: document.querySelectorAll("#groups tbody tr").length, upstream: document.querySelectorAll("#upstream li").length,
        links: [...document.querySelectorAll("#monitors tbody a")].map((a) => a.getAttribute("href")) })`);
      if (fc.groups < 2) r.problems.push(`${fc.groups} label groups`);
      if (fc.upstream < 1) r.problems.push("no upstream event listed");
      if (fc.links.length < 4) r.problems.push(`${fc.links.length} links to the monitors' reports`);
      // Sorting: by loss, then again (the other way); the column follows.
      const sorted = await b.eval(`(() => {
        const col = [...document.querySelectorAll("#monitors thead th")].findIndex((th) => th.textContent.startsWith("loss"));
        const btn = document.querySelectorAll("#monitors thead th")[col].querySelector("button");
        const vals = () => [...document.querySelectorAll("#monitors tbody tr")].map((tr) => parseFloat(tr.children[col].dataset.v));
        btn.click(); const a = vals(), s1 = document.querySelectorAll("#monitors thead th")[col].getAttribute("aria-sort");
        document.querySelectorAll("#monitors thead th")[col].querySelector("button").click(); const d = vals();
        const s2 = document.querySelectorAll("#monitors thead th")[col].getAttribute("aria-sort");
        return { a, d, s1, s2 }; })()`);
      const asc = (v) => v.every((x, i) => i === 0 || v[i - 1] <= x);
      if (!(sorted.a.length >= 4 && asc(sorted.a) && asc([...sorted.d].reverse()) && sorted.s1 === "ascending" && sorted.s2 === "descending")) {
        r.problems.push("sort by loss: " + JSON.stringify(sorted));
      }
      r.axe.sorted = await audit(b);
      // A monitor's link opens its own report.
      if (fc.links.length) {
        await b.navigate(new URL(fc.links[0], fleetURL).href);
        const rep = await b.eval(`({ title: document.title, text: document.body.innerText.slice(0, 4000) })`);
        if (!/home-\d/.test(rep.title + rep.text) || !/R\(|reliability/i.test(rep.text)) r.problems.push("the monitor's report: " + rep.title);
        if (key === "desktop-light" || key === "phone-dark") await viewShot(b, join(out, `fleet-${key}-report.png`));
      }
    }
  }
} finally {
  writeFileSync(join(out, "dash.json"), JSON.stringify(report, null, 1));
  await b.close();
}
process.exit();
