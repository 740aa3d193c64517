// Looks at the page as people see it: in headless Chromium (or Firefox,
// SONDE_BROWSER=firefox: bidi.mjs, one browser per colour scheme, set by a
// preference since BiDi cannot emulate it) at desktop (1280×800) and phone
// (390×844) sizes, light and dark, it runs a test and
// saves screenshots (idle, mid-run, the screen when the run ends, the
// result's first screen, the whole result) to OUT_DIR, audits the page with axe-core before, during and after
// the run, and checks that every figure the result holds is on the page
// and none reads "--" or NaN. Called by face_test.go:
//   node --experimental-websocket face.mjs URL OUT_DIR
// Writes OUT_DIR/face.json: per size and scheme, the problems found.
// Exit status: 0 ran (problems are in face.json), 1 failed to run, 2 usage.
import { readFileSync, writeFileSync } from "node:fs";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { Browser, sleep } from "./cdp.mjs";
import { Firefox } from "./bidi.mjs";

const [url, out] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node --experimental-websocket face.mjs URL OUT_DIR");
  process.exit(2);
}
const here = dirname(fileURLToPath(import.meta.url));
const axe = readFileSync(join(here, "../../web/node_modules/axe-core/axe.min.js"), "utf8");
const status = `(document.getElementById("status")?.textContent ?? "")`;

const firefox = process.env.SONDE_BROWSER === "firefox";

async function viewShot(b, path) {
  if (b.viewShot) return b.viewShot(path);
  const { data } = await b.call("Page.captureScreenshot", { format: "png" });
  writeFileSync(path, Buffer.from(data, "base64"));
}

// audit runs axe-core in the page; returns the serious and critical violations.
async function audit(b) {
  if (!(await b.eval(`typeof axe !== "undefined"`))) await (b.exec ? b.exec(axe) : b.eval(axe));
  // passes counts the rules that ran and passed: an audit that checked
  // nothing must not read as clean.
  return b.eval(`axe.run(document).then((r) => ({ passes: r.passes.length, violations: r.violations.filter((x) => x.impact === "serious" || x.impact === "critical").map((x) => x.id + " (" + x.impact + "): " + x.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")) }))`);
}

// figures checks that the first screen shows what the result holds.
const figureCheck = `(() => {
  const r = window.sonde.result(), problems = [];
  const shown = (k) => document.querySelector('#headline [data-k="' + k + '"]')?.textContent ?? null;
  const want = [];
  if (r.download?.goodput_bps > 0) want.push("down");
  if (r.upload?.goodput_bps > 0) want.push("up");
  if (r.baseline?.rtt_ms?.n > 0) want.push("idle");
  if (r.download?.latency_under_load?.rtt_ms?.n > 0) want.push("loaded_down");
  if (r.upload?.latency_under_load?.rtt_ms?.n > 0) want.push("loaded_up");
  if (r.bidir?.download?.goodput_bps > 0) want.push("bidir_down");
  if (r.bidir?.upload?.goodput_bps > 0) want.push("bidir_up");
  if (r.bidir?.latency_under_load?.rtt_ms?.n > 0) want.push("loaded_bidir");
  const g = r.grades ?? {};
  if (g.bufferbloat?.overall || g.bufferbloat?.bidir) want.push("bufferbloat");
  for (const p of g.responsiveness ?? []) want.push("rpm_" + p.direction);
  for (const u of g.use_cases ?? []) want.push("uc_" + u.name);
  const ins = (g.use_cases ?? []).flatMap((u) => u.inputs);
  if (ins.some((i) => i.metric === "jitter" && i.measured)) want.push("jitter");
  if (ins.some((i) => i.metric === "packet_loss" && i.measured)) want.push("loss");
  for (const k of want) if (shown(k) === null) problems.push("missing figure " + k);
  if (g.limit && !document.getElementById("limit")) problems.push("missing limit sentence");
  // One added delay per phase: the card shows the graded figure that the
  // limit sentence names (issue 23: they once read +90.8 and 109 ms).
  for (const [k, p] of [["loaded_down", "download"], ["loaded_up", "upload"], ["loaded_bidir", "bidir"]]) {
    const l = g.bufferbloat?.[p], t = shown(k);
    if (!l || t === null) continue;
    const want = Math.max(0, l.added_ms), got = parseFloat(t);
    if (!t.startsWith("+") || !(Math.abs(got - want) <= Math.max(0.01, want * 0.006))) problems.push(k + " reads " + t + ", the graded added delay is " + l.added_ms.toFixed(2) + " ms");
    const m = new RegExp("under " + (p === "bidir" ? "bidirectional" : p) + " load a queue adds ([0-9]+) ms").exec(g.limit ?? "");
    if (m && Number(m[1]) !== Math.round(l.added_ms)) problems.push("limit sentence says " + m[1] + " ms, the card " + t);
  }
  for (const el of document.querySelectorAll("#result [data-k], #result td, #headline .num")) {
    const t = el.textContent.trim();
    if (t === "--" || /\\bNaN\\b|undefined/.test(t)) problems.push("figure reads " + JSON.stringify(t) + " at " + (el.getAttribute("data-k") ?? el.tagName));
  }
  for (const el of document.querySelectorAll("[hidden]")) if (el.getClientRects().length > 0) problems.push("hidden but shown: #" + el.id);
  const legend = [...document.querySelectorAll("#charts .u-legend")].map((e) => e.textContent).join(" ");
  if (/--/.test(legend)) problems.push("chart legend reads --: " + legend);
  return { want, problems, overflow: document.documentElement.scrollWidth - window.innerWidth };
})()`;

