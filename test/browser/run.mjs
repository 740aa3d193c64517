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
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Browser, sleep } from "./cdp.mjs";
import { Firefox } from "./bidi.mjs";

const [url, shot, out] = process.argv.slice(2);
const status = `document.getElementById("status")?.textContent ?? ""`;
const downloads = mkdtempSync(join(tmpdir(), "sonde-downloads-"));
let b;
try {
  const firefox = process.env.SONDE_BROWSER === "firefox";
  b = firefox ? await Firefox.launch() : await Browser.launch();
  await b.navigate(url);
  await b.eval(`document.getElementById("start").click()`);
  if (process.env.SONDE_MARK) {
    await b.waitFor(`(${status}).startsWith(${JSON.stringify(process.env.SONDE_MARK)})`, 60_000, 100);
    await sleep(1500);
    process.stdout.write("MARK\n");
  }
  await b.waitFor(`(${status}).startsWith("Done") || (${status}).startsWith("Finished")`, 150_000);
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
} catch (e) {
  console.error(String(e));
  process.exitCode = 1;
} finally {
  await b?.close();
  rmSync(downloads, { recursive: true, force: true });
}
