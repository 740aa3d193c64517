// The servers the page can test against (docs/browser.md, "Servers"): this
// server's list of other sonde servers in LibreSpeed's server-list format
// (GET /sonde/v1/servers), and the nearest by latency when asked. A
// listed server must name this page's origin in its --cors-origins; the
// page sends it no token and no cookie.

export interface ListEntry { id?: number; name: string; server: string }
export interface Choice { name: string; origin: string; rttMs?: number; error?: string }

const MAX_SERVERS = 1000; // the server's bound too (librespeed.MaxServers)
export const PING_TRIES = 3;
const PING_TIMEOUT_MS = 2000;
const PING_PARALLEL = 6;

/**
 * choices resolves a list's entries against the page's URL (a
 * scheme-relative "//host:port/" takes the page's scheme) into origins,
 * skipping what is not http(s) or repeats an origin; "" is this server.
 */
export function choices(list: unknown, page: string): Choice[] {
  const self = new URL(page).origin;
  const out: Choice[] = [{ name: "This server", origin: "" }];
  if (!Array.isArray(list)) return out;
  const seen = new Set([self]);
  for (const e of list.slice(0, MAX_SERVERS) as ListEntry[]) {
    if (!e || typeof e.name !== "string" || typeof e.server !== "string") continue;
    let u: URL;
    try { u = new URL(e.server, page); } catch { continue; }
    if ((u.protocol !== "http:" && u.protocol !== "https:") || seen.has(u.origin)) continue;
    seen.add(u.origin);
    out.push({ name: e.name.slice(0, 80), origin: u.origin });
  }
  return out;
}

/** nearest is the index of the choice with the lowest measured RTT, or -1. */
export function nearest(cs: Choice[]): number {
  let best = -1;
  cs.forEach((c, i) => {
    if (c.rttMs !== undefined && Number.isFinite(c.rttMs) && (best < 0 || c.rttMs < cs[best].rttMs!)) best = i;
  });
  return best;
}

/**
 * ping measures one server's round trip: the best of PING_TRIES fetches
 * of its ping, each timed from request to first response byte by the
 * browser (Resource Timing; the server allows it with Timing-Allow-Origin),
 * else from the call to the answer.
 */
async function ping(c: Choice): Promise<void> {
  let best = Infinity;
  for (let i = 0; i < PING_TRIES; i++) {
    const url = `${c.origin || location.origin}/sonde/v1/ping?nearest=${Date.now()}-${i}`;
    const abort = new AbortController();
    const t = setTimeout(() => abort.abort(), PING_TIMEOUT_MS);
    const t0 = performance.now();
    try {
      const r = await fetch(url, { cache: "no-store", credentials: "omit", signal: abort.signal });
      await r.text();
      if (!r.ok) throw new Error(`HTTP ${r.status}`);
      const wall = performance.now() - t0;
      await new Promise((res) => setTimeout(res, 0)); // the entry lands in a later task
      const e = performance.getEntriesByName(url).at(-1) as PerformanceResourceTiming | undefined;
      best = Math.min(best, e && e.responseStart > e.requestStart ? e.responseStart - e.requestStart : wall);
    } catch (err) {
      // A browser hides why a cross-origin request failed (down, or no
      // CORS for this page): one word for both.
      c.error = abort.signal.aborted ? "no answer" : "not reachable from this page";
    } finally {
      clearTimeout(t);
    }
  }
  if (Number.isFinite(best)) { c.rttMs = best; c.error = undefined; }
}

/** pingAll measures every choice, a few at a time; bounded in time by the timeouts. */
export async function pingAll(cs: Choice[]): Promise<void> {
  let next = 0;
  const worker = async () => { while (next < cs.length) await ping(cs[next++]); };
  await Promise.all(Array.from({ length: Math.min(PING_PARALLEL, cs.length) }, worker));
}
