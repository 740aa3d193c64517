import { test } from "node:test";
import assert from "node:assert/strict";
import { Report, alertLine, buckets, clockNote, eventFigures, eventTitle, lanes, lineGroups, logTicks, lossClass, ms, nines, pct, profileLines, rangeQuery, reqLabels, rel, when } from "../src/monitor-data";

test("ms, pct and rel format figures and show a dash for none", () => {
  assert.equal(ms(-1), "–");
  assert.equal(ms(3.14159), "3.14 ms");
  assert.equal(ms(19.04), "19.0 ms");
  assert.equal(ms(430.4), "430 ms");
  assert.equal(pct(-1), "–");
  assert.equal(pct(0.98), "98.00 %");
  assert.equal(rel({ l_ns: 2e8, sent: 0, ok: 0, r: 0 }), "–");
  assert.equal(rel({ l_ns: 2e8, sent: 6000, ok: 5880, r: 0.98 }), "98.00 % (5880/6000)");
});

test("when shows the date only for another day", () => {
  const now = Date.UTC(2026, 4, 16, 12, 0, 0) * 1e6;
  assert.equal(when(Date.UTC(2026, 4, 16, 9, 5, 7) * 1e6, now), "09:05:07Z");
  assert.equal(when(Date.UTC(2026, 4, 15, 23, 59, 59) * 1e6, now), "2026-05-15 23:59:59Z");
});

test("buckets lay points on the range's grid: a gap is no point, 100 % loss is a point", () => {
  const m = 60e9;
  const rep: Report = {
    from_ns: 0, to_ns: 4 * m, source: "raw", streams: [{ name: "a", target: "t", kind: "stamp" }], stats: [],
    thresholds_ns: [50e6, 5e9], profiles: [{ name: "fast", latency_ns: 5e9, reliability: 0.99 }, { name: "none", latency_ns: 7e9, reliability: 0.9 }],
    series: [{ stream: 0, bucket_ns: m, points: [
      { start_ns: 0, sent: 600, lost: 6, p50_ns: 19e6, p99_ns: 25e6, smoke_ns: [18e6, 18e6, 19e6, 19e6, 20e6, 22e6, 30e6], within: [590, 594], load: [600, 0, 0, 0, 0, 0] },
      { start_ns: 2 * m, sent: 600, lost: 600, p50_ns: 0, p99_ns: 0, within: [0, 0], load: [0, 0, 0, 600, 0, 0] },
    ] }],
  };
  const bs = buckets(rep, 0);
  assert.equal(bs.length, 4);
  assert.equal(bs[0].p?.sent, 600);
  assert.equal(bs[1].p, undefined);
  assert.equal(bs[2].p?.lost, 600);
  assert.equal(bs[3].end, 4 * m);
  assert.deepEqual(buckets(rep, 1), []);
  // R per profile: only those whose latency the report counted.
  const pl = profileLines(rep, bs);
  assert.equal(pl.length, 1);
  assert.deepEqual(pl[0].r, [0.99, null, 0, null]);
});

test("loss classes, load lanes, nines and ticks", () => {
  assert.equal(lossClass(600, 0), "l0");
  assert.equal(lossClass(600, 3), "l1");
  assert.equal(lossClass(600, 12), "l2");
  assert.equal(lossClass(600, 599), "l3");
  assert.equal(lossClass(600, 600), "lfull");
  assert.equal(lossClass(0, 0), "l0");
  // idle, loaded, up-, down-, both-saturated, unknown
  assert.deepEqual(lanes([600, 0, 0, 0, 0, 0]), { up: "idle", down: "idle" });
  assert.deepEqual(lanes([0, 0, 0, 600, 0, 0]), { up: "loaded", down: "saturated" });
  assert.deepEqual(lanes([100, 0, 400, 0, 100, 0]), { up: "saturated", down: "loaded" });
  assert.deepEqual(lanes([100, 300, 0, 0, 0, 200]), { up: "loaded", down: "loaded" });
  assert.deepEqual(lanes([100, 0, 0, 0, 0, 500]), { up: "unknown", down: "unknown" });
  assert.deepEqual(lanes(undefined), { up: "unknown", down: "unknown" });
  assert.ok(Math.abs(nines(0.99) - 2) < 1e-9);
  assert.equal(nines(1), 5);
  assert.equal(nines(0), 0);
  assert.deepEqual(logTicks(3, 120), [5, 10, 20, 50, 100]);
  assert.deepEqual(logTicks(0.04, 0.3), [0.05, 0.1, 0.2]);
});

