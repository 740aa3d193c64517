// The WebRTC quality test (docs/browser.md): sequence-numbered, timestamped
// messages over an unordered data channel without retransmissions
// (maxRetransmits 0), so a lost message stays lost as a UDP datagram would.
// Upload, then download, each sent as fast as SCTP lets messages out:
// sending is driven by the bufferedamountlow event, never by a timer (the
// server's download also by the page's acknowledgements, a window that
// keeps it from overrunning the browser's socket buffer). The
// server counts the upload; the page records the download's arrivals and
// posts them raw, so every figure (loss, RFC 3357 loss periods, RFC 3550
// jitter, RFC 4737 reordering) comes from the server's one implementation.
import { fmtMs, fmtRate } from "./analysis";

// Wire format, shared with internal/rtcquality (analyze.go).
export const HEADER = 16;
export const RECORD = 20;
export const MAGIC = 0x53; // 'S'
export const PHASE_UP = 1;
export const PHASE_DOWN = 2;
/** The page's acknowledgement of the download: seq = one more than the highest received. */
export const PHASE_ACK = 3;
/** Acknowledge every ACK_EVERY-th arrival (the server keeps a window of 64 in flight). */
export const ACK_EVERY = 8;
export const ACK_PAUSE_MS = 5;
/** Below Chromium's SCTP packet (1191 bytes) minus headers: one message, one datagram. */
export const MESSAGE_BYTES = 1100;
/** The queue kept in the channel: refilled to HIGH whenever it falls to LOW. */
export const HIGH = 1 << 20;
export const LOW = 256 << 10;
const MAX_RECORDS = 4 << 20;

export function writeHeader(v: DataView, phase: number, seq: number, sendMs: number): void {
  v.setUint8(0, MAGIC);
  v.setUint8(1, phase);
  v.setUint16(2, 0, true);
  v.setUint32(4, seq >>> 0, true);
  v.setFloat64(8, sendMs, true);
}

/** readHeader returns [seq, send ms] of a test message of phase, or null. */
export function readHeader(b: ArrayBuffer, phase: number): [number, number] | null {
  if (!(b instanceof ArrayBuffer) || b.byteLength < HEADER) return null;
  const v = new DataView(b);
  if (v.getUint8(0) !== MAGIC || v.getUint8(1) !== phase) return null;
  return [v.getUint32(4, true), v.getFloat64(8, true)];
}

/** Recorder keeps arrivals (seq, send ms, receive ms) compactly. */
export class Recorder {
  private buf = new Float64Array(3 * 4096);
  n = 0;
  dropped = 0;

  add(seq: number, sendMs: number, recvMs: number): void {
    if (this.n >= MAX_RECORDS) { this.dropped++; return; }
    if (3 * (this.n + 1) > this.buf.length) {
      const b = new Float64Array(this.buf.length * 2);
      b.set(this.buf);
      this.buf = b;
    }
    this.buf.set([seq, sendMs, recvMs], 3 * this.n++);
  }

  /** The records as the server reads them: u32 seq, f64 send, f64 receive, little-endian. */
  encode(): ArrayBuffer {
    const out = new ArrayBuffer(RECORD * this.n);
    const v = new DataView(out);
    for (let i = 0; i < this.n; i++) {
      v.setUint32(RECORD * i, this.buf[3 * i], true);
      v.setFloat64(RECORD * i + 4, this.buf[3 * i + 1], true);
      v.setFloat64(RECORD * i + 12, this.buf[3 * i + 2], true);
    }
    return out;
  }
}

/** The part of RTCDataChannel the sender uses (a fake in the tests). */
export interface Channel {
  readonly bufferedAmount: number;
  bufferedAmountLowThreshold: number;
  onbufferedamountlow: ((this: any, ev: Event) => any) | null;
  onmessage: ((this: any, ev: MessageEvent) => any) | null;
  send(data: ArrayBuffer): void;
}

// Flow control: a port of internal/rtcquality/window.go (the same trace
// is tested on both). The receiver acknowledges (phase 3, seq = one more
// than the highest received) every ACK_EVERY-th arrival; the sender keeps at
// most size messages beyond the acknowledgement: twice the best recent
// delivery rate times the minimum RTT, plus a few. Random loss does not
// slow it (acknowledgements skip lost messages), queueing does, and it keeps
// the sender from overrunning socket buffers on either side, which would
// read as loss. Times in ms.
const RING = 1 << 16;
export const WIN_FLOOR = 16;
const WIN_MAX = RING / 2;
export const ACK_STALL_MS = 250;

