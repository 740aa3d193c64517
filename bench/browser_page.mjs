// Runs a page once in headless Chromium the way a user's browser runs it,
// and writes its result as JSON. Used by bench/browser.sh:
//
//   node --experimental-websocket bench/browser_page.mjs URL OUT.json [TIMEOUT_S]
//
// Two pages: sonde's (which starts itself with ?autostart=1 in URL; OUT
// gets {status, result}) and bench/browserceiling's bare page (OUT gets
// its window.result). The driver (test/browser/cdp.mjs) attaches no
// DevTools domain that watches the network, so the page's throughput is a
// user's.
import { writeFileSync } from "node:fs";
import { Browser } from "../test/browser/cdp.mjs";

const [url, out, timeoutArg] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: browser_page.mjs URL OUT.json [TIMEOUT_S]");
  process.exit(2);
}
let b;
try {
  b = await Browser.launch();
  await b.navigate(url);
  const done = await b.waitFor(`(() => {
    // sonde's page first: its element id="result" is window.result too.
    if (window.sonde) {
      const s = document.getElementById("status")?.textContent ?? "";
      return (s.startsWith("Done") || s.startsWith("Finished")) && JSON.stringify({ status: s, result: window.sonde.result() });
    }
    return window.result ? JSON.stringify(window.result) : false; })()`,
  Number(timeoutArg ?? 120) * 1000, 1000);
  writeFileSync(out, done);
} catch (e) {
  console.error(`browser_page: ${e.message}`);
  process.exitCode = 1;
} finally {
  await b?.close();
}
