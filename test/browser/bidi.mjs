// A minimal WebDriver BiDi driver for headless Firefox (Debian's
// firefox-esr), with the same methods as cdp.mjs's Browser so run.mjs can
// drive either. Playwright cannot drive a stock Firefox (it needs its own
// patched build); BiDi is Firefox's built-in remote protocol, the one
// puppeteer uses for Firefox too. Needs node >= 20 with
// --experimental-websocket.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sleep } from "./cdp.mjs";

// Preferences that keep a test Firefox from calling home: no telemetry,
// updates, remote settings, safe browsing or captive-portal checks. The
// page under test talks only to the sonde server.
const PREFS = {
  "app.normandy.enabled": false,
  "app.update.auto": false,
  "app.update.enabled": false,
  "browser.safebrowsing.blockedURIs.enabled": false,
  "browser.safebrowsing.downloads.enabled": false,
  "browser.safebrowsing.malware.enabled": false,
  "browser.safebrowsing.phishing.enabled": false,
  "browser.shell.checkDefaultBrowser": false,
  "browser.startup.homepage_override.mstone": "ignore",
  "browser.newtabpage.enabled": false,
  "browser.region.network.url": "",
  "browser.search.geoip.url": "",
  "browser.topsites.contile.enabled": false,
  "datareporting.healthreport.uploadEnabled": false,
  "datareporting.policy.dataSubmissionEnabled": false,
  "extensions.getAddons.cache.enabled": false,
  // The tests serve on loopback; Firefox leaves loopback out of WebRTC's
  // ICE candidates unless told (a user's server is never on loopback).
  "media.peerconnection.ice.loopback": true,
  "media.peerconnection.ice.obfuscate_host_addresses": false, // no mDNS names the server cannot resolve
  "extensions.update.enabled": false,
  "network.captive-portal-service.enabled": false,
  "network.connectivity-service.enabled": false,
  "network.dns.disablePrefetch": true,
  "network.prefetch-next": false,
  "services.settings.server": "http://127.0.0.1:9/",
  "toolkit.telemetry.enabled": false,
  "toolkit.telemetry.server": "",
  "toolkit.telemetry.unified": false,
};

export class Firefox {
  static async launch({ exe = process.env.FIREFOX || "/usr/bin/firefox-esr", timeoutMs = 60_000, width = 800, height = 1000 } = {}) {
    const dir = mkdtempSync(join(tmpdir(), "sonde-firefox-"));
    writeFileSync(join(dir, "user.js"), Object.entries(PREFS).map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});`).join("\n") + "\n");
    const child = spawn(exe, ["--headless", "--no-remote", "--profile", dir, "--remote-debugging-port", "0",
      `--width=${width}`, `--height=${height}`, "about:blank"], { stdio: ["ignore", "ignore", "pipe"], detached: true }); // own process group: close() ends its helpers too
    const f = new Firefox(child, dir, width, height);
    try {
      await f.connect(Date.now() + timeoutMs);
    } catch (e) {
      await f.close();
      throw e;
    }
    return f;
  }

  constructor(child, dir, width, height) {
    this.child = child;
    this.dir = dir;
    this.size = { width, height };
    this.stderr = "";
    this.id = 0;
    this.pending = new Map();
    child.stderr.on("data", (d) => { this.stderr = (this.stderr + d).slice(-8000); });
  }

  async connect(deadline) {
    let m;
    while (!(m = /WebDriver BiDi listening on (ws:\/\/\S+)/.exec(this.stderr))) {
      if (Date.now() > deadline || this.child.exitCode !== null) throw new Error(`firefox did not start: ${this.stderr}`);
      await sleep(100);
    }
    this.ws = new WebSocket(m[1] + "/session");
    await new Promise((ok, fail) => { this.ws.onopen = ok; this.ws.onerror = () => fail(new Error("BiDi socket failed")); });
    this.ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.id && this.pending.has(msg.id)) {
        this.pending.get(msg.id)(msg);
        this.pending.delete(msg.id);
      }
    };
    await this.call("session.new", { capabilities: {} });
    const tree = await this.call("browsingContext.getTree", {});
    this.context = tree.contexts[0].context;
    await this.viewport(this.size.width, this.size.height);
  }

  call(method, params = {}) {
    return new Promise((ok, fail) => {
      const i = ++this.id;
      this.pending.set(i, (m) => (m.type === "error" ? fail(new Error(`${method}: ${m.error}: ${m.message}`)) : ok(m.result)));
      this.ws.send(JSON.stringify({ id: i, method, params }));
    });
  }

  /** eval returns a JSON-serialisable expression's value (awaits promises). */
  async eval(expression) {
    const r = await this.call("script.evaluate", {
      expression: `(async () => JSON.stringify(await (${expression})))()`,
      target: { context: this.context }, awaitPromise: true, resultOwnership: "none",
    });
    if (r.type === "exception") throw new Error(`page: ${r.exceptionDetails?.text}`);
    const v = r.result?.value;
    return v === undefined ? undefined : JSON.parse(v);
  }

  async waitFor(expression, timeoutMs, intervalMs = 250) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await this.eval(expression);
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${expression}`);
      await sleep(intervalMs);
    }
  }

  async navigate(url) {
    await this.call("browsingContext.navigate", { context: this.context, url, wait: "complete" });
  }

  async screenshot(path) {
    const { data } = await this.call("browsingContext.captureScreenshot", { context: this.context, origin: "document" });
    writeFileSync(path, Buffer.from(data, "base64"));
  }

  async viewport(width, height) {
    await this.call("browsingContext.setViewport", { context: this.context, viewport: { width, height } });
  }

  async close() {
    try {
      if (this.ws?.readyState === WebSocket.OPEN) await Promise.race([this.call("browser.close", {}), sleep(2000)]);
    } catch { /* already going */ }
    try { this.ws?.close(); } catch { /* already gone */ }
    await Promise.race([new Promise((r) => (this.child.exitCode !== null ? r() : this.child.once("exit", r))), sleep(3000)]);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    try { process.kill(-this.child.pid, "SIGKILL"); } catch { /* the group is gone */ }
    try {
      rmSync(this.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (e) {
      console.error(`warning: ${this.dir} not removed: ${e.message}`);
    }
  }
}
