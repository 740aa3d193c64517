import { test } from "node:test";
import assert from "node:assert/strict";
import { FleetReport, fleetQuery, groupTable, monitorTable, sortRows, upstreamLines } from "../src/fleet-data";

const rep: FleetReport = {
  schema: "sonde.fleet/v1",
  profiles: [{ name: "voip" }],
  monitors: [
    { name: "b", labels: { region: "n", isp: "x" }, sent: 1000, lost: 10, verdicts: [{ profile: "voip", verdict: "FAIL", whole: { r: 0.99, sent: 1000 } }],
      cause: "upstream", line: { count: 0, seconds: 0 }, upstream: { count: 1, seconds: 60 }, worst_grade: "C" },
  ],
  upstream: [{ start_ns: 1767225720e9, end_ns: 1767225840e9, monitors: ["a", "b"], rule: "≥ 50 % of isp=x (2 of 2)" }],
  source: "0 hourly aggregates, 10 minute rollups",
};

test("fleet query string", () => {
  assert.equal(fleetQuery("7d", "  isp=a  region=n "), "since=7d&label=isp%3Da&label=region%3Dn");
  assert.equal(fleetQuery("24h", ""), "since=24h");
});

test("monitor table", () => {
  const t = monitorTable(rep, "7d");
  assert.deepEqual(t.head, ["monitor", "labels", "probes", "loss %", "median ms", "p99 ms", "voip", "line outages", "upstream outages", "cause", "worst grade"]);
  assert.deepEqual(t.rows[0].map((c) => c.text), ["b", "isp=x region=n", "1,000", "1.000", "no answer", "no answer", "FAIL 99.00", "0", "1 (1 min)", "upstream", "C"]);
  assert.equal(t.rows[0][0].href, "report?monitor=b&since=7d");
  assert.equal(t.rows[0][6].cls, "bad");
});

test("group table and sorting by a figure", () => {
  const r2: FleetReport = { ...rep, groups: [
    { label: "isp", value: "x", monitors: 2, sent: 2000, lost: 30, verdicts: [{ profile: "voip", verdict: "FAIL", whole: { r: 0.985, sent: 2000 } }], failing: [1] },
    { label: "region", value: "n", monitors: 3, sent: 3000, lost: 3, verdicts: [{ profile: "voip", verdict: "PASS", whole: { r: 0.999, sent: 3000 } }], failing: [0] },
  ] };
  const t = groupTable(r2);
  assert.deepEqual(t.rows[0].map((c) => c.text), ["isp=x", "2", "2,000", "1.500", "FAIL 98.50 (1 failing)"]);
  assert.deepEqual(sortRows(t.rows, 3, true).map((r) => r[0].text), ["region=n", "isp=x"]);
  assert.deepEqual(sortRows(t.rows, 3, false).map((r) => r[0].text), ["isp=x", "region=n"]);
  assert.deepEqual(sortRows(t.rows, 0, true).map((r) => r[0].text), ["isp=x", "region=n"]);
});

test("upstream lines", () => {
  assert.deepEqual(upstreamLines(rep), ["2026-01-01 00:02 UTC, 2 min, 2 monitors (whole links; ≥ 50 % of isp=x (2 of 2)): a, b"]);
});
