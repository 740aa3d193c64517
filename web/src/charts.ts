// Live charts of a run, drawn with uPlot (bundled from npm by esbuild: no
// CDN): throughput per direction (Mbit/s) and round-trip time (ms) against
// seconds since Start. uPlot draws thousands of points on one canvas for a
// few kB, resizes to its container and shows values under the cursor,
// which the hand-made canvas chart this replaces did not.
import uPlot from "uplot";

// Colours come from the page's CSS (light and dark schemes).
const css = (v: string, dflt: string) => (typeof getComputedStyle === "function" ? getComputedStyle(document.documentElement).getPropertyValue(v).trim() : "") || dflt;

export interface Point { t: number; down?: number; up?: number; rtt?: number }

export class LiveCharts {
  private t: number[] = [];
  private down: (number | null)[] = [];
  private up: (number | null)[] = [];
  private rtt: (number | null)[] = [];
  private rate: uPlot;
  private lat: uPlot;
  private pending = false;

  constructor(private el: HTMLElement) {
    el.innerHTML = "";
    const width = this.width();
    const DOWN = css("--down", "#0b62d6"), UP = css("--up", "#7a3fc4"), RTT = css("--rtt", "#c2410c"), AX = css("--muted", "#5a6270"), GRID = css("--line", "#dde1e7");
    const common = (title: string, yLabel: string): Partial<uPlot.Options> => ({
      title, width, height: 170,
      scales: { x: { time: false } },
      // The legend names the series; values under the cursor would read
      // "--" whenever the cursor is elsewhere.
      legend: { live: false },
      cursor: { drag: { x: false, y: false } },
      axes: [{ label: "seconds since Start", size: 40, stroke: AX, grid: { stroke: GRID } }, { label: yLabel, size: 56, stroke: AX, grid: { stroke: GRID } }],
    });
    this.rate = new uPlot({
      ...common("Throughput", "Mbit/s"),
      series: [{ label: "time" }, { label: "download", stroke: DOWN, width: 2, spanGaps: false },
        { label: "upload", stroke: UP, width: 2, spanGaps: false }],
    } as uPlot.Options, [[], [], []], el);
    this.lat = new uPlot({
      ...common("Round-trip time", "ms"),
      series: [{ label: "time" }, { label: "round trip", stroke: RTT, width: 1.5 }],
    } as uPlot.Options, [[], []], el);
    new ResizeObserver(() => {
      const w = this.width();
      this.rate.setSize({ width: w, height: 170 });
      this.lat.setSize({ width: w, height: 170 });
    }).observe(el);
  }

  private width(): number {
    return Math.max(200, Math.floor(this.el.clientWidth || 320));
  }

  push(p: Point): void {
    this.t.push(p.t);
    this.down.push(p.down === undefined ? null : p.down / 1e6);
    this.up.push(p.up === undefined ? null : p.up / 1e6);
    this.rtt.push(p.rtt ?? null);
    // One redraw per frame at most, however many points arrive.
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(() => {
      this.pending = false;
      this.rate.setData([this.t, this.down, this.up] as uPlot.AlignedData);
      this.lat.setData([this.t, this.rtt] as uPlot.AlignedData);
    });
  }

  /** points returns how many samples the charts hold (tests). */
  get points(): number {
    return this.t.length;
  }
}