const report = {};
const sizes = [["desktop", 1280, 800, false], ["phone", 390, 844, true]];
// Firefox's content colour scheme: 0 dark, 1 light.
const launch = (scheme) => (firefox ? Firefox.launch({ prefs: { "layout.css.prefers-color-scheme.content-override": scheme === "dark" ? 0 : 1 } }) : Browser.launch());
let b = firefox ? null : await launch("light");
try {
  for (const scheme of ["light", "dark"]) {
    if (firefox) {
      await b?.close();
      b = await launch(scheme);
    }
    for (const [size, w, h, mobile] of sizes) {
      const key = `${size}-${scheme}`, r = (report[key] = { axe: {}, problems: [] });
      await b.viewport(w, h, mobile);
      if (!firefox) await b.call("Emulation.setEmulatedMedia", { features: [{ name: "prefers-color-scheme", value: scheme }] });
      await b.navigate(url);
      r.scheme = await b.eval(`matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"`);
      if (r.scheme !== scheme) r.problems.push(`the page sees the ${r.scheme} scheme, not ${scheme}`);
      await sleep(300);
      await viewShot(b, join(out, `${key}-idle.png`));
      for (const id of await b.eval(`[...document.querySelectorAll("[hidden]")].filter((e) => e.getClientRects().length > 0).map((e) => e.id)`)) r.problems.push(`before the run, hidden but shown: #${id}`);
      r.axe.before = await audit(b);
      await b.eval(`document.getElementById("start").click()`);
      await b.waitFor(`${status}.startsWith("Measuring download")`, 30_000, 100);
      await sleep(1500);
      // The live figure is blank ("–") between phases, until the next
      // phase's first reading: on a loaded machine the check could land
      // there. It must show a figure within 10 s.
      await b.waitFor(`/^[0-9.]+$/.test(document.getElementById("live-rate").textContent)`, 10_000, 50).catch(() => {});
      await viewShot(b, join(out, `${key}-running.png`));
      r.live = await b.eval(`({ rate: document.getElementById("live-rate").textContent, rtt: document.getElementById("live-rtt").textContent, phase: document.querySelector("#live .phases .on")?.textContent })`);
      r.axe.during = await audit(b);
      await b.waitFor(`${status}.startsWith("Done") || ${status}.startsWith("Finished")`, 120_000);
      await sleep(600);
      await viewShot(b, join(out, `${key}-done.png`)); // what the screen shows when the run ends
      await b.eval(`window.scrollTo(0, document.getElementById("result").offsetTop - 8)`);
      await viewShot(b, join(out, `${key}-result.png`));
      await b.eval(`window.scrollTo(0, 0)`);
      await b.screenshot(join(out, `${key}-full.png`));
      r.axe.after = await audit(b);
      const f = await b.eval(figureCheck);
      r.figures = f.want;
      r.problems.push(...f.problems);
      if (f.overflow > 0) r.problems.push(`page is ${f.overflow} px wider than the screen`);
      if (!/^[0-9.]+$/.test(r.live.rate) || !/^[0-9.]+$/.test(r.live.rtt)) r.problems.push(`live figures mid-run: ${JSON.stringify(r.live)}`);
      r.id = await b.eval(`window.sonde.result()?.id`);
    }
  }
  // The shared page of the last result: rendered without a run.
  const id = report["phone-dark"].id;
  await b.viewport(1280, 800, false);
  await b.navigate(new URL(`/r/${id}`, url).href);
  await b.waitFor(`${status}.startsWith("Showing result")`, 10_000, 100);
  report.shared = { id, problems: (await b.eval(figureCheck)).problems, axe: { after: await audit(b) } };
  await b.screenshot(join(out, "shared-desktop-light.png"));
} finally {
  writeFileSync(join(out, "face.json"), JSON.stringify(report, null, 1));
  await b?.close();
}
process.exit();
