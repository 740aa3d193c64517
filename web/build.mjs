// Builds the page into dist/ (embedded by web.go) and, with --tests, the
// unit tests into .test-build/ for `node --test`.
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, readdirSync } from "node:fs";

const common = { bundle: true, minify: true, target: ["chrome110", "firefox115"], legalComments: "none", logLevel: "warning" };
if (process.argv.includes("--tests")) {
  const tests = readdirSync("test").filter((f) => f.endsWith(".test.ts")).map((f) => "test/" + f);
  await esbuild.build({ ...common, target: "node20", minify: false, entryPoints: tests, outdir: ".test-build", platform: "node", format: "esm", outExtension: { ".js": ".mjs" } });
} else {
  mkdirSync("dist", { recursive: true });
  await esbuild.build({ ...common, entryPoints: { app: "src/main.ts" }, outdir: "dist", format: "esm" });
  // A classic worker script: module workers came late to Firefox.
  await esbuild.build({ ...common, entryPoints: { worker: "src/worker.ts" }, outdir: "dist", format: "iife" });
  // The monitor daemon's dashboard (internal/monitor, served at / on --listen).
  await esbuild.build({ ...common, entryPoints: { monitor: "src/monitor.ts" }, outdir: "dist", format: "esm" });
  // The fleet view (`sonde fleet serve`, internal/fleet).
  await esbuild.build({ ...common, entryPoints: { fleet: "src/fleet.ts" }, outdir: "dist", format: "esm" });
  copyFileSync("src/fleet.html", "dist/fleet.html");
  copyFileSync("src/monitor.html", "dist/monitor.html");
  copyFileSync("src/monitor.css", "dist/monitor.css");
  copyFileSync("src/index.html", "dist/index.html");
  copyFileSync("src/style.css", "dist/style.css");
  copyFileSync("node_modules/uplot/dist/uPlot.min.css", "dist/uplot.css");
}
