// Runs bench/browserceiling's bare page once in headless Chromium and
// writes its result as JSON. Used by bench/browser.sh:
//
//   node --experimental-websocket bench/browser_ceiling.mjs URL OUT.json [TIMEOUT_S]
import { writeFileSync } from "node:fs";
import { Browser } from "../test/browser/cdp.mjs";

const [url, out, timeoutArg] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: browser_ceiling.mjs URL OUT.json [TIMEOUT_S]");
  process.exit(2);
}
let b;
try {
  b = await Browser.launch();
  await b.navigate(url);
  const r = await b.waitFor(`window.result && JSON.stringify(window.result)`, Number(timeoutArg ?? 60) * 1000, 200);
  const errors = JSON.parse(r).errors;
  if (errors.length) throw new Error(errors.join("; "));
  writeFileSync(out, r);
} catch (e) {
  console.error(`browser_ceiling: ${e.message}`);
  process.exitCode = 1;
} finally {
  await b?.close();
}
