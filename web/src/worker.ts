// One sonde stream over a WebSocket, run in a Web Worker so that the
// page's rendering never delays reading or sending. Kinds: download
// (count payload, self-probe every 100 ms), upload (send a pre-filled frame
// paced by bufferedAmount, self-probe likewise), probe (echo every
// interval). Times sent back are seconds since the page's time zero.
import { FrameParser, encodeProbe, dataFrame, probeRTT, ProbeReply } from "./frames";
import { HighWater } from "./analysis";

export interface StartMsg {
  cmd: "start";
  url: string;
  kind: "download" | "upload" | "probe";
  t0: number; // page time zero, ms on the shared clock (timeOrigin + now)
  intervalMs: number; // probe cadence (probe) or self-probe cadence (load)
  frameBytes?: number; // upload frame payload
  highWater?: number; // upload: never queue more than this (bufferedAmount)
  crashAfterMs?: number; // tests: throw this long after starting
}
export type FromWorker =
  | { type: "open" }
  | { type: "count"; t_s: number; bytes: number }
  | { type: "rtt"; t_s: number; rtt_ms: number; server_ms: number }
  | { type: "self"; rtts: SelfRTT[] }
  | { type: "closed"; counts: { t_s: number; bytes: number }[]; lost: number[]; sent: number; error?: string }
  | { type: "error"; message: string };

/** A load stream's own probe (self-probe), sent to the page in batches. */
export interface SelfRTT { t_s: number; rtt_ms: number; server_ms: number }

const post = (m: FromWorker) => (self as unknown as Worker).postMessage(m);
const clock = () => performance.timeOrigin + performance.now();

let ws: WebSocket | null = null;
let t0 = 0;
const parser = new FrameParser();
const counts: { t_s: number; bytes: number }[] = [];
const outstanding = new Map<number, number>(); // seq → send time, s
let seq = 0;
let sent = 0;
let timers: ReturnType<typeof setInterval>[] = [];
let failed = "";
// Self-probe replies wait here and go to the page every 250 ms with the
// stream's count, not one message each: the page's thread wakes 4 times a
// second per stream, not 14 (it reads them only at the phase's end).
let selfRTTs: SelfRTT[] = [];
function flushSelf(): void {
  if (selfRTTs.length === 0) return;
  post({ type: "self", rtts: selfRTTs });
  selfRTTs = [];
}
let done = false;

const since = () => (clock() - t0) / 1000;

function probe(): void {
  if (!ws || ws.readyState !== WebSocket.OPEN) return;
  seq++;
  const t = since();
  outstanding.set(seq, t);
  ws.send(encodeProbe(seq, t * 1e9));
}

function onReply(r: ProbeReply, selfProbe: boolean): void {
  const recvNs = since() * 1e9;
  const sentAt = outstanding.get(r.seq);
  if (sentAt === undefined) return;
  outstanding.delete(r.seq);
  const { rttMs, serverMs } = probeRTT(r, recvNs);
  if (selfProbe) selfRTTs.push({ t_s: sentAt, rtt_ms: rttMs, server_ms: serverMs });
  else post({ type: "rtt", t_s: sentAt, rtt_ms: rttMs, server_ms: serverMs });
}

function finish(): void {
  if (done) return;
  done = true;
  for (const t of timers) clearInterval(t);
  timers = [];
  // A stream stopped by the page was counted when the stop came, as the
  // native client counts at its phase's end: what arrives during the close
  // (the tail of queued data, then nothing until the close completes) is
  // not the path's rate. A stream that ended otherwise counts to its end.
  if (!stopping) counts.push({ t_s: since(), bytes: parser.payloadBytes });
  flushSelf();
  post({ type: "closed", counts, lost: [...outstanding.values()], sent, error: failed || undefined });
}

function start(m: StartMsg): void {
  t0 = m.t0;
  if (m.crashAfterMs !== undefined) {
    setTimeout(() => { throw new Error(`simulated crash of the ${m.kind} worker (test hook)`); }, m.crashAfterMs);
  }
  ws = new WebSocket(m.url, "sonde.v1");
  ws.binaryType = "arraybuffer";
  const selfProbe = m.kind !== "probe";
  ws.onopen = () => {
    counts.push({ t_s: since(), bytes: 0 });
    post({ type: "open" });
    timers.push(setInterval(probe, m.intervalMs));
    if (m.kind === "download") {
      // Every 50 ms a count for the result (sent when the stream closes);
      // every 250 ms the latest to the page, which reads it only that
      // often: fewer wake-ups of the page while data arrives.
      let n = 0;
      timers.push(setInterval(() => {
        const c = { t_s: since(), bytes: parser.payloadBytes };
        counts.push(c);
        if (++n % 5 === 0) {
          post({ type: "count", ...c });
          flushSelf();
        }
      }, 50));
    }
    if (m.kind === "upload") {
      timers.push(setInterval(flushSelf, 250));
      upload(m.frameBytes ?? 1 << 20, m.highWater ?? 16 << 20);
    }
  };
  // The receive path: per message only the parser's count and, for a
  // probe reply, its handler (made once, not per message).
  const reply = (r: ProbeReply) => onReply(r, selfProbe);
  ws.onmessage = (ev: MessageEvent) => {
    try {
      parser.push(ev.data as ArrayBuffer, reply);
    } catch (e) {
      failed = "malformed data from the server: " + (e as Error).message;
      ws?.close(1002);
    }
  };
  ws.onerror = () => {
    if (!failed && !done) failed = "the WebSocket to the server failed";
  };
  ws.onclose = (ev: CloseEvent) => {
    if (!done && ev.code !== 1000 && !stopping && !failed) failed = `the server closed the ${m.kind} stream (code ${ev.code})`;
    finish();
  };
}

// upload keeps the socket's send queue filled with the same pre-built frame.
// WebSocket has no "buffered amount low" event, so a short timer refills
// the queue whenever it has drained below the high-water mark. The mark
// follows the measured drain rate (HighWater in analysis.ts): deep enough
// to cover a late timer at 10 Gbit/s, yet on a slow uplink only a few tens
// of ms of data, since a self-probe queues behind all of it.
function upload(frameBytes: number, maxHighWater: number): void {
  const frame = dataFrame(frameBytes);
  const hw = new HighWater(maxHighWater);
  let last = performance.now();
  let lastBuffered = 0;
  let sentSince = 0;
  const fill = () => {
    if (!ws || ws.readyState !== WebSocket.OPEN || stopping) return;
    const now = performance.now();
    hw.update(lastBuffered + sentSince - ws.bufferedAmount, now - last, ws.bufferedAmount === 0);
    last = now;
    sentSince = 0;
    while (ws.bufferedAmount < hw.bytes) {
      ws.send(frame);
      sent += frameBytes;
      sentSince += frame.length;
    }
    lastBuffered = ws.bufferedAmount;
    setTimeout(fill, 1);
  };
  fill();
}

let stopping = false;

self.onmessage = (ev: MessageEvent) => {
  const m = ev.data as StartMsg | { cmd: "stop" };
  if (m.cmd === "start") {
    try {
      start(m);
    } catch (e) {
      post({ type: "error", message: (e as Error).message });
    }
  } else if (m.cmd === "stop") {
    if (!stopping && !done) counts.push({ t_s: since(), bytes: parser.payloadBytes });
    stopping = true;
    for (const t of timers) clearInterval(t);
    timers = [];
    if (ws && ws.readyState <= WebSocket.OPEN) {
      ws.close(1000);
      // A close handshake that never completes must not hang the page.
      setTimeout(finish, 3000);
    } else finish();
  }
};
