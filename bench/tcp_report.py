#!/usr/bin/env python3
"""Parse the JSON results of bench/tcp.sh and print its tables (stdlib only).

Subcommands:
  sonde FILE DIRECTION    print "whole_bps steady_bps steady_window_s bytes" of
                          one `sonde test --json` result, or fail with the reason
  iperf3 FILE DIRECTION   the same for one `iperf3 -J --get-server-output` result
  table TSV               the goodput and CPU tables from the per-run lines (row,
                          streams, tool, rep, whole_bps, steady_bps, window_s,
                          bytes, sender_cpu_ms, receiver_cpu_ms)
  rss SAMPLES_KB HWM_KB IDLE_KB OK TOTAL GOAL_MB
                          the memory verdict from the VmRSS samples

What is compared (both tools measure the receiver's payload count):
  whole   bytes received over the whole transfer / its duration, slow start
          included. sonde: <direction>.goodput_bps over the load phase.
          iperf3: the receiver's intervals, the omitted first second included
          (client intervals for -R downloads, the server's for uploads).
  steady  warm-up excluded. sonde: <direction>.rfc6349.goodput_bps, over the
          window after its detected end of slow start. iperf3: the receiver's
          end.sum_received after the -O 1 omitted second.
  cpu     user+system CPU of the sending and of the receiving process over
          the run, per GB received over the whole transfer. sonde's include
          its session setup, idle RTT baseline and report; iperf3's server
          is a long-running process, measured over the run.
"""

import json
import statistics
import sys


def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: cannot read JSON: {e}")


def sonde(path, direction):
    r = load(path)
    if r.get("errors"):
        fail(f"{path}: sonde reported errors: {'; '.join(r['errors'])}")
    d = r.get(direction)
    if not d:
        fail(f"{path}: no {direction} phase in the result")
    rfc = d.get("rfc6349")
    if not rfc or not rfc.get("goodput_bps"):
        fail(f"{path}: no RFC 6349 steady-state goodput")
    print(f"{d['goodput_bps']:.0f} {rfc['goodput_bps']:.0f} {rfc['duration_s']:.3f} {d['bytes']}")


def iperf3(path, direction):
    r = load(path)
    if r.get("error"):
        fail(f"{path}: iperf3 error: {r['error']}")
    end = r.get("end", {})
    steady = end.get("sum_received", {})
    if not steady.get("bits_per_second"):
        fail(f"{path}: no sum_received in iperf3 output")
    # The receiver's intervals: the client's for -R, the server's otherwise.
    if direction == "download":
        ivs = r.get("intervals", [])
    else:
        ivs = r.get("server_output_json", {}).get("intervals", [])
    nbytes = sum(i["sum"]["bytes"] for i in ivs)
    secs = sum(i["sum"]["seconds"] for i in ivs)
    if not ivs or secs <= 0:
        fail(f"{path}: no receiver intervals (server JSON missing?)")
    print(f"{nbytes * 8 / secs:.0f} {steady['bits_per_second']:.0f} {steady['seconds']:.3f} {nbytes}")


def gbit(v):
    return f"{v / 1e9:7.2f}"


