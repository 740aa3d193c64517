import { test } from "node:test";
import assert from "node:assert/strict";
import { AutoStreams, limited, goodput, recentRate, summary, addedDelay, verdict } from "../src/analysis";

test("auto streams grow while limited and improving, stop at the first useless stream", () => {
  const a = new AutoStreams(8);
  assert.equal(a.step(100e6, true, 2), "add");
  assert.equal(a.step(200e6, true, 3), "add");
  assert.equal(a.step(204e6, true, 4), "stop"); // +2%: no gain
  assert.equal(a.step(500e6, true, 4), "stop");
  const b = new AutoStreams(8);
  assert.equal(b.step(100e6, false, 2), "hold"); // network-limited: never add
  assert.equal(b.step(100e6, null, 2), "add"); // unknown sender state: goodput rule only
  const c = new AutoStreams(3);
  assert.equal(c.step(1e9, true, 3), "hold"); // at the limit
});

test("limited compares busy time with window and buffer limits between readings", () => {
  const prev = new Map();
  const snap = (busy: number, rwnd: number, snd: number) => [{ id: 1, kind: "download", bytes: 0, done: false, tcpinfo: { busy_time_us: busy, rwnd_limited_us: rwnd, sndbuf_limited_us: snd } }];
  assert.equal(limited(prev, snap(1000, 0, 0), "download"), false); // first reading
  assert.equal(limited(prev, snap(2000, 600, 0), "download"), true);
  assert.equal(limited(prev, snap(3000, 700, 100), "download"), false);
  assert.equal(limited(prev, snap(4000, 700, 700), "download"), true);
  assert.equal(limited(prev, snap(5000, 1200, 700), "upload"), false); // other kind ignored
});

test("rates from cumulative counts", () => {
  const c = [{ t_s: 0, bytes: 0 }, { t_s: 1, bytes: 125e6 }, { t_s: 2, bytes: 250e6 }, { t_s: 2.5, bytes: 250e6 }];
  assert.equal(goodput(c), 800e6);
  assert.equal(recentRate(c, 0.5), 0);
  assert.equal(recentRate(c, 1), (125e6 * 8) / 1.5);
  assert.equal(goodput([]), 0);
});

test("plain-language summary names bufferbloat", () => {
  const st = (min: number, p50: number) => ({ n: 10, min, p50, mean: p50 });
  const r = {
    baseline: { rtt_ms: st(20, 21) },
    download: { goodput_bps: 940e6, streams: 4, latency_under_load: { rtt_ms: st(25, 30) } },
    upload: { goodput_bps: 50e6, streams: 2, latency_under_load: { rtt_ms: st(300, 370) } },
    errors: ["upload stream u1: the server closed the upload stream (code 1006)"],
  };
  assert.equal(addedDelay(r, r.upload), 350);
  const s = summary(r).join("\n");
  assert.match(s, /Download: 940\.0 Mbit\/s over 4 streams/);
  assert.match(s, /Upload adds 350 ms of queueing delay: bufferbloat/);
  assert.match(s, /Download adds 10 ms of queueing delay: little queueing/);
  assert.match(s, /Problem: upload stream u1/);
  assert.equal(verdict(NaN), "");
  assert.ok(Number.isNaN(addedDelay({}, undefined)));
});
