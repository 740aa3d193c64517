// The result's first screen: the figures people look for first, each large
// with its unit, and the grades the server computed (internal/grade, in
// the result's "grades"): bufferbloat letters, RPM bands and Cloudflare
// AIM use cases. Each grade opens (<details>) onto its inputs and
// thresholds. Pure: returns HTML, so node tests can check it.

export interface Band { name: string; below?: number }
interface Letter { added_ms: number; loaded_mean_ms: number; grade: string }
interface UseCaseInput { metric: string; value: number; unit: string; measured: boolean; source?: string; points: number; thresholds: number[]; points_table: number[] }
export interface Grades {
  bufferbloat?: { idle_mean_ms: number; download?: Letter; upload?: Letter; overall?: Letter; bidir?: Letter; thresholds_ms: Band[] };
  responsiveness?: { direction: string; rpm: number; band: string; thresholds: Band[]; apple_style: string; apple_style_thresholds: Band[] }[];
  use_cases?: { name: string; points: number; class: string; cutoffs: number[]; classes: string[]; inputs: UseCaseInput[] }[];
  limit?: string;
  notes?: string[];
}

const esc = (s: string) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
const ok = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/** num splits a figure into number and unit for large display. */
export function rateParts(bps: number): [string, string] {
  if (bps >= 1e9) return [(bps / 1e9).toFixed(2), "Gbit/s"];
  if (bps >= 1e6) return [(bps / 1e6).toFixed(bps >= 100e6 ? 0 : 1), "Mbit/s"];
  return [(bps / 1e3).toFixed(0), "kbit/s"];
}
export function msParts(ms: number): [string, string] {
  return [Math.abs(ms) < 10 ? ms.toFixed(2) : ms.toFixed(ms < 100 ? 1 : 0), "ms"];
}
/** plusMs is an added delay, never below zero, with its sign. */
const plusMs = (ms: number): [string, string] => {
  const [n, u] = msParts(Math.max(0, ms));
  return ["+" + n, u];
};

/** gradeTone maps a grade to good / fair / bad for colour (always beside the word). */
export function gradeTone(g: string): "good" | "fair" | "bad" {
  if (["A+", "A", "B", "Excellent", "Good", "great", "good", "High"].includes(g)) return "good";
  if (["C", "Fair", "average", "Medium"].includes(g)) return "fair";
  return "bad";
}

export function bandsText(b: Band[], unit: string): string {
  return b.map((x, i) => (x.below !== undefined ? `${x.name} < ${x.below}` : `${x.name} ≥ ${b[i - 1]?.below ?? 0}`)).join(", ") + (unit ? " " + unit : "");
}

function figure(key: string, label: string, parts: [string, string] | null, sub = ""): string {
  if (!parts) return "";
  return `<div class="fig" role="group" aria-label="${esc(label)}"><div class="fig-label">${esc(label)}</div>` +
    `<div class="fig-value"><span class="num" data-k="${key}">${esc(parts[0])}</span> <span class="unit">${esc(parts[1])}</span></div>` +
    (sub ? `<div class="fig-sub">${esc(sub)}</div>` : "") + `</div>`;
}

const useCaseTitle: Record<string, string> = { streaming: "Streaming", gaming: "Gaming", video_calls: "Video calls" };
const metricTitle: Record<string, string> = { idle_latency: "idle latency", loaded_latency_increase: "latency increase under load", jitter: "jitter", packet_loss: "packet loss", download: "download" };

function inputValue(i: UseCaseInput): string {
  if (!i.measured) return "not measured";
  if (i.unit === "ms") return `${msParts(i.value).join(" ")}`;
  if (i.unit === "ratio") return `${(i.value * 100).toFixed(2)} %`;
  return rateParts(i.value).join(" ");
}
function thresholdText(i: UseCaseInput): string {
  const f = (v: number) => (i.unit === "bit/s" ? rateParts(v).join(" ") : i.unit === "ratio" ? `${v * 100} %` : `${v} ms`);
  return i.points_table.map((p, k) => (k < i.thresholds.length ? `< ${f(i.thresholds[k])}: ${p}` : `≥ ${f(i.thresholds[k - 1])}: ${p}`)).join("; ");
}

