import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { headline, bandsText, gradeTone } from "../src/headline";
import { trendSVG, compareTable, PastRow } from "../src/past";

// The page's bundle budget: everything the test page loads, gzipped, in
// bytes (docs/browser.md). Measured 43.2 kB when set; raise it only with a
// reason in the commit.
const BUDGET = 50_000;

test("the test page's files fit the bundle budget", () => {
  const files = ["index.html", "app.js", "worker.js", "style.css", "uplot.css"];
  const total = files.reduce((n, f) => n + gzipSync(readFileSync(`dist/${f}`), { level: 9 }).length, 0);
  assert.ok(total <= BUDGET, `page is ${total} bytes gzipped, budget ${BUDGET}`);
  // No fetch beyond the server: no absolute URL to another origin.
  for (const f of files) assert.doesNotMatch(readFileSync(`dist/${f}`, "utf8"), /(src|href)=["']https?:\/\//, f);
});

const band = [{ name: "A+", below: 5 }, { name: "A", below: 30 }, { name: "F" }];
const result = {
  baseline: { rtt_ms: { n: 20, min: 9, p50: 10, mean: 10.5 } },
  download: { goodput_bps: 250e6, latency_under_load: { rtt_ms: { n: 40, min: 10, p50: 45, mean: 50 } } },
  upload: { goodput_bps: 20e6, latency_under_load: { rtt_ms: { n: 40, min: 10, p50: 210, mean: 220 } } },
  grades: {
    bufferbloat: { idle_mean_ms: 10.5, download: { added_ms: 39.5, loaded_mean_ms: 50, grade: "B" }, upload: { added_ms: 209.5, loaded_mean_ms: 220, grade: "D" },
      overall: { added_ms: 124.5, loaded_mean_ms: 135, grade: "C" }, thresholds_ms: band },
    responsiveness: [{ direction: "download", rpm: 850, band: "Fair", thresholds: band, apple_style: "Medium", apple_style_thresholds: band }],
    use_cases: [{ name: "gaming", points: 5, class: "poor", cutoffs: [5, 15, 25, 30], classes: ["bad", "poor", "average", "good", "great"],
      inputs: [{ metric: "jitter", value: 1.5, unit: "ms", measured: true, points: 10, thresholds: [10], points_table: [10, 5] },
        { metric: "packet_loss", value: 0, unit: "ratio", measured: false, points: 0, thresholds: [0.01], points_table: [10, 5] }] }],
    limit: "The download is limited by the network path.",
  },
};

test("the first screen shows every figure and grade of the result, none NaN", () => {
  const h = headline(result);
  for (const k of ["down", "up", "idle", "loaded_down", "loaded_up", "bufferbloat", "rpm_download", "uc_gaming", "jitter"]) {
    assert.match(h, new RegExp(`data-k="${k}"`), k);
  }
  assert.doesNotMatch(h, /NaN|undefined|>--</);
  assert.match(h, /data-k="up">20.0</);
  // The added delay is the graded one (mean rise, 209.5 ms), not the
  // loaded median minus the idle median (200 ms): the card, the grade's
  // table and the limit sentence show one number.
  assert.match(h, /data-k="loaded_up">\+210</);
  assert.match(h, /<td>\+210 ms<\/td><td>D<\/td>/);
  assert.match(h, /download B · upload D/);
  assert.match(h, /limited by the network path/);
  // Loss not measured: no loss figure, and the grade says so.
  assert.doesNotMatch(h, /data-k="loss"/);
  assert.match(h, /not measured/);
  // Each grade opens onto its thresholds.
  assert.match(h, /<details class="grade tone-fair">/);
  assert.match(h, /A\+ &lt; 5, A &lt; 30, F ≥ 30 ms added/);
});

test("a result without grades still shows its figures", () => {
  const h = headline({ download: { goodput_bps: 1e9 } });
  // No grade: the loaded round trip itself, not an added delay computed here.
  const u = headline({ baseline: result.baseline, upload: result.upload });
  assert.match(u, /data-k="loaded_up">210</);
  assert.match(u, /median round trip under load/);
  assert.match(h, /data-k="down">1.00</);
  assert.doesNotMatch(h, /class="grades"/);
});

test("scales read as people know them", () => {
  assert.equal(bandsText(band, "ms"), "A+ < 5, A < 30, F ≥ 30 ms");
  assert.equal(gradeTone("A+"), "good");
  assert.equal(gradeTone("C"), "fair");
  assert.equal(gradeTone("F"), "bad");
});

const row = (id: string, start: string, d: number, u: number): PastRow => ({ id, start, software: "", download_bps: d, upload_bps: u, idle_rtt_ms: 10, loaded_rtt_ms: 40, errors: 0 });

test("history trend and comparison", () => {
  assert.equal(trendSVG([row("a", "2026-01-01T00:00:00Z", 1e8, 1e7)]), "", "one result has no trend");
  const svg = trendSVG([row("b", "2026-01-02T00:00:00Z", 2e8, 2e7), row("a", "2026-01-01T00:00:00Z", 1e8, 1e7)]);
  assert.match(svg, /<desc id="trend-d">Download 100.0 Mbit\/s, 200.0 Mbit\/s; upload 10.0 Mbit\/s, 20.0 Mbit\/s, oldest first.<\/desc>/);
  const c = compareTable(row("a", "2026-01-01T00:00:00Z", 1e8, 1e7), row("b", "2026-01-02T00:00:00Z", 2e8, 2e7));
  assert.match(c, /<td>\+100.0 Mbit\/s<\/td>/);
});

test("latency distributions per phase and one-way delays, with their text equivalents", async () => {
  const { latencyBoxes, oneWay } = await import("../src/detail");
  const s = (p50: number) => ({ n: 30, min: p50 - 2, p10: p50 - 1, p50, p90: p50 + 5, p99: p50 + 9 });
  const h = latencyBoxes({ baseline: { rtt_ms: s(10) }, download: { latency_under_load: { rtt_ms: s(40) } } });
  assert.match(h, /<th scope="row">idle<\/th><td>8.00<\/td><td>9.00<\/td><td>10.0<\/td>/);
  assert.match(h, /<th scope="row">download<\/th>/);
  assert.doesNotMatch(h, /upload|NaN/);
  assert.equal(latencyBoxes({}), "");
  const u = (f: number, b: number) => ({ replies: 10, forward: { owd_ms: s(f) }, backward: { owd_ms: s(b) } });
  const o = oneWay({ baseline_udp: u(5, 5), upload: { udp_latency_under_load: u(80, 5) } });
  assert.match(o, /during upload/);
  assert.match(o, /you → server<\/th><td>5.00 ms.*<td>80.0 ms/);
  assert.equal(oneWay({}), "");
});
