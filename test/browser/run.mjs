// Drives the sonde page in headless Chromium (cdp.mjs: no DevTools domain
// watches the network, so the page measures as it does for a user): click
// Start, wait for the report, take screenshots, click Save JSON and open
// the newest past result, and write what the page showed as JSON.
// Called by browser_test.go with:
//   node --experimental-websocket run.mjs URL SCREENSHOT OUT_JSON
// Environment:
//   SONDE_BROWSER     chromium (default) or firefox (bidi.mjs; no Save JSON check)
//   CHROMIUM, FIREFOX browser binaries (/usr/bin/chromium, /usr/bin/firefox-esr)
//   SONDE_PHONE_SHOT  also take a 390x844 (phone) screenshot of the report here
//   SONDE_MARK        print "MARK" on stdout once the status starts with
//                     this text (+1.5 s), so the test can act mid-run
//   SONDE_RUN_TIMEOUT_S  give up (and close the browser) after this many
//                     seconds, default 170: under the Go test's own limit,
//                     so a stuck run ends with a message, not a kill
//   SONDE_TEST_KILL_BROWSER_S  tests only: SIGKILL the browser's main
//                     process this many seconds into the page run, as a
//                     crash would end it
// Exit status: 0 done, 1 failed, 3 Firefox crashed (its main process
// ended unasked; the test may run the page once more), 2 usage.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Browser, sleep } from "./cdp.mjs";
import { Firefox } from "./bidi.mjs";

const CRASHED = 3;
const [url, shot, out] = process.argv.slice(2);
const runTimeoutS = Number(process.env.SONDE_RUN_TIMEOUT_S || 170);
if (!out || !(runTimeoutS > 0 && runTimeoutS <= 3600)) {
  console.error("usage: SONDE_RUN_TIMEOUT_S=1..3600 node --experimental-websocket run.mjs URL SCREENSHOT OUT_JSON");
  process.exit(2);
}
const status = `document.getElementById("status")?.textContent ?? ""`;
const downloads = mkdtempSync(join(tmpdir(), "sonde-downloads-"));
const firefox = process.env.SONDE_BROWSER === "firefox";
let b;
let lastStep = "launch";
// A test that stops us (SIGTERM, SIGINT) must not leave the browser
// behind: it runs in its own process group, which a kill of node misses.
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.once(sig, async () => {
    console.error(`run.mjs: ${sig} during ${lastStep}; closing the browser`);
    await b?.close();
    rmSync(downloads, { recursive: true, force: true });
    process.exit(1);
  });
}
let watchdog;
try {
  await Promise.race([drive(), new Promise((_, fail) => {
    watchdog = setTimeout(() => fail(new Error(`gave up after ${runTimeoutS} s, during ${lastStep}`)), runTimeoutS * 1000);
  })]);
} catch (e) {
  const crashed = firefox && (b?.crashed || e.firefoxCrashed);
  let msg = String(e);
  if (b && !b.gone) { // what the page last said, if the browser still answers
    const st = await Promise.race([b.eval(status).catch(() => undefined), sleep(3000)]);
    if (typeof st === "string") msg += `; page status: ${JSON.stringify(st)}`;
  }
  if (firefox && b && !msg.includes("firefox stderr")) msg += `; firefox stderr: ${b.stderrTail()}`;
  console.error(crashed ? `FIREFOX CRASHED: ${msg}` : msg);
  process.exitCode = crashed ? CRASHED : 1;
} finally {
  clearTimeout(watchdog);
  await b?.close();
  rmSync(downloads, { recursive: true, force: true });
}
// Nothing of the browser's may keep node running now.
process.exit();

async function drive() {
  b = firefox ? await Firefox.launch() : await Browser.launch();
  lastStep = "the page run";
  const killAfter = Number(process.env.SONDE_TEST_KILL_BROWSER_S || 0);
  if (killAfter > 0) setTimeout(() => b.child.kill("SIGKILL"), killAfter * 1000).unref();
  await b.navigate(url);
  await b.eval(`document.getElementById("start").click()`);
  if (process.env.SONDE_MARK) {
    await b.waitFor(`(${status}).startsWith(${JSON.stringify(process.env.SONDE_MARK)})`, 60_000, 100);
    await sleep(1500);
    process.stdout.write("MARK\n");
  }
  lastStep = "waiting for the report";
  await b.waitFor(`(${status}).startsWith("Done") || (${status}).startsWith("Finished")`, 150_000);
  lastStep = "reading the report";
  await sleep(500); // the list of past results refreshes after the report
  await b.screenshot(shot);
  const shown = await b.eval(`(() => {
    const text = (sel) => document.querySelector(sel)?.textContent ?? "";
    const figures = {};
    for (const el of document.querySelectorAll("[data-k]")) {
      const dir = el.closest("section")?.id ?? "";
      figures[(dir ? dir + "." : "") + el.getAttribute("data-k")] = el.textContent;
    }
    return {
      status: text("#status"), summary: text("#summary"), errors: text("#errors"), partial: text("#partial"),
      figures, past_rows: document.querySelectorAll("#past tbody tr").length,
      charts: document.querySelectorAll("#charts .uplot").length,
      save_enabled: !document.getElementById("save").disabled,
      result: window.sonde.result(),
    };
  })()`);
  // Save JSON: what the user gets must be the result, parseable.
  if (shown.save_enabled && !firefox) {
    await b.call("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: downloads });
    await b.eval(`document.getElementById("save").click()`);
    for (let i = 0; i < 100 && !shown.saved; i++) {
      await sleep(100);
      const f = readdirSync(downloads).find((n) => n.endsWith(".json"));
      if (f) {
        try { shown.saved = JSON.parse(readFileSync(join(downloads, f), "utf8")); } catch { /* still being written */ }
      }
    }
  }
  // Open the newest past result: it must render that run's report.
  if (shown.past_rows > 0) {
    await b.eval(`document.querySelector("#past button.open").click()`);
    await b.waitFor(`(${status}).startsWith("Showing a past result")`, 10_000, 100);
    shown.reopened_id = await b.eval(`window.sonde.result()?.id`);
  }
  if (process.env.SONDE_PHONE_SHOT) {
    await b.viewport(390, 844, true);
    await sleep(400);
    await b.screenshot(process.env.SONDE_PHONE_SHOT);
    shown.phone_overflow = await b.eval(`document.documentElement.scrollWidth - window.innerWidth`);
  }
  writeFileSync(out, JSON.stringify(shown, null, 1));
}
