import { test } from "node:test";
import assert from "node:assert/strict";
import { AutoStreams, limited, goodput, recentRate, summary, addedDelay, verdict, HighWater, stats, localResult } from "../src/analysis";

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

test("plain-language summary names bufferbloat with the graded added delay", () => {
  const st = (min: number, p50: number) => ({ n: 10, min, p50, mean: p50 });
  const letter = (added: number, grade: string) => ({ added_ms: added, loaded_mean_ms: added + 21, grade });
  const r = {
    baseline: { rtt_ms: st(20, 21) },
    download: { goodput_bps: 940e6, streams: 4, latency_under_load: { rtt_ms: st(25, 30) } },
    upload: { goodput_bps: 50e6, streams: 2, latency_under_load: { rtt_ms: st(300, 370) } },
    // The server's grades (mean rise over the idle mean), not the medians
    // above: the summary reads the graded figure.
    grades: { bufferbloat: { download: letter(9, "A"), upload: letter(340, "D") } },
    errors: ["upload stream u1: the server closed the upload stream (code 1006)"],
  };
  assert.equal(addedDelay(r, "upload"), 340);
  const s = summary(r).join("\n");
  assert.match(s, /Download: 940\.0 Mbit\/s over 4 streams/);
  assert.match(s, /Upload adds 340 ms of queueing delay \(mean\): bufferbloat/);
  assert.match(s, /Download adds 9\.0 ms of queueing delay \(mean\): little queueing/);
  assert.match(s, /Problem: upload stream u1/);
  assert.equal(verdict(NaN), "");
  assert.ok(Number.isNaN(addedDelay({}, "download")));
  // Without grades (the page's own result): no added-delay sentence.
  assert.doesNotMatch(summary({ ...r, grades: undefined }).join("\n"), /adds/);
});

test("upload high-water mark follows the drain rate within its bounds", () => {
  const max = 16 << 20;
  const slow = new HighWater(max);
  // 1 Mbit/s uplink: 125 bytes/ms drained; the queue must shrink to the floor.
  for (let i = 0; i < 50; i++) slow.update(125 * 10, 10, false);
  assert.equal(slow.bytes, 64 << 10);
  const fast = new HighWater(max);
  // 10 Gbit/s: 1.25 MB/ms; 40 ms of it exceeds the cap.
  for (let i = 0; i < 50; i++) fast.update(1.25e6 * 4, 4, false);
  assert.equal(fast.bytes, max);
  // 1 Gbit/s: 125 kB/ms → 5 MB.
  const mid = new HighWater(max);
  for (let i = 0; i < 50; i++) mid.update(125e3 * 4, 4, false);
  assert.ok(Math.abs(mid.bytes - 5e6) < 1e5, `${mid.bytes}`);
  // A queue found empty means the mark starved the socket: grow.
  const starved = new HighWater(max);
  starved.update(100e3, 4, false);
  const before = starved.bytes;
  assert.equal(starved.update(100e3, 4, true), Math.min(max, before * 2));
  // 1 Gbit/s with refills 60 ms apart (a busy machine's late timers):
  // the queue covers twice the wait, 15 MB, not 40 ms of data.
  const late = new HighWater(max);
  for (let i = 0; i < 50; i++) late.update(125e3 * 60, 60, false);
  assert.ok(Math.abs(late.bytes - 15e6) < 3e5, `${late.bytes}`);
  // Punctual again: the queue shrinks back towards 40 ms of data.
  for (let i = 0; i < 200; i++) late.update(125e3 * 4, 4, false);
  assert.ok(Math.abs(late.bytes - 5e6) < 1e5, `${late.bytes}`);
  // A starved interval does not lower the rate.
  const st = new HighWater(max);
  for (let i = 0; i < 50; i++) st.update(125e3 * 4, 4, false);
  st.update(10e3, 4, true);
  assert.ok(st.bytes >= 5e6 - 1e5, `${st.bytes}`);
});

test("stats interpolate quantiles", () => {
  const s = stats([4, 1, 3, 2, NaN]);
  assert.deepEqual(s, { n: 4, min: 1, p10: 1.3, p50: 2.5, p90: 3.7, max: 4, mean: 2.5 });
  assert.equal(stats([]).n, 0);
});

test("local result keeps the page's own figures when the server is gone", () => {
  const body = {
    baseline: { samples: [{ t_s: 0.1, rtt_ms: 10 }, { t_s: 0.2, rtt_ms: 12 }], lost: 0 },
    download: {
      start_s: 1, end_s: 3, tags: ["d0", "d1"],
      counts: { d0: [{ t_s: 1, bytes: 0 }, { t_s: 3, bytes: 100e6 }], d1: [{ t_s: 1.5, bytes: 0 }, { t_s: 2, bytes: 25e6 }] },
      latency: { samples: [{ t_s: 2, rtt_ms: 50 }], lost: 1 },
    },
  };
  const r = localResult("abc", body, ["download stream d0: the server closed the download stream (code 1006)"]);
  assert.equal(r.partial, true);
  assert.equal(r.baseline?.rtt_ms.min, 10);
  assert.equal(r.download?.goodput_bps, (125e6 * 8) / 2);
  assert.equal(r.download?.streams, 2);
  assert.equal(r.download?.latency_under_load?.rtt_ms.p50, 50);
  assert.equal(r.upload, undefined);
  assert.equal(r.browser_measurements, body);
  assert.equal(r.errors.length, 1);
  // The summary reads it like a full result.
  assert.ok(summary(r as any).some((l) => l.startsWith("Download: 500.0 Mbit/s over 2 streams")));
  // Upload goodput comes from the server's counts seen on /live.
  const u = localResult("x", { upload: { start_s: 0, end_s: 2, tags: ["u0"], live_counts: [{ t_s: 0, bytes: 0 }, { t_s: 2, bytes: 250e6 }] } }, []);
  assert.equal(u.upload?.goodput_bps, 1e9);
});

test("summary does not call browser-side delay bufferbloat", () => {
  const base = { baseline: { rtt_ms: { n: 20, min: 1, p50: 1, mean: 1 } }, grades: { bufferbloat: { download: { added_ms: 3000, loaded_mean_ms: 3001, grade: "F" } } } };
  const dl = { goodput_bps: 1e9, streams: 2, latency_under_load: { rtt_ms: { n: 50, min: 1, p50: 3001, mean: 3001 } } };
  const plain = summary({ ...base, download: dl });
  assert.ok(plain.some((l) => l.includes("adds 3000 ms of queueing delay (mean): bufferbloat")));
  const noted = summary({ ...base, download: dl, notes: ["download: the page's RTT under load (median 3001 ms) is far above …"] });
  assert.ok(noted.some((l) => l.startsWith("Download latency under load: most of the 3000 ms")), noted.join("\n"));
  assert.ok(!noted.some((l) => l.includes("bufferbloat")));
});

test("summary says when the download was held back by the browser, not the network", () => {
  const dl = (bottleneck: string) => ({ goodput_bps: 3e9, streams: 4, rfc6349: { bottleneck } });
  const limited = summary({ download: dl("receiver window") });
  assert.ok(limited.some((l) => l.startsWith("Download was limited by this device, not the network")), limited.join("\n"));
  assert.ok(summary({ download: dl("sender buffer") }).some((l) => l.startsWith("Download was limited by the server's send buffer")));
  for (const b of ["network", "unknown", ""]) {
    assert.ok(!summary({ download: dl(b) }).some((l) => l.includes("was limited by")), b);
  }
  // An upload carries no verdict of the browser's socket.
  assert.ok(!summary({ upload: dl("receiver window") }).some((l) => l.includes("was limited by")));
});
