// Responsiveness probes on new connections (metrics.md §5), the page's
// counterpart of the native client's runForeign: during a load phase, fetch
// the server's ping path every 250 ms and read the new connection's TCP
// (and TLS) handshake and the request's time from Resource Timing, which
// the network stack stamps, so a busy page thread does not inflate them.
// The server answers the ping with "Connection: close", so every probe
// opens a connection of its own; a probe that reused one has no handshake
// to time and counts as failed.

/** The fields of PerformanceResourceTiming a probe reads (ms). */
export interface TimingLike {
  connectStart: number;
  connectEnd: number;
  secureConnectionStart: number;
  requestStart: number;
  responseEnd: number;
}

/** One probe's times, ms; tls only over https. */
export interface ForeignSample { tcp_ms: number; tls_ms?: number; http_ms: number }

/** The phase's probes as the server reads them (BrowserForeign). */
export interface ForeignResult { tcp_ms: number[]; tls_ms?: number[]; http_ms: number[]; failed: number }

/**
 * probeTimes reads one probe from its resource timing, or null when it
 * has no handshake (a reused connection) or no request timing.
 */
export function probeTimes(e: TimingLike): ForeignSample | null {
  if (!(e.connectEnd > e.connectStart) || !(e.requestStart > 0) || !(e.responseEnd >= e.requestStart)) return null;
  const tls = e.secureConnectionStart > 0 ? e.connectEnd - e.secureConnectionStart : undefined;
  const tcp = (tls !== undefined ? e.secureConnectionStart : e.connectEnd) - e.connectStart;
  return { tcp_ms: tcp, tls_ms: tls, http_ms: e.responseEnd - e.requestStart };
}

const PROBE_TIMEOUT_MS = 10_000;
// How long after its response a probe's timing entry may take to appear:
// browsers add entries in a later task, not before fetch resolves.
const ENTRY_WAIT_MS = 1000;

/** ForeignProbes runs probes one after another, starting one every everyMs. */
export class ForeignProbes {
  private res: ForeignResult = { tcp_ms: [], http_ms: [], failed: 0 };
  private tls: number[] = [];
  private stopped = false;
  private abort = new AbortController();
  private n = 0;
  private entries = new Map<string, TimingLike>();
  private waiting = new Map<string, (e: TimingLike) => void>();
  private observer: PerformanceObserver;

  constructor(private readonly path: string, private readonly everyMs = 250) {
    this.observer = new PerformanceObserver((list) => {
      for (const e of list.getEntries()) {
        if (!e.name.includes("?foreign=")) continue;
        const w = this.waiting.get(e.name);
        if (w) w(e as PerformanceResourceTiming);
        else this.entries.set(e.name, e as PerformanceResourceTiming);
      }
    });
    this.observer.observe({ type: "resource" });
    void this.loop();
  }

  private async loop(): Promise<void> {
    for (let next = performance.now(); !this.stopped;) {
      next += this.everyMs;
      await this.once();
      const wait = next - performance.now();
      if (wait > 0 && !this.stopped) await new Promise((r) => setTimeout(r, wait));
      else next = performance.now();
    }
  }

  /** entry resolves with url's timing entry, or null after ENTRY_WAIT_MS. */
  private entry(url: string): Promise<TimingLike | null> {
    const e = this.entries.get(url);
    if (e) {
      this.entries.delete(url);
      return Promise.resolve(e);
    }
    return new Promise((resolve) => {
      const t = setTimeout(() => { this.waiting.delete(url); resolve(null); }, ENTRY_WAIT_MS);
      this.waiting.set(url, (x) => { clearTimeout(t); this.waiting.delete(url); resolve(x); });
    });
  }

  private async once(): Promise<void> {
    const url = new URL(`${this.path}?foreign=${++this.n}`, location.href).href;
    const timeout = setTimeout(() => this.abort.abort(), PROBE_TIMEOUT_MS);
    try {
      // Without credentials the request takes its connection from a pool
      // of its own (Chromium keys sockets by privacy mode): the page's
      // other fetches leave idle keep-alive connections in the shared pool,
      // and a probe that picked one up would have no handshake to time.
      const r = await fetch(url, { cache: "no-store", credentials: "omit", signal: this.abort.signal });
      await r.text();
      const e = await this.entry(url);
      if (this.stopped) return;
      const t = r.ok && e ? probeTimes(e) : null;
      if (!t) { this.res.failed++; return; }
      this.res.tcp_ms.push(t.tcp_ms);
      this.res.http_ms.push(t.http_ms);
      if (t.tls_ms !== undefined) this.tls.push(t.tls_ms);
    } catch {
      if (!this.stopped) this.res.failed++; // a probe cut by stop() is no failure
    } finally {
      clearTimeout(timeout);
      if (this.abort.signal.aborted && !this.stopped) this.abort = new AbortController();
    }
  }

  /**
   * stop ends the probes, cutting one in flight (which then adds nothing),
   * and returns those that finished.
   */
  stop(): ForeignResult {
    this.stopped = true;
    this.abort.abort();
    this.observer.disconnect();
    const r = { tcp_ms: [...this.res.tcp_ms], http_ms: [...this.res.http_ms], failed: this.res.failed };
    return this.tls.length > 0 ? { ...r, tls_ms: [...this.tls] } : r;
  }
}