def table(path):
    runs = {}
    order = []
    with open(path) as f:
        for line in f:
            row, streams, tool, _rep, whole, steady, window, nbytes, snd, rcv = line.split()
            key = (row, int(streams))
            if key not in runs:
                runs[key] = {"sonde": [], "iperf3": []}
                order.append(key)
            gb = int(nbytes) / 1e9
            runs[key][tool].append((float(whole), float(steady), float(window),
                                    int(snd) / gb, int(rcv) / gb))

    head = f"{'row':<22} {'metric':<7} {'sonde':>7} {'iperf3':>7} {'ratio':>6}  {'goal':<6} verdict"
    print("Goodput, Gbit/s, median of the runs (ratio = sonde median / iperf3 median)")
    print(head)
    print("-" * len(head))
    fails = 0
    for key in order:
        name = f"{key[0]} {key[1]} stream{'s' if key[1] > 1 else ''}"
        for idx, metric in ((1, "steady"), (0, "whole")):
            s = [x[idx] for x in runs[key]["sonde"]]
            i = [x[idx] for x in runs[key]["iperf3"]]
            if not s or not i:
                print(f"{name:<22} {metric:<7} {'n/a':>7} {'n/a':>7} {'n/a':>6}  >=1.00 NO DATA")
                fails += 1
                continue
            ms, mi = statistics.median(s), statistics.median(i)
            ratio = ms / mi
            ok = ratio >= 1.0
            fails += not ok
            print(f"{name:<22} {metric:<7} {gbit(ms)} {gbit(mi)} {ratio:6.2f}  >=1.00 {'PASS' if ok else 'FAIL'}")
    print()
    print("Per-run goodput, Gbit/s, in run order (steady / whole):")
    for key in order:
        name = f"{key[0]} {key[1]}"
        for tool in ("sonde", "iperf3"):
            vals = "  ".join(f"{x[1] / 1e9:.2f}/{x[0] / 1e9:.2f}" for x in runs[key][tool])
            print(f"  {name:<12} {tool:<7} {vals}")
    for tool, how in (("sonde", "after its detected end of slow start"), ("iperf3", "after the -O 1 omitted second")):
        win = [x[2] for k in order for x in runs[k][tool]]
        if win:
            print(f"Steady window of {tool}: median {statistics.median(win):.2f} s "
                  f"(min {min(win):.2f}, max {max(win):.2f}), {how}")
    print(f"Goodput rows below goal: {fails}")
    print()
    print("CPU per GB received, ms (median of the runs; lower is better; no goal; ratio = sonde/iperf3).")
    print("On loopback the receive path often runs in the sender's context: the total is the fairer figure.")
    head = (f"{'row':<22} {'sonde: snd':>10} {'rcv':>5} {'total':>6}   {'iperf3: snd':>11} {'rcv':>5} "
            f"{'total':>6}   {'total ratio':>11}")
    print(head)
    print("-" * len(head))
    for key in order:
        name = f"{key[0]} {key[1]} stream{'s' if key[1] > 1 else ''}"
        med = {}
        for tool in ("sonde", "iperf3"):
            v = runs[key][tool]
            if not v:
                med[tool] = (float("nan"),) * 3
                continue
            med[tool] = (statistics.median(x[3] for x in v), statistics.median(x[4] for x in v),
                         statistics.median(x[3] + x[4] for x in v))
        (s_snd, s_rcv, s_tot), (i_snd, i_rcv, i_tot) = med["sonde"], med["iperf3"]
        print(f"{name:<22} {s_snd:10.0f} {s_rcv:5.0f} {s_tot:6.0f}   {i_snd:11.0f} {i_rcv:5.0f} "
              f"{i_tot:6.0f}   {s_tot / i_tot:11.2f}")


def rss(samples_path, hwm_kb, idle_kb, ok, total, goal_mb):
    with open(samples_path) as f:
        vals = [int(v) for v in f.read().split() if v.isdigit()]
    if not vals:
        fail("rss: no VmRSS samples")
    peak = max(vals) / 1024
    hwm = int(hwm_kb) / 1024 if hwm_kb.isdigit() else float("nan")
    goal = float(goal_mb)
    worst = max(peak, hwm) if hwm == hwm else peak
    print(f"Server RSS ({len(vals)} samples every 100 ms):")
    print(f"  idle VmRSS  {int(idle_kb) / 1024:7.1f} MB")
    print(f"  peak VmRSS  {peak:7.1f} MB (sampled)")
    print(f"  VmHWM       {hwm:7.1f} MB (kernel high-water mark)")
    print(f"  goal        <{goal:.0f} MB: {'PASS' if worst < goal else 'FAIL'}")
    print(f"  tests OK    {ok}/{total}: {'PASS' if ok == total else 'FAIL'}")


def main(argv):
    if len(argv) < 2:
        fail(__doc__)
    cmd, args = argv[1], argv[2:]
    if cmd == "sonde" and len(args) == 2:
        sonde(*args)
    elif cmd == "iperf3" and len(args) == 2:
        iperf3(*args)
    elif cmd == "table" and len(args) == 1:
        table(*args)
    elif cmd == "rss" and len(args) == 6:
        rss(args[0], args[1], args[2], int(args[3]), int(args[4]), args[5])
    else:
        fail(__doc__)


if __name__ == "__main__":
    main(sys.argv)