export class Window {
  private sentAt = new Float64Array(RING);
  minRTT = -1;
  private rates = new Float64Array(8);
  private ri = 0;
  private lastT = -1;
  private lastAck = 0;
  size = 2 * WIN_FLOOR;
  highest = -1;

  sent(seq: number, t: number): void {
    this.sentAt[seq % RING] = t;
    this.highest = seq;
  }

  acked(next: number, t: number): void {
    if (next <= 0 || this.highest - next >= RING / 2) return;
    const rtt = t - this.sentAt[(next - 1) % RING];
    if (rtt > 0 && (this.minRTT < 0 || rtt < this.minRTT)) this.minRTT = rtt;
    const gap = Math.max(4 * this.minRTT, 10);
    if (this.lastT < 0) {
      this.lastT = t;
      this.lastAck = next;
      return;
    }
    const d = t - this.lastT;
    if (d >= gap) {
      this.rates[this.ri++ % this.rates.length] = (next - this.lastAck) / (d / 1000);
      this.lastT = t;
      this.lastAck = next;
      const best = Math.max(...this.rates);
      this.size = Math.min(Math.max(Math.floor((2 * best * this.minRTT) / 1000) + WIN_FLOOR, WIN_FLOOR), WIN_MAX);
    }
  }
}

/**
 * pump sends size-byte test messages for durationMs: it fills the channel's
 * queue (up to HIGH bytes, and up to the window beyond the receiver's
 * acknowledgement) and refills it on each bufferedamountlow event and each
 * acknowledgement, so the pace is whatever the path and the receiver take.
 * Timers only guard: one ends the phase if the channel stalls, another
 * sends one message when no acknowledgement came for ACK_STALL_MS.
 */
export function pump(ch: Channel, phase: number, size: number, durationMs: number, now: () => number): Promise<{ sent: number; sendS: number }> {
  return new Promise((resolve, reject) => {
    const msg = new ArrayBuffer(size);
    const view = new DataView(msg);
    const win = new Window();
    const t0 = now();
    let seq = 0, last = t0, over = false, ackNext = 0, lastAckT = t0;
    const finish = (err?: Error) => {
      if (over) return;
      over = true;
      ch.onbufferedamountlow = null;
      ch.onmessage = null;
      clearTimeout(guard);
      clearInterval(stall);
      if (err) reject(err);
      else resolve({ sent: seq, sendS: (last - t0) / 1000 });
    };
    const fill = () => {
      try {
        while (!over && ch.bufferedAmount < HIGH && seq - ackNext < win.size) {
          const t = now();
          if (t - t0 >= durationMs) return finish();
          writeHeader(view, phase, seq, t);
          win.sent(seq, t);
          ch.send(msg); // send copies the bytes, so one buffer serves all
          seq++;
          last = t;
        }
        if (!over && now() - t0 >= durationMs) finish();
      } catch (e) {
        finish(new Error(`sending: ${(e as Error).message}`));
      }
    };
    ch.onmessage = (ev: MessageEvent) => {
      const h = readHeader(ev.data, PHASE_ACK);
      if (!h || h[0] <= ackNext) return;
      const t = now();
      ackNext = Math.min(h[0], seq); // never beyond what was sent
      lastAckT = t;
      win.acked(ackNext, t);
      fill();
    };
    ch.bufferedAmountLowThreshold = LOW;
    ch.onbufferedamountlow = fill;
    const guard = setTimeout(() => finish(), durationMs + 100);
    const stall = setInterval(() => {
      if (now() - lastAckT > ACK_STALL_MS && seq - ackNext >= win.size) {
        ackNext = Math.max(ackNext, seq - win.size + 1);
        lastAckT = now();
        fill();
      }
    }, ACK_STALL_MS);
    fill();
  });
}

/** drained resolves once the channel's queue is empty, or after maxMs. */
function drained(ch: Channel, maxMs: number): Promise<void> {
  if (ch.bufferedAmount === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => { clearTimeout(t); ch.onbufferedamountlow = null; resolve(); };
    const t = setTimeout(done, maxMs);
    ch.bufferedAmountLowThreshold = 0;
    ch.onbufferedamountlow = done;
  });
}

