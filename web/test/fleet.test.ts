import { test } from "node:test";
import assert from "node:assert/strict";
import { FleetReport, fleetQuery, monitorRows, upstreamLines } from "../src/fleet-data";

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

test("monitor rows", () => {
  const rows = monitorRows(rep);
  assert.deepEqual(rows.head, ["monitor", "labels", "loss %", "voip", "line outages", "upstream", "cause", "grade"]);
  assert.deepEqual(rows.body[0].map((c) => c.text), ["b", "isp=x region=n", "1.000", "FAIL 99.00", "0", "1", "upstream", "C"]);
  assert.equal(rows.body[0][3].cls, "bad");
});

test("upstream lines", () => {
  assert.deepEqual(upstreamLines(rep), ["2026-01-01 00:02 UTC, 2 min, 2 monitors (whole links; ≥ 50 % of isp=x (2 of 2)): a, b"]);
});
