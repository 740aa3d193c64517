import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { writeHeader, readHeader, Recorder, pump, rtcSummary, rtcReport, pairCounts, Channel, Window, HIGH, LOW, PHASE_UP, PHASE_DOWN, PHASE_ACK, HEADER, WIN_FLOOR, ACK_STALL_MS } from "../src/rtc";

// The same vectors as internal/rtcquality's Go test: page and server agree on the bytes.
const vec = JSON.parse(readFileSync("../internal/rtcquality/testdata/wire.json", "utf8"));
const hex = (b: ArrayBuffer) => Buffer.from(b).toString("hex");

test("message header matches the Go server's bytes", () => {
  const h = vec.header;
  const b = new ArrayBuffer(h.size);
  writeHeader(new DataView(b), h.phase, h.seq, h.send_ms);
  assert.equal(hex(b), h.hex);
  assert.deepEqual(readHeader(b, h.phase), [h.seq, h.send_ms]);
  assert.equal(readHeader(b, h.phase === PHASE_UP ? PHASE_DOWN : PHASE_UP), null);
  assert.equal(readHeader(b.slice(0, HEADER - 1), h.phase), null);
  assert.equal(readHeader("text" as unknown as ArrayBuffer, h.phase), null);
});

test("arrival records encode as the Go server decodes them", () => {
  const r = new Recorder();
  for (const x of vec.records) r.add(x.seq, x.send_ms, x.recv_ms);
  assert.equal(hex(r.encode()), vec.records_hex);
  // Growth past the initial buffer keeps every record.
  const big = new Recorder();
  for (let i = 0; i < 10000; i++) big.add(i, i, i + 0.5);
  const v = new DataView(big.encode());
  assert.equal(big.n, 10000);
  assert.equal(v.getUint32(20 * 9999, true), 9999);
  assert.equal(v.getFloat64(20 * 9999 + 12, true), 9999.5);
});

// A fake channel: send queues bytes; drain() empties some and fires
// bufferedamountlow when the queue crosses the threshold, as browsers do;
// ack() delivers the receiver's acknowledgement.
class FakeChannel implements Channel {
  bufferedAmount = 0;
  bufferedAmountLowThreshold = 0;
  onbufferedamountlow: ((ev: Event) => any) | null = null;
  onmessage: ((ev: MessageEvent) => any) | null = null;
  sent: [number, number][] = [];
  maxQueued = 0;
  send(data: ArrayBuffer): void {
    const h = readHeader(data, PHASE_UP);
    assert.ok(h, "a test message");
    this.sent.push(h);
    this.bufferedAmount += data.byteLength;
    this.maxQueued = Math.max(this.maxQueued, this.bufferedAmount);
  }
  drain(bytes: number): void {
    const before = this.bufferedAmount;
    this.bufferedAmount = Math.max(0, before - bytes);
    if (before > this.bufferedAmountLowThreshold && this.bufferedAmount <= this.bufferedAmountLowThreshold) this.onbufferedamountlow?.(new Event("bufferedamountlow"));
  }
  ack(next: number): void {
    const b = new ArrayBuffer(HEADER);
    writeHeader(new DataView(b), PHASE_ACK, next, 0);
    this.onmessage?.({ data: b } as MessageEvent);
  }
}

test("pump keeps a window beyond the acknowledgement and HIGH bytes queued, without timers", async () => {
  const ch = new FakeChannel();
  let t = 0;
  const done = pump(ch, PHASE_UP, 1000, 100, () => t);
  // At once: the first window (2 × WIN_FLOOR), not a timer's worth.
  assert.equal(ch.sent.length, 2 * WIN_FLOOR);
  ch.drain(ch.bufferedAmount); // queue empty, but the window is full
  assert.equal(ch.sent.length, 2 * WIN_FLOOR);
  t = 1;
  ch.ack(10); // 10 acknowledged: 10 more may go
  assert.equal(ch.sent.length, 2 * WIN_FLOOR + 10);
  ch.ack(5); // old news
  assert.equal(ch.sent.length, 2 * WIN_FLOOR + 10);
  ch.ack(1e6); // beyond what was sent: counts as everything sent
  assert.equal(ch.sent.length, 2 * WIN_FLOOR + 10 + 2 * WIN_FLOOR);
  // With acknowledgements always ahead, HIGH bounds the queue.
  for (let i = 0; i < 2000 && ch.bufferedAmount < HIGH; i++) ch.ack(ch.sent.length);
  assert.ok(ch.bufferedAmount >= HIGH && ch.maxQueued < HIGH + 1000, `queued ${ch.bufferedAmount}`);
  const n = ch.sent.length;
  ch.drain(100_000); // above LOW: no event, nothing sent
  assert.equal(ch.sent.length, n);
  ch.drain(ch.bufferedAmount - LOW); // crosses LOW: refill
  assert.ok(ch.sent.length > n);
  t = 100; // the phase's end: the next event finishes it
  ch.ack(ch.sent.length);
  const r = await done;
  assert.equal(r.sent, ch.sent.length);
  ch.sent.forEach(([seq], i) => assert.equal(seq, i));
  assert.equal(r.sendS, 0.001);
  assert.equal(ch.onbufferedamountlow, null);
  assert.equal(ch.onmessage, null);
});

