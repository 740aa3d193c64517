// sonde stream frames (docs/protocol.md) as carried inside WebSocket binary
// messages: an 8-byte header (type, 3 reserved zero bytes, big-endian
// payload length) and the payload. The parser treats the messages as one
// byte stream, so a frame may span messages or share one.

export const HEADER_LEN = 8;
export const FRAME_DATA = 1;
export const FRAME_PROBE = 2;
export const FRAME_PROBE_REPLY = 3;
export const PROBE_LEN = 16;
export const PROBE_REPLY_LEN = 32;
export const MAX_PAYLOAD = 4 << 20;

export interface ProbeReply {
  seq: number;
  sentNs: number; // the page's own clock, echoed
  recvNs: number; // server clock, ns since the session started
  sendNs: number;
}

export class FrameError extends Error {}

/** Counts data payload and decodes probe replies from a stream of chunks. */
export class FrameParser {
  payloadBytes = 0;
  private hdr = new Uint8Array(HEADER_LEN);
  private hdrN = 0;
  private type = 0;
  private left = 0; // payload bytes still expected of the current frame
  private inFrame = false;
  private ctl = new Uint8Array(PROBE_REPLY_LEN);
  private ctlN = 0;

  push(chunk: ArrayBuffer | Uint8Array, onReply?: (r: ProbeReply) => void): void {
    const b = chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk);
    let i = 0;
    while (i < b.length) {
      if (!this.inFrame) {
        const k = Math.min(HEADER_LEN - this.hdrN, b.length - i);
        this.hdr.set(b.subarray(i, i + k), this.hdrN);
        this.hdrN += k;
        i += k;
        if (this.hdrN < HEADER_LEN) return;
        this.startFrame();
        if (this.left > 0) continue;
      } else if (this.type === FRAME_DATA) {
        const k = Math.min(this.left, b.length - i);
        this.payloadBytes += k;
        this.left -= k;
        i += k;
      } else {
        const k = Math.min(this.left, b.length - i);
        this.ctl.set(b.subarray(i, i + k), this.ctlN);
        this.ctlN += k;
        this.left -= k;
        i += k;
      }
      if (this.left === 0) this.endFrame(onReply);
    }
    if (this.inFrame && this.left === 0) this.endFrame(onReply);
  }

  private startFrame(): void {
    const h = this.hdr;
    const type = h[0];
    const n = new DataView(h.buffer, h.byteOffset, HEADER_LEN).getUint32(4);
    this.hdrN = 0;
    if (type < FRAME_DATA || type > FRAME_PROBE_REPLY) throw new FrameError(`unknown frame type ${type}`);
    if (h[1] | h[2] | h[3]) throw new FrameError("reserved bytes set");
    if (n > MAX_PAYLOAD) throw new FrameError(`payload ${n} bytes exceeds ${MAX_PAYLOAD}`);
    if (type === FRAME_PROBE && n !== PROBE_LEN) throw new FrameError(`probe of ${n} bytes`);
    if (type === FRAME_PROBE_REPLY && n !== PROBE_REPLY_LEN) throw new FrameError(`probe reply of ${n} bytes`);
    this.type = type;
    this.left = n;
    this.ctlN = 0;
    this.inFrame = true;
  }

  private endFrame(onReply?: (r: ProbeReply) => void): void {
    this.inFrame = false;
    if (this.type === FRAME_PROBE_REPLY && onReply) onReply(decodeProbeReply(this.ctl));
  }
}

function u64(v: DataView, off: number): number {
  return Number(v.getBigUint64(off));
}

export function decodeProbeReply(b: Uint8Array): ProbeReply {
  const v = new DataView(b.buffer, b.byteOffset, PROBE_REPLY_LEN);
  return { seq: u64(v, 0), sentNs: u64(v, 8), recvNs: u64(v, 16), sendNs: u64(v, 24) };
}

/** A complete probe frame; sentNs is the page's clock (ns since its time zero). */
export function encodeProbe(seq: number, sentNs: number): Uint8Array {
  const b = new Uint8Array(HEADER_LEN + PROBE_LEN);
  const v = new DataView(b.buffer);
  v.setUint8(0, FRAME_PROBE);
  v.setUint32(4, PROBE_LEN);
  v.setBigUint64(8, BigInt(seq));
  v.setBigUint64(16, BigInt(Math.max(0, Math.round(sentNs))));
  return b;
}

/** A complete data frame of n random payload bytes, made once and reused. */
export function dataFrame(n: number): Uint8Array {
  const b = new Uint8Array(HEADER_LEN + n);
  const v = new DataView(b.buffer);
  v.setUint8(0, FRAME_DATA);
  v.setUint32(4, n);
  // Random so that nothing on the way can compress it; getRandomValues
  // fills at most 64 KiB per call.
  for (let off = HEADER_LEN; off < b.length; off += 65536) {
    crypto.getRandomValues(b.subarray(off, Math.min(off + 65536, b.length)));
  }
  return b;
}

/** RTT of one echo in ms: (t4 − t1) − (t3 − t2), and the removed server time. */
export function probeRTT(r: ProbeReply, recvNs: number): { rttMs: number; serverMs: number } {
  const serverMs = (r.sendNs - r.recvNs) / 1e6;
  return { rttMs: (recvNs - r.sentNs) / 1e6 - serverMs, serverMs };
}