interface Ctl { op: string; dir?: string; sent?: number; send_s?: number; error?: string; result?: unknown }

/** CtlQueue hands out the server's control messages in order. */
class CtlQueue {
  private q: Ctl[] = [];
  private waiter?: (m: Ctl) => void;
  private failure?: string;

  constructor(ch: RTCDataChannel, pc: RTCPeerConnection) {
    ch.onmessage = (ev) => {
      let m: Ctl;
      try { m = JSON.parse(String(ev.data)); } catch { return; }
      this.q.push(m);
      this.flush();
    };
    const broken = (why: string) => { this.failure ??= why; this.flush(); };
    ch.onclose = () => broken("the control channel closed");
    pc.addEventListener("connectionstatechange", () => {
      if (pc.connectionState === "failed" || pc.connectionState === "closed") broken(`the connection ${pc.connectionState} (server gone?)`);
    });
  }

  private flush(): void {
    if (!this.waiter) return;
    if (this.q.length) this.waiter(this.q.shift()!);
    else if (this.failure) this.waiter({ op: "error", error: this.failure });
  }

  /** next waits for message op, failing on an error message or after ms. */
  next(op: string, ms: number, what = ""): Promise<Ctl> {
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => { this.waiter = undefined; reject(new Error(`no "${op}" from the server within ${(ms / 1000).toFixed(0)} s${what ? ` (${what})` : ""}`)); }, ms);
      this.waiter = (m) => {
        clearTimeout(t);
        this.waiter = undefined;
        if (m.op === op) resolve(m);
        else reject(new Error(m.error ? `server: ${m.error}` : `unexpected "${m.op}" from the server`));
      };
      this.flush();
    });
  }
}

