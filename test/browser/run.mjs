// Drives the sonde page in headless Chromium: click Start, wait for the
// report, save a screenshot and the result JSON. Called by browser_test.go
// with: node run.mjs URL SCREENSHOT RESULT_JSON USER_DATA_DIR
// PLAYWRIGHT_CORE (env) is the path of playwright-core's index.mjs.
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const [url, shot, out, userDir] = process.argv.slice(2);
const ctx = await chromium.launchPersistentContext(userDir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 800, height: 1000 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const logs = [];
try {
  const page = await ctx.newPage();
  page.on("console", (m) => logs.push(`console.${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => logs.push(`pageerror: ${e.message}`));
  await page.goto(url);
  await page.click("#start");
  await page.waitForFunction(() => {
    const s = document.getElementById("status")?.textContent ?? "";
    return s.startsWith("Done") || s.startsWith("Finished");
  }, null, { timeout: 90_000 });
  await page.screenshot({ path: shot, fullPage: true });
  const result = await page.evaluate(() => window.sonde.result());
  const status = await page.textContent("#status");
  const summary = await page.textContent("#summary");
  const fs = await import("node:fs");
  fs.writeFileSync(out, JSON.stringify({ status, summary, result, logs }, null, 1));
} catch (e) {
  console.error(String(e));
  console.error(logs.join("\n"));
  process.exitCode = 1;
} finally {
  await ctx.close();
}
