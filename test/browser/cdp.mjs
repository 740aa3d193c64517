// A minimal DevTools-protocol driver for headless Chromium, shared by the
// end-to-end tests (run.mjs) and the benchmark (bench/browser_page.mjs).
// Needs node >= 20 with --experimental-websocket (global WebSocket).
//
// Why not playwright for runs that measure: playwright enables the Network
// domain on every page and worker, and Chromium then copies every WebSocket
// message into a DevTools event (base64). On loopback that cut the page's
// goodput about tenfold and delayed new streams' handshakes by seconds.
// This driver enables nothing: it evaluates scripts, takes screenshots and
// sets the viewport, which is all a test needs, and the page runs as it
// does for a user.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class Browser {
  /** launch starts Chromium with an empty profile; close() removes it. */
  static async launch({ exe = process.env.CHROMIUM || "/usr/bin/chromium", timeoutMs = 30_000, width = 800, height = 1000 } = {}) {
    const dir = mkdtempSync(join(tmpdir(), "sonde-chromium-"));
    const child = spawn(exe, ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
      "--disable-extensions", `--window-size=${width},${height}`, "--remote-debugging-port=0",
      `--user-data-dir=${dir}`, "about:blank"], { stdio: ["ignore", "ignore", "pipe"], detached: true }); // own process group: close() ends its helpers too
    const b = new Browser(child, dir);
    try {
      await b.connect(Date.now() + timeoutMs);
    } catch (e) {
      await b.close();
      throw e;
    }
    return b;
  }

  constructor(child, dir) {
    this.child = child;
    this.dir = dir;
    this.stderr = "";
    this.id = 0;
    this.pending = new Map();
    this.events = [];
    child.stderr.on("data", (d) => { this.stderr = (this.stderr + d).slice(-4000); });
  }

  async connect(deadline) {
    // Chromium writes its DevTools port into the profile once it listens.
    const portFile = join(this.dir, "DevToolsActivePort");
    while (!existsSync(portFile) || readFileSync(portFile, "utf8").split("\n").length < 2) {
      if (Date.now() > deadline || this.child.exitCode !== null) throw new Error(`chromium did not start: ${this.stderr}`);
      await sleep(100);
    }
    const port = readFileSync(portFile, "utf8").split("\n")[0];
    const targets = await (await fetch(`http://127.0.0.1:${port}/json/list`)).json();
    const target = targets.find((t) => t.type === "page");
    if (!target) throw new Error("chromium has no page");
    this.ws = new WebSocket(target.webSocketDebuggerUrl);
    await new Promise((ok, fail) => { this.ws.onopen = ok; this.ws.onerror = () => fail(new Error("DevTools socket failed")); });
    this.ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      if (m.id && this.pending.has(m.id)) {
        this.pending.get(m.id)(m);
        this.pending.delete(m.id);
      } else if (m.method) {
        this.events.push(m);
      }
    };
  }

  /** call sends one DevTools command and returns its result (throws its error). */
  call(method, params = {}) {
    return new Promise((ok, fail) => {
      const i = ++this.id;
      this.pending.set(i, (m) => (m.error ? fail(new Error(`${method}: ${m.error.message}`)) : ok(m.result)));
      this.ws.send(JSON.stringify({ id: i, method, params }));
    });
  }

  /** eval returns the value of a JavaScript expression in the page (awaits promises). */
  async eval(expression) {
    const r = await this.call("Runtime.evaluate", { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value;
  }

  /** waitFor polls a page expression until it is truthy; returns its value. */
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
    await this.call("Page.enable");
    await this.call("Page.navigate", { url });
    await this.waitFor(`document.readyState === "complete"`, 15_000, 100);
  }

  /** screenshot writes a full-page PNG to path. */
  async screenshot(path) {
    const { cssContentSize: s } = await this.call("Page.getLayoutMetrics");
    const { data } = await this.call("Page.captureScreenshot", { format: "png", captureBeyondViewport: true,
      clip: { x: 0, y: 0, width: Math.ceil(s.width), height: Math.ceil(s.height), scale: 1 } });
    const { writeFileSync } = await import("node:fs");
    writeFileSync(path, Buffer.from(data, "base64"));
  }

  /** viewport emulates a device width × height (CSS px), as a phone would have. */
  async viewport(width, height, mobile = false) {
    await this.call("Emulation.setDeviceMetricsOverride", { width, height, deviceScaleFactor: 1, mobile });
  }

  async close() {
    try { this.ws?.close(); } catch { /* already gone */ }
    try { process.kill(-this.child.pid, "SIGTERM"); } catch { /* already gone */ }
    await Promise.race([new Promise((r) => (this.child.exitCode !== null ? r() : this.child.once("exit", r))), sleep(3000)]);
    try { process.kill(-this.child.pid, "SIGKILL"); } catch { /* the group is gone */ }
    try {
      rmSync(this.dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (e) {
      console.error(`warning: ${this.dir} not removed: ${e.message}`);
    }
  }
}

/** viewShot writes a PNG of what the screen shows (the viewport) to path. */
export async function viewShot(b, path) {
  const { data } = await b.call("Page.captureScreenshot", { format: "png" });
  const { writeFileSync } = await import("node:fs");
  writeFileSync(path, Buffer.from(data, "base64"));
}

/** audit runs axe-core (its source axeSrc) in the page: the rules that
 * passed (an audit that checked nothing must not read as clean) and the
 * serious and critical violations. */
export async function audit(b, axeSrc) {
  if (!(await b.eval(`typeof axe !== "undefined"`))) await b.eval(axeSrc);
  return b.eval(`axe.run(document).then((r) => ({ passes: r.passes.length, violations: r.violations.filter((x) => x.impact === "serious" || x.impact === "critical").map((x) => x.id + " (" + x.impact + "): " + x.nodes.slice(0, 3).map((n) => n.target.join(" ")).join(", ")) }))`);
}
