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
  // prefs are set beside PREFS (face.mjs: the colour scheme, which BiDi
  // cannot emulate).
  static async launch({ exe = process.env.FIREFOX || "/usr/bin/firefox-esr", timeoutMs = 60_000, width = 800, height = 1000, prefs = {} } = {}) {
    const dir = mkdtempSync(join(tmpdir(), "sonde-firefox-"));
    writeFileSync(join(dir, "user.js"), Object.entries({ ...PREFS, ...prefs }).map(([k, v]) => `user_pref(${JSON.stringify(k)}, ${JSON.stringify(v)});`).join("\n") + "\n");
    const child = spawn(exe, ["--headless", "--no-remote", "--profile", dir, "--remote-debugging-port", "0",
      `--width=${width}`, `--height=${height}`, "about:blank"], { stdio: ["ignore", "ignore", "pipe"], detached: true }); // own process group: close() ends its helpers too
    const f = new Firefox(child, dir, width, height);
    try {
      await f.connect(Date.now() + timeoutMs);
    } catch (e) {
      const crashed = f.crashed;
      await f.close();
      throw Object.assign(e, { firefoxCrashed: crashed });
    }
    return f;
  }

  constructor(child, dir, width, height) {
    this.child = child;
    this.dir = dir;
    this.size = { width, height };
    this.stderr = "";
    this.id = 0;
    this.pending = new Map(); // id -> { method, ok, fail, timer }
    this.gone = null; // the Error every call fails with once Firefox or its socket is gone
    this.closing = false; // close() started: an exit from here on is ours, not a crash
    this.crashed = false; // Firefox's main process ended before close() asked it to
    child.stderr.on("data", (d) => { this.stderr = (this.stderr + d).slice(-8000); });
    // Without this, a call pending when Firefox dies never settles: node
    // then exits 13 ("unsettled top-level await") with nothing printed, or,
    // with a timer alive, waits until the test harness kills it.
    child.once("exit", (code, signal) => {
      if (!this.closing) this.crashed = true;
      this.failAll(`firefox exited (${signal ? `signal ${signal}` : `code ${code}`})${this.closing ? "" : " before it was closed"}`);
    });
  }

  /** stderrTail is the end of Firefox's stderr, for error messages. */
  stderrTail(n = 1500) {
    const t = this.stderr.trim();
    return t ? (t.length > n ? "…" + t.slice(-n) : t) : "(nothing)";
  }

  /** failAll makes every pending and every later call fail with why. */
  failAll(why) {
    if (!this.gone) this.gone = new Error(`${why}; firefox stderr: ${this.stderrTail()}`);
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.fail(new Error(`${p.method}: ${this.gone.message}`));
    }
    this.pending.clear();
  }

  async connect(deadline) {
    let m;
    while (!(m = /WebDriver BiDi listening on (ws:\/\/\S+)/.exec(this.stderr))) {
      if (Date.now() > deadline || this.child.exitCode !== null) throw new Error(`firefox did not start: ${this.stderrTail()}`);
      await sleep(100);
    }
    this.ws = new WebSocket(m[1] + "/session");
    await new Promise((ok, fail) => { this.ws.onopen = ok; this.ws.onerror = () => fail(new Error("BiDi socket failed")); });
    this.ws.onerror = null; // onclose follows and says it
    this.ws.onclose = (ev) => {
      // Give the child's exit event a moment to name the status first.
      setTimeout(() => this.failAll(`BiDi socket closed (code ${ev.code})` +
        (this.child.exitCode !== null || this.child.signalCode ? `, firefox exited (${this.child.signalCode ?? `code ${this.child.exitCode}`})` : "")), 200);
    };
    this.ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      const p = msg.id && this.pending.get(msg.id);
      if (p) {
        this.pending.delete(msg.id);
        clearTimeout(p.timer);
        if (msg.type === "error") p.fail(new Error(`${p.method}: ${msg.error}: ${msg.message}`));
        else p.ok(msg.result);
      }
    };
    await this.call("session.new", { capabilities: {} });
    const tree = await this.call("browsingContext.getTree", {});
    this.context = tree.contexts[0].context;
    await this.viewport(this.size.width, this.size.height);
  }

  /**
   * call sends one BiDi command. It fails, never hangs: on an error answer,
   * when Firefox exits or its socket closes (with the exit status and the
   * end of its stderr), or after timeoutMs without an answer.
   */
  call(method, params = {}, timeoutMs = 60_000) {
    return new Promise((ok, fail) => {
      if (this.gone) return fail(new Error(`${method}: ${this.gone.message}`));
      const i = ++this.id;
      const timer = setTimeout(() => {
        this.pending.delete(i);
        fail(new Error(`${method}: no answer from firefox within ${timeoutMs / 1000} s; firefox stderr: ${this.stderrTail()}`));
      }, timeoutMs);
      this.pending.set(i, { method, ok, fail, timer });
      try {
        this.ws.send(JSON.stringify({ id: i, method, params }));
      } catch (e) {
        this.pending.delete(i);
        clearTimeout(timer);
        fail(new Error(`${method}: send: ${e.message}`));
      }
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

  /** exec runs a script (statements, such as a library's source) in the page. */
  async exec(source) {
    const r = await this.call("script.evaluate", { expression: source, target: { context: this.context }, awaitPromise: false, resultOwnership: "none" });
    if (r.type === "exception") throw new Error(`page: ${r.exceptionDetails?.text}`);
  }

  async navigate(url) {
    await this.call("browsingContext.navigate", { context: this.context, url, wait: "complete" });
  }

  /** viewShot saves what the viewport shows (screenshot: the whole page). */
  async viewShot(path) {
    const { data } = await this.call("browsingContext.captureScreenshot", { context: this.context, origin: "viewport" });
    writeFileSync(path, Buffer.from(data, "base64"));
  }

  async screenshot(path) {
    const { data } = await this.call("browsingContext.captureScreenshot", { context: this.context, origin: "document" });
    writeFileSync(path, Buffer.from(data, "base64"));
  }

  async viewport(width, height) {
    await this.call("browsingContext.setViewport", { context: this.context, viewport: { width, height } });
  }

  async close() {
    this.closing = true;
    try {
      if (this.ws?.readyState === WebSocket.OPEN) await Promise.race([this.call("browser.close", {}, 2000), sleep(2000)]);
    } catch { /* already going */ }
    try { this.ws?.close(); } catch { /* already gone */ }
    await Promise.race([new Promise((r) => (this.child.exitCode !== null || this.child.signalCode !== null ? r() : this.child.once("exit", r))), sleep(3000)]);
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill("SIGKILL");
    try { process.kill(-this.child.pid, "SIGKILL"); } catch { /* the group is gone */ }
    this.failAll("firefox closed");
    try {
      rmSync(this.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (e) {
      console.error(`warning: ${this.dir} not removed: ${e.message}`);
    }
  }
}
