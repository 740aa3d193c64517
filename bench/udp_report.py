"""Report of bench/udp.sh: reads the tools' outputs from the directory given
and prints the schedule error, RTT overhead and side-by-side RTT tables."""
import gzip
import json
import os
import re
import statistics
import sys


def pct(xs, p):
    xs = sorted(xs)
    if not xs:
        return float("nan")
    h = (len(xs) - 1) * p / 100
    lo = int(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def ping_rtts(path):
    with open(path) as f:
        return [float(m) for m in re.findall(r"time=([0-9.]+) ms", f.read())]


def irtt(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        d = json.load(f)
    rtts, timer = [], []
    for rt in d.get("round_trips", []):
        delay = rt.get("delay") or {}
        if "rtt" in delay:
            rtts.append(delay["rtt"] / 1e6)
    st = d.get("stats", {})
    te = dict(st.get("timer_error") or {})
    te["packets_sent"] = st.get("packets_sent", 0)
    return rtts, te


def sonde(path):
    with open(path) as f:
        d = json.load(f)
    fl = d["flows"][0]
    return fl


def row(name, xs):
    return "  %-6s n %6d  min %8.3f  p50 %8.3f  p90 %8.3f  p99 %8.3f  max %8.3f ms" % (
        name, len(xs), min(xs), pct(xs, 50), pct(xs, 90), pct(xs, 99), max(xs)) if xs else "  %-6s no samples" % name


def main(d):
    print("== A: sonde at 10,000 probes/s (100 µs), ping every 10 ms beside it")
    a = sonde(os.path.join(d, "sonde-a.json"))
    se = a["schedule_error_us"]
    print("  send-schedule error: p50 %.1f µs  p99 %.1f µs  max %.1f µs  (n %d; goal p99 < 50 µs)" % (se["p50"], se["p99"], se["max"], se["n"]))
    pa = ping_rtts(os.path.join(d, "ping-a.txt"))
    r = a["rtt_ms"]
    print("  sonde RTT p50 %.3f ms, ping p50 %.3f ms: overhead %+.1f µs (goal ≤ 30 µs)" % (r["p50"], pct(pa, 50), (r["p50"] - pct(pa, 50)) * 1e3))
    print("  sonde sent %d, replies %d, loss fwd %d bwd %d" % (a["sent"], a["replies"], a["forward"]["lost"], a["backward"]["lost"]))
    print("== B: irtt at 10,000 packets/s, ping beside it")
    rb, te = irtt(os.path.join(d, "irtt-b.json"))
    pb = ping_rtts(os.path.join(d, "ping-b.txt"))
    print("  irtt sent %d packets (of %d scheduled); timer error mean %.1f µs, max %.1f µs" % (
        te.get("packets_sent", 0), int(float(os.environ.get("BENCH_DURATION", "10")) * 10000), te.get("mean", 0) / 1e3, te.get("max", 0) / 1e3))
    print("  irtt RTT p50 %.3f ms, ping p50 %.3f ms: overhead %+.1f µs (%d round trips)" % (pct(rb, 50), pct(pb, 50), (pct(rb, 50) - pct(pb, 50)) * 1e3, len(rb)))
    print("== C: every 10 ms, all three at once: RTT")
    c = sonde(os.path.join(d, "sonde-c.json"))
    rc, _ = irtt(os.path.join(d, "irtt-c.json"))
    pc = ping_rtts(os.path.join(d, "ping-c.txt"))
    s = c["rtt_ms"]
    print("  %-6s n %6d  min %8.3f  p50 %8.3f  p90 %8.3f  p99 %8.3f  max %8.3f ms" % ("sonde", s["n"], s["min"], s["p50"], s["p90"], s["p99"], s["max"]))
    print(row("irtt", rc))
    print(row("ping", pc))
    print("  sonde one-way (shared clock): forward p50 %.3f ms, backward p50 %.3f ms; jitter %.4f / %.4f ms" % (
        c["forward"]["owd_ms"]["p50"], c["backward"]["owd_ms"]["p50"], c["forward"]["jitter_ms"], c["backward"]["jitter_ms"]))


if __name__ == "__main__":
    main(sys.argv[1])