function grade(key: string, title: string, g: string, sub: string, details: string): string {
  return `<details class="grade tone-${gradeTone(g)}"><summary><span class="g-title">${esc(title)}</span>` +
    `<span class="g-val" data-k="${key}">${esc(g)}</span><span class="g-sub">${esc(sub)}</span></summary><div class="g-body">${details}</div></details>`;
}

/** statsOf reads a phase's loaded RTT stats. */
interface S { n: number; min: number; p50: number; mean: number; p90?: number }
export interface HeadlineResult {
  baseline?: { rtt_ms: S; samples?: { rtt_ms: number }[] };
  download?: { goodput_bps: number; latency_under_load?: { rtt_ms: S } };
  upload?: { goodput_bps: number; latency_under_load?: { rtt_ms: S } };
  bidir?: { download?: { goodput_bps: number }; upload?: { goodput_bps: number }; latency_under_load?: { rtt_ms: S } };
  grades?: Grades;
  webrtc?: { upload?: { loss_pct: number; jitter_ms: number }; download?: { loss_pct: number; jitter_ms: number } };
}

/** headline renders the first screen of a result. */
export function headline(r: HeadlineResult): string {
  const g = r.grades ?? {};
  const idle = r.baseline && r.baseline.rtt_ms.n > 0 ? r.baseline.rtt_ms.p50 : NaN;
  const figs: string[] = [];
  if (r.download && r.download.goodput_bps > 0) figs.push(figure("down", "Download", rateParts(r.download.goodput_bps), "goodput, server → you"));
  if (r.upload && r.upload.goodput_bps > 0) figs.push(figure("up", "Upload", rateParts(r.upload.goodput_bps), "goodput, you → server"));
  if (ok(idle)) figs.push(figure("idle", "Idle latency", msParts(idle), `round trip, median; best ${msParts(r.baseline!.rtt_ms.min).join(" ")}`));
  // Added delay: the graded figure (grades.bufferbloat, mean under load
  // minus the idle mean), the same number the bufferbloat grade and the
  // "what limits" sentence use. A result without grades (the page's own,
  // when the server is gone) shows the loaded round trip instead.
  const bb = g.bufferbloat;
  const loaded = (key: string, label: string, l: S | undefined, letter: Letter | undefined) => {
    if (!l || l.n === 0) return;
    // The sub names both means: the idle figure beside it is a median.
    if (letter && ok(letter.added_ms)) figs.push(figure(key, label, plusMs(letter.added_ms), `added delay: mean round trip ${msParts(letter.loaded_mean_ms).join(" ")} under load, ${msParts(bb!.idle_mean_ms).join(" ")} idle`));
    else figs.push(figure(key, label, msParts(l.p50), "median round trip under load"));
  };
  loaded("loaded_down", "Latency under download", r.download?.latency_under_load?.rtt_ms, bb?.download);
  loaded("loaded_up", "Latency under upload", r.upload?.latency_under_load?.rtt_ms, bb?.upload);
  const bi = r.bidir;
  if (bi?.download && bi.download.goodput_bps > 0) figs.push(figure("bidir_down", "Download, both ways at once", rateParts(bi.download.goodput_bps), "goodput while uploading too"));
  if (bi?.upload && bi.upload.goodput_bps > 0) figs.push(figure("bidir_up", "Upload, both ways at once", rateParts(bi.upload.goodput_bps), "goodput while downloading too"));
  loaded("loaded_bidir", "Latency, both ways at once", bi?.latency_under_load?.rtt_ms, bb?.bidir);
  const jitter = g.use_cases?.flatMap((u) => u.inputs).find((i) => i.metric === "jitter");
  if (jitter?.measured) figs.push(figure("jitter", "Jitter", msParts(jitter.value), "idle, mean change between round trips"));
  const loss = g.use_cases?.flatMap((u) => u.inputs).find((i) => i.metric === "packet_loss");
  if (loss?.measured) figs.push(figure("loss", "Packet loss", [(loss.value * 100).toFixed(loss.value < 0.01 ? 2 : 1), "%"], loss.source ?? ""));

  const grades: string[] = [];
  const main = bb?.overall ?? bb?.bidir;
  if (bb && main) {
    const per = [bb.download ? `download ${bb.download.grade}` : "", bb.upload ? `upload ${bb.upload.grade}` : "", bb.bidir ? `both ways ${bb.bidir.grade}` : ""].filter(Boolean).join(" · ");
    const rows = ([["download", bb.download], ["upload", bb.upload], ["overall (mean of both)", bb.overall], ["both ways at once (not in overall)", bb.bidir]] as const)
      .filter(([, l]) => l).map(([n, l]) => `<tr><th scope="row">${n}</th><td>${msParts(l!.loaded_mean_ms).join(" ")}</td><td>+${msParts(l!.added_ms).join(" ")}</td><td>${esc(l!.grade)}</td></tr>`).join("");
    grades.push(grade("bufferbloat", "Bufferbloat", main.grade, per,
      `<p>Added latency under load: mean round trip under load minus the idle mean (${msParts(bb.idle_mean_ms).join(" ")}).</p>` +
      `<table><thead><tr><th>phase</th><th>mean under load</th><th>added</th><th>grade</th></tr></thead><tbody>${rows}</tbody></table>` +
      `<p class="scale">DSLReports scale (also Waveform, LibreQoS): ${esc(bandsText(bb.thresholds_ms, "ms added"))}.</p>`));
  }
  for (const p of g.responsiveness ?? []) {
    grades.push(grade(`rpm_${p.direction}`, `Responsiveness, ${p.direction}`, p.band, `${Math.round(p.rpm)} RPM`,
      `<p>Round trips per minute while the ${esc(p.direction)} loads the link (IETF responsiveness draft): ${Math.round(p.rpm)} RPM.</p>` +
      `<p class="scale">Draft bands: ${esc(bandsText(p.thresholds, "RPM"))}. Apple-style (networkQuality, undocumented): ${esc(p.apple_style)} (${esc(bandsText(p.apple_style_thresholds, ""))}).</p>`));
  }
  for (const u of g.use_cases ?? []) {
    const rows = u.inputs.map((i) => `<tr><th scope="row">${esc(metricTitle[i.metric] ?? i.metric)}</th><td>${esc(inputValue(i))}</td><td>${i.points > 0 ? "+" : ""}${i.points}</td><td class="scale">${esc(thresholdText(i))}</td></tr>`).join("");
    const cut = u.cutoffs.map((c, k) => `${u.classes[k + 1]} ≥ ${c}`).join(", ");
    grades.push(grade(`uc_${u.name}`, useCaseTitle[u.name] ?? u.name, u.class, `${u.points} points`,
      `<table><thead><tr><th>input</th><th>value</th><th>points</th><th>points table</th></tr></thead><tbody>${rows}</tbody></table>` +
      `<p class="scale">Cloudflare AIM: points summed, clamped at 0; ${esc(u.classes[0])} below ${u.cutoffs[0]}, ${esc(cut)}.</p>`));
  }
  const limit = g.limit ? `<p class="limit" id="limit"><strong>What limits this connection:</strong> ${esc(g.limit)}</p>` : "";
  const notes = (g.notes ?? []).map((n) => `<p class="g-note">${esc(n)}</p>`).join("");
  return `<section id="headline" aria-label="Result summary"><div class="figs">${figs.join("")}</div>${limit}` +
    (grades.length ? `<h2 class="sr-only">Grades</h2><div class="grades">${grades.join("")}</div>${notes}` : "") + `</section>`;
}
