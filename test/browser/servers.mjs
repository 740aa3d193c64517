// Runs the page against another sonde server from its list: in headless
// Chromium it opens URL, waits for the server list, asks for the nearest,
// then picks each server named on the command line in turn (by its listed
// name), runs a test against it and records what the page reported.
// Called by servers_test.go:
//   node --experimental-websocket servers.mjs URL OUT_JSON NAME...
// Writes OUT_JSON: {options, nearest, runs: [{name, base, status, id, errors, down, up}]}.
import { writeFileSync } from "node:fs";
import { Browser } from "./cdp.mjs";

const [url, out, ...names] = process.argv.slice(2);
if (!url || !out || names.length === 0) {
  console.error("usage: node --experimental-websocket servers.mjs URL OUT_JSON NAME...");
  process.exit(2);
}
const status = `(document.getElementById("status")?.textContent ?? "")`;
const b = await Browser.launch();
const rep = { runs: [] };
try {
  await b.navigate(url);
  await b.waitFor(`!document.getElementById("servers").hidden`, 10_000, 100);
  await b.eval(`document.getElementById("nearest").click()`);
  await b.waitFor(`${status}.startsWith("Nearest") || ${status}.startsWith("No server")`, 30_000, 100);
  rep.nearest = { status: await b.eval(status), base: await b.eval(`window.sonde.server()`) };
  rep.options = await b.eval(`[...document.querySelectorAll("#server option")].map((o) => o.textContent)`);
  for (const name of names) {
    const picked = await b.eval(`(() => { const s = document.getElementById("server");
      const o = [...s.options].find((o) => o.textContent.startsWith(${JSON.stringify(name)}));
      if (!o) return false; s.value = o.value; s.dispatchEvent(new Event("change")); return true; })()`);
    if (!picked) throw new Error(`no server named ${name} in the list`);
    await b.eval(`document.getElementById("start").click()`);
    await b.waitFor(`${status}.startsWith("Done") || ${status}.startsWith("Finished")`, 120_000);
    rep.runs.push({ name, ...(await b.eval(`(() => { const r = window.sonde.result() ?? {}; return { base: window.sonde.server(), status: ${status},
      id: r.id ?? "", partial: !!r.partial, errors: r.errors ?? [], down: r.download?.goodput_bps ?? 0, up: r.upload?.goodput_bps ?? 0,
      share: document.getElementById("share").href }; })()`)) });
  }
} finally {
  writeFileSync(out, JSON.stringify(rep, null, 1));
  await b.close();
}
process.exit();