test("the range query is bounded as the daemon bounds it", () => {
  assert.equal(rangeQuery({ span: "7d" }, 640), "span=7d&points=640");
  assert.equal(rangeQuery({ span: "1h" }, 3), "span=1h&points=10");
  assert.equal(rangeQuery({ from: 1800000000.5, to: 1800003600 }, 9999), "from=1800000000&to=1800003600&points=1500");
});

test("events: a loaded episode names its grade, added delay and buffer", () => {
  const e = { kind: "loaded", start_ns: 0, end_ns: 1200e9, stream: 0, text: "x", flags: ["down-saturated", "queue=drop-tail", "grade=C"],
    detail: { added_median_ms: 90, buffer_bits: 1.2e6, oversize: 5.3 } };
  assert.equal(eventTitle(e), "loaded C");
  assert.deepEqual(eventFigures(e), ["20 min", "grade C", "+90.0 ms median", "buffer ≈ 1200 kbit (5.3× BDP)", "queue drop-tail", "down-saturated"]);
  assert.equal(eventTitle({ kind: "outage", start_ns: 0, end_ns: 300e9, stream: -1, text: "" }), "link outage");
});

test("alertLine names the status, rule and the time that matters", () => {
  const base = { rule: "link-outage", severity: "critical", kind: "outage", labels: {}, summary: "outage of the link", value: 12, starts_ns: Date.UTC(2026, 0, 1, 10, 0, 0) * 1e6 };
  const now = Date.UTC(2026, 0, 1, 11, 0, 0) * 1e6;
  assert.equal(alertLine({ ...base, status: "firing" }, now), "10:00:00Z FIRING link-outage [critical]: outage of the link");
  assert.equal(alertLine({ ...base, status: "resolved", ends_ns: Date.UTC(2026, 0, 1, 10, 0, 12) * 1e6 }, now), "10:00:12Z RESOLVED link-outage [critical]: outage of the link");
});

test("clockNote says nothing without a step, else the count and the last one", () => {
  const now = Date.UTC(2026, 0, 1, 11, 0, 0) * 1e6;
  const st = { name: "m", started_ns: 0, now_ns: now, streams: [], store: { location: "x", healthy: true, backlog_rows: 0 }, last_events: [] };
  assert.equal(clockNote(st), "");
  assert.equal(clockNote({ ...st, clock: { steps: 0, last_step_s: 0 } }), "");
  assert.equal(clockNote({ ...st, clock: { steps: 2, last_step_s: -0.25, last_step_ns: Date.UTC(2026, 0, 1, 10, 30, 0) * 1e6 } }),
    "wall clock stepped 2× (last -0.250 s at 10:30:00Z): probe times unaffected, stored times off by it");
});

test("R(L) lines that coincide are one line, named as identical; one requirement line per reliability", () => {
  // The default profiles (5 s to 15 min) are beyond every RTT: their R
  // is the same in every interval.
  const same = [0.999, null, 1];
  assert.deepEqual(lineGroups([{ r: same }, { r: [0.9, null, 1] }, { r: [...same] }, { r: [0.9, null, 1] }, { r: [0.999, 1, 1] }]), [0, 1, 0, 1, 4]);
  assert.deepEqual(lineGroups([]), []);
  const p = (name: string, reliability: number) => ({ name, latency_ns: 1e9, reliability, source: "" });
  assert.deepEqual(reqLabels([p("price", 0.98), p("metering", 0.99), p("consumer-information", 0.99), p("electric-car", 0.995)]),
    [{ reliability: 0.98, names: ["price"] }, { reliability: 0.99, names: ["metering", "consumer-information"] }, { reliability: 0.995, names: ["electric-car"] }]);
});
