import { test } from "node:test";
import assert from "node:assert/strict";
import { alertLine, chartData, clockNote, ms, pct, rel, when } from "../src/monitor-data";

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

test("chartData aligns streams on one time axis with gaps as null", () => {
  const m = 60e9;
  const d = chartData({
    now_ns: 3 * m, thresholds_ms: [200],
    streams: [
      { name: "a", r10: [], points: [{ start_ns: 0, sent: 600, lost: 6, p50_ms: 19, p99_ms: 25 }, { start_ns: m, sent: 600, lost: 600, p50_ms: -1, p99_ms: -1 }] },
      { name: "b", r10: [], points: [{ start_ns: m, sent: 0, lost: 0, p50_ms: -1, p99_ms: -1 }, { start_ns: 2 * m, sent: 300, lost: 0, p50_ms: 430, p99_ms: 470, partial: true }] },
    ],
  });
  assert.deepEqual(d.x, [0, 60, 120]);
  assert.deepEqual(d.p50, [[19, null, null], [null, null, 430]]);
  assert.deepEqual(d.p99, [[25, null, null], [null, null, 470]]);
  assert.deepEqual(d.loss, [[1, 100, null], [null, null, 0]]);
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