test("pump sends one message after a stall without acknowledgements, ends on its guard", async () => {
  const ch = new FakeChannel();
  const r = await pump(ch, PHASE_UP, 100, 600, () => performance.now());
  // 2 × WIN_FLOOR at once, then one per ACK_STALL_MS.
  assert.ok(r.sent >= 2 * WIN_FLOOR + 1 && r.sent <= 2 * WIN_FLOOR + Math.ceil(600 / ACK_STALL_MS), `${r.sent} sent`);
  const bad = new FakeChannel();
  bad.send = () => { throw new Error("RTCDataChannel.readyState is not 'open'"); };
  await assert.rejects(pump(bad, PHASE_UP, 100, 1000, () => 0), /sending: .*not 'open'/);
});

// The same trace as TestWindow in internal/rtcquality: the window follows
// 2 × rate × minimum RTT, and loss (acknowledgements that skip) does not
// shrink it.
test("window matches the Go server's on the same trace", () => {
  for (const lossEvery of [0, 20]) {
    const w = new Window();
    const rate = 20000, rtt = 5; // messages/s, ms
    for (let i = 0; i < 4000; i++) {
      const ts = (i / rate) * 1000;
      w.sent(i, ts);
      if (lossEvery > 0 && i % lossEvery === 0) continue;
      w.acked(i + 1, ts + rtt);
    }
    const want = Math.floor(2 * rate * rtt / 1000) + WIN_FLOOR;
    assert.ok(Math.abs(w.minRTT - rtt) < 1e-9, `min RTT ${w.minRTT}`);
    assert.ok(w.size >= want * 0.9 && w.size <= want * 1.1, `loss every ${lossEvery}: window ${w.size}, want about ${want}`);
  }
});

test("report and summary show both directions' figures", () => {
  const d = (dir: string, lost: number) => ({
    direction: dir, sent: 1000, received: 1000 - lost, lost, loss_pct: lost / 10, duplicates: 0,
    goodput_bps: 80e6, messages_per_s: 9000, jitter_ms: 0.25,
    reordering: { reordered: 0, ratio_pct: 0, max_extent: 0 },
    loss_pattern: { loss_periods: lost ? 2 : 0, loss_period_length: { n: 2, mean: lost / 2, max: lost }, noticeable_loss_rate: 0 },
  });
  const r = { webrtc: { message_bytes: 1100, duration_s: 5, upload: d("upload", 0), download: d("download", 50) } };
  const s = rtcSummary(r);
  assert.equal(s.length, 2);
  assert.match(s[0], /upload.*80\.0 Mbit\/s, 0\.00 % loss, jitter 0\.25 ms/);
  assert.match(s[1], /download.*5\.00 % loss in 2 bursts \(mean 25\.0 messages\)/);
  const html = rtcReport(r);
  assert.match(html, /data-k="rtc_upload_loss">0\.00 %/);
  assert.match(html, /data-k="rtc_download_msgs">1000 \/ 950/);
  assert.equal(rtcReport({}), "");
  assert.deepEqual(rtcSummary({}), []);
});

test("datagram counts: the report shows them, the summary says when the sender's stack dropped messages", () => {
  const d = (dir: string, lossPct: number, dgLoss?: number) => ({
    direction: dir, sent: 1000, received: 1000 - lossPct * 10, lost: lossPct * 10, loss_pct: lossPct, duplicates: 0,
    goodput_bps: 20e6, messages_per_s: 2000, jitter_ms: 0.5,
    reordering: { reordered: 0, ratio_pct: 0, max_extent: 0 },
    loss_pattern: { loss_periods: 1, loss_period_length: { n: 1, mean: 1, max: 1 }, noticeable_loss_rate: 0 },
    datagrams: dgLoss === undefined ? undefined : { sent: 1200, received: Math.round(1200 * (1 - dgLoss / 100)), loss_pct: dgLoss },
  });
  const r = { webrtc: { message_bytes: 1100, duration_s: 5, upload: d("upload", 10, 5), download: d("download", 5.2, 5) } };
  const s = rtcSummary(r);
  assert.match(s[0], /The path lost 5\.00 % of the datagrams; this browser's WebRTC stack dropped the other 5\.00 % of the messages itself\./);
  assert.doesNotMatch(s[1], /dropped/); // 5.2 % against 5 %: the path's
  assert.match(rtcReport(r), /data-k="rtc_upload_datagrams">1200 \/ 1140 \(5\.00 %\)/);
  // Without counts (an older server, a browser without the stats) nothing is claimed.
  const plain = { webrtc: { message_bytes: 1100, duration_s: 5, upload: d("upload", 10) } };
  assert.doesNotMatch(rtcSummary(plain)[0], /path lost/);
  assert.match(rtcReport(plain), /data-k="rtc_upload_datagrams">–/);
});

test("pairCounts reads the transport's selected pair, else the busiest pair, else nothing", async () => {
  const report = (xs: any[]) => ({ getStats: async () => new Map(xs.map((x) => [x.id, x])) as unknown as RTCStatsReport });
  const a = { id: "A", type: "candidate-pair", packetsSent: 10, packetsReceived: 5 };
  const b = { id: "B", type: "candidate-pair", packetsSent: 3, packetsReceived: 900 };
  assert.deepEqual(await pairCounts(report([a, b, { id: "T", type: "transport", selectedCandidatePairId: "A" }])), { sent: 10, received: 5 });
  assert.deepEqual(await pairCounts(report([a, b])), { sent: 3, received: 900 });
  assert.equal(await pairCounts(report([{ id: "C", type: "candidate-pair" }])), null);
  assert.equal(await pairCounts({ getStats: async () => { throw new Error("closed"); } }), null);
});
