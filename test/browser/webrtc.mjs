// Drives the sonde page in headless Chromium for the WebRTC quality test:
// click Start, wait for the report, save a screenshot and the result JSON.
// Called by webrtc_test.go inside a loopback-only network namespace with:
// node webrtc.mjs URL SCREENSHOT RESULT_JSON USER_DATA_DIR [EXTRA_CHROMIUM_ARG...]
// PLAYWRIGHT_CORE (env) is the path of playwright-core's index.mjs.
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const [url, shot, out, userDir, ...extra] = process.argv.slice(2);
const ctx = await chromium.launchPersistentContext(userDir, {
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  viewport: { width: 900, height: 1000 },
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    // Loopback is the only interface of the namespace: let ICE use it, and
    // give host candidates as addresses, not mDNS names nobody resolves.
    "--allow-loopback-in-peer-connection", "--disable-features=WebRtcHideLocalIpsWithMdns",
    ...extra],
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
  }, null, { timeout: 200_000 }).catch(async (e) => {
    throw new Error(`${e.message}; page status: ${await page.textContent("#status")}`);
  });
  await page.screenshot({ path: shot, fullPage: true });
  const result = await page.evaluate(() => window.sonde.result());
  const text = (sel) => page.evaluate((s) => document.querySelector(s)?.textContent ?? "", sel);
  const shown = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll("#webrtc [data-k]")].map((e) => [e.dataset.k, e.textContent])));
  const fs = await import("node:fs");
  fs.writeFileSync(out, JSON.stringify({
    status: await text("#status"), summary: await text("#summary"), errors: await text("#errors"), shown, result, logs,
  }, null, 1));
} catch (e) {
  console.error(String(e));
  console.error(logs.join("\n"));
  process.exitCode = 1;
} finally {
  await ctx.close();
}