/** connected resolves when both channels are open; rejects on ICE failure or after ms. */
function connected(pc: RTCPeerConnection, chans: RTCDataChannel[], ms: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no connection within ${ms / 1000} s (ICE state ${pc.iceConnectionState}: UDP to the server blocked?)`)), ms);
    const check = () => {
      if (pc.iceConnectionState === "failed" || pc.connectionState === "failed") {
        clearTimeout(t);
        reject(new Error("ICE failed: no UDP path to the server (blocked by a firewall or the browser's WebRTC policy?)"));
      } else if (chans.every((c) => c.readyState === "open")) {
        clearTimeout(t);
        resolve();
      }
    };
    pc.addEventListener("iceconnectionstatechange", check);
    pc.addEventListener("connectionstatechange", check);
    for (const c of chans) c.addEventListener("open", check);
    check();
  });
}

/** gathered resolves when ICE gathering completes, or after ms with what there is. */
function gathered(pc: RTCPeerConnection, ms: number): Promise<void> {
  if (pc.iceGatheringState === "complete") return Promise.resolve();
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    pc.addEventListener("icegatheringstatechange", () => {
      if (pc.iceGatheringState === "complete") { clearTimeout(t); resolve(); }
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * pairCounts reads the datagrams sent and received on the ICE candidate
 * pair in use (the transport's selected pair, else the one that carried
 * the most), or null when the browser does not say. The server joins them
 * with its own counts: the path's datagram loss beside the message loss.
 */
export async function pairCounts(pc: { getStats(): Promise<RTCStatsReport> }): Promise<{ sent: number; received: number } | null> {
  try {
    const byId = new Map<string, any>();
    (await pc.getStats()).forEach((v: any) => byId.set(v.id, v));
    let pair: any = null;
    for (const v of byId.values()) {
      if (v.type === "transport" && v.selectedCandidatePairId) pair = byId.get(v.selectedCandidatePairId) ?? pair;
    }
    if (!pair) {
      for (const v of byId.values()) {
        if (v.type === "candidate-pair" && (!pair || v.packetsSent + v.packetsReceived > pair.packetsSent + pair.packetsReceived)) pair = v;
      }
    }
    if (!pair || typeof pair.packetsSent !== "number" || typeof pair.packetsReceived !== "number") return null;
    return { sent: pair.packetsSent, received: pair.packetsReceived };
  } catch {
    return null;
  }
}

export interface RTCOptions { durationS: number; size?: number; connectMs?: number; status?: (s: string) => void }

/**
 * runRTCQuality runs the test in the session at base (…/sessions/{id}).
 * It never throws: error says what failed ("WebRTC quality test failed:
 * …"), and result is the server's WebRTC result when it got that far (the
 * server also keeps what it measured for the session's result).
 */
export async function runRTCQuality(base: string, o: RTCOptions): Promise<{ result?: unknown; error?: string }> {
  const size = o.size ?? MESSAGE_BYTES;
  const status = o.status ?? (() => {});
  const fail = (why: string) => ({ error: `WebRTC quality test failed: ${why}` });
  if (typeof RTCPeerConnection === "undefined") return fail("this browser has no RTCPeerConnection (WebRTC disabled or not supported)");
  let pc: RTCPeerConnection;
  try {
    pc = new RTCPeerConnection({ iceServers: [] });
  } catch (e) {
    return fail(`cannot create a peer connection: ${(e as Error).message}`);
  }
  const now = () => performance.now();
  try {
    status("WebRTC quality test: connecting…");
    const ctl = pc.createDataChannel("ctl");
    const data = pc.createDataChannel("data", { ordered: false, maxRetransmits: 0 });
    data.binaryType = "arraybuffer";
    const ctlq = new CtlQueue(ctl, pc);
    await pc.setLocalDescription(await pc.createOffer());
    await gathered(pc, 3000);
    const r = await fetch(`${base}/webrtc`, { method: "POST", body: JSON.stringify({ type: "offer", sdp: pc.localDescription!.sdp }) });
    const ans = await r.json().catch(() => ({}));
    if (!r.ok) throw new Error(`server: ${ans.error ?? `HTTP ${r.status}`}`);
    await pc.setRemoteDescription(ans);
    await connected(pc, [ctl, data], o.connectMs ?? 10000);

    status("WebRTC quality test: upload…");
    ctl.send(JSON.stringify({ op: "start", dir: "upload", duration_s: o.durationS, size }));
    await ctlq.next("ready", 15000, "upload");
    const up0 = await pairCounts(pc);
    const up = await pump(data, PHASE_UP, size, o.durationS * 1000, now);
    await drained(data, 2000);
    const up1 = await pairCounts(pc);
    const upDatagrams = up0 && up1 ? up1.sent - up0.sent : undefined;
    ctl.send(JSON.stringify({ op: "end", dir: "upload", sent: up.sent, send_s: up.sendS, datagrams: upDatagrams }));
    await ctlq.next("done", 30000, "upload");

    status("WebRTC quality test: download…");
    const rec = new Recorder();
    const ack = new ArrayBuffer(HEADER), ackView = new DataView(ack);
    let next = 0, lastAck = 0;
    data.onmessage = (ev: MessageEvent) => {
      const t = now();
      const h = readHeader(ev.data, PHASE_DOWN);
      if (!h) return;
      rec.add(h[0], h[1], t);
      next = Math.max(next, h[0] + 1);
      // Every ACK_EVERY-th arrival, and the first after a pause (the
      // server's probe after a lost window).
      if (rec.n % ACK_EVERY === 0 || t - lastAck > ACK_PAUSE_MS) {
        lastAck = t;
        writeHeader(ackView, PHASE_ACK, next, t);
        data.send(ack);
      }
    };
    const down0 = await pairCounts(pc);
    ctl.send(JSON.stringify({ op: "start", dir: "download", duration_s: o.durationS, size }));
    await ctlq.next("ready", 15000, "download");
    await ctlq.next("end", o.durationS * 1000 + 10000, "download");
    await sleep(500); // stragglers behind the server's "end"
    data.onmessage = null;
    const down1 = await pairCounts(pc);
    const q = down0 && down1 ? `?datagrams=${down1.received - down0.received}` : "";
    const rr = await fetch(`${base}/webrtc/records${q}`, { method: "POST", body: rec.encode(), headers: { "Content-Type": "application/octet-stream" } });
    const result = await rr.json().catch(() => ({}));
    if (!rr.ok) throw new Error(`server: ${result.error ?? `HTTP ${rr.status}`}`);
    return { result };
  } catch (e) {
    return fail((e as Error).message);
  } finally {
    pc.close();
  }
}

interface Stats { n: number; mean: number; max: number }
export interface RTCDir {
  direction: string; sent: number; received: number; lost: number; loss_pct: number; duplicates: number;
  goodput_bps: number; messages_per_s: number; jitter_ms: number;
  reordering: { reordered: number; ratio_pct: number; max_extent: number };
  loss_pattern: { loss_periods: number; loss_period_length: Stats; noticeable_loss_rate: number };
  datagrams?: { sent: number; received: number; loss_pct: number };
}
export interface RTCResult { message_bytes: number; duration_s: number; candidate_pair?: string; upload?: RTCDir; download?: RTCDir; errors?: string[] }

const pct = (x: number) => (Number.isFinite(x) ? `${x.toFixed(x > 0 && x < 0.1 ? 3 : 2)} %` : "–");

/** rtcSummary is the test's plain-language lines for the summary. */
export function rtcSummary(r: { webrtc?: RTCResult }): string[] {
  const w = r.webrtc;
  if (!w) return [];
  const out: string[] = [];
  for (const d of [w.upload, w.download]) {
    if (!d) continue;
    const name = d.direction === "upload" ? "upload" : "download";
    const bursts = d.loss_pattern.loss_periods > 0 ? ` in ${d.loss_pattern.loss_periods} burst${d.loss_pattern.loss_periods === 1 ? "" : "s"} (mean ${d.loss_pattern.loss_period_length.mean.toFixed(1)} messages)` : "";
    out.push(`WebRTC data channel ${name} (UDP-like, no retransmissions): ${fmtRate(d.goodput_bps)}, ${pct(d.loss_pct)} loss${bursts}, jitter ${fmtMs(d.jitter_ms)}, ${pct(d.reordering.ratio_pct)} reordered.${stackLoss(d)}`);
  }
  return out;
}

/**
 * stackLoss says when the messages lost clearly exceed the datagrams the
 * path lost: the sender's own WebRTC stack dropped the rest (Chromium's
 * SCTP does under loss), which is not the network's doing.
 */
export function stackLoss(d: RTCDir): string {
  const g = d.datagrams;
  if (!g || d.loss_pct - g.loss_pct < Math.max(1, 0.2 * g.loss_pct)) return "";
  const sender = d.direction === "upload" ? "this browser's" : "the server's";
  return ` The path lost ${pct(g.loss_pct)} of the datagrams; ${sender} WebRTC stack dropped the other ${pct(d.loss_pct - g.loss_pct)} of the messages itself.`;
}

function esc(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}

/** rtcReport is the test's section of the report (empty without a result). */
export function rtcReport(r: { webrtc?: RTCResult }): string {
  const w = r.webrtc;
  if (!w || (!w.upload && !w.download)) return "";
  const dirs = [w.upload, w.download].filter((d): d is RTCDir => !!d);
  const row = (k: string, id: string, f: (d: RTCDir) => string) =>
    `<tr><th>${k}</th>${dirs.map((d) => `<td data-k="rtc_${d.direction}_${id}">${esc(f(d))}</td>`).join("")}</tr>`;
  return `<section class="dir" id="webrtc"><h2>WebRTC quality (data channel, ${w.message_bytes}-byte messages, unordered, no retransmissions)</h2><table>` +
    `<tr><th></th>${dirs.map((d) => `<th>${d.direction === "upload" ? "upload (you → server)" : "download (server → you)"}</th>`).join("")}</tr>` +
    row("messages sent / received", "msgs", (d) => `${d.sent} / ${d.received}`) +
    row("loss", "loss", (d) => pct(d.loss_pct)) +
    row("datagrams sent / received (path loss)", "datagrams", (d) => d.datagrams ? `${d.datagrams.sent} / ${d.datagrams.received} (${pct(d.datagrams.loss_pct)})` : "–") +
    row("loss periods (RFC 3357)", "periods", (d) => d.loss_pattern.loss_periods > 0 ? `${d.loss_pattern.loss_periods}, mean ${d.loss_pattern.loss_period_length.mean.toFixed(1)}, max ${d.loss_pattern.loss_period_length.max} messages` : "0") +
    row("jitter (RFC 3550)", "jitter", (d) => fmtMs(d.jitter_ms)) +
    row("reordered (RFC 4737)", "reordered", (d) => `${pct(d.reordering.ratio_pct)}${d.reordering.reordered ? `, max extent ${d.reordering.max_extent}` : ""}`) +
    row("duplicates", "dups", (d) => String(d.duplicates)) +
    row("goodput", "goodput", (d) => fmtRate(d.goodput_bps)) +
    row("messages per second", "rate", (d) => d.messages_per_s.toFixed(0)) +
    `</table>${w.candidate_pair ? `<p class="note">ICE pair (server side): ${esc(w.candidate_pair)}</p>` : ""}</section>`;
}
