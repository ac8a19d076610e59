#!/usr/bin/env python3
"""Which closed windows could a forecast have seen?

A boundary has a closed window when some submission instant before the predecessor's end gave
no interruption but submitting at the end would have. For each such boundary in a
`mirage eval --policies ...,oracle --out DIR` run, this takes t, the last instant without
interruption, drops from the trace every job submitted after t (what a policy deciding at t
could not know), and evaluates that sample again. If submitting at the predecessor's end is
then without interruption, jobs that arrived after t closed the window: no forecast made from
the queue at t, even one that knew every runtime, could have seen it. Otherwise the queue at t
already held what closed it. Last, it asks whether the arrivals just before a decision (the
node-hours requested in the --window hours up to --lead hours before the predecessor's end)
tell the windows later jobs closed from the boundaries a submission at the end served.
    bench/closed_windows.py DIR TRACE [--policy NAME] [--lead H] [--window H] -- EVAL_ARGS...
EVAL_ARGS are the machine and chain arguments the run used (for example --cluster-nodes 88
--nodes 8); the mirage binary is $MIRAGE or build/cli/mirage. The last job of the trace
is kept as well, so that the sample stays inside the log's horizon; it must arrive after the
predecessor's end, or the boundary is reported as not checked.
"""
import argparse
import bisect
import gzip
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

from eval_dir import TIME_FORMAT, epoch, oracle_instants, policy_samples


def read_lines(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        return f.read().splitlines()


def sacct_limit_hours(text):
    """Timelimit as [D-]HH:MM:SS, or TimelimitRaw in minutes; None where unlimited or blank."""
    text = text.strip()
    if text.isdigit():
        return int(text) / 60
    days, _, clock = text.rpartition("-")
    parts = clock.split(":")
    if not all(p.isdigit() for p in parts) or not (days == "" or days.isdigit()):
        return None
    while len(parts) < 3:
        parts.insert(0, "0")
    h, m, sec = (int(p) for p in parts)
    return (int(days or 0) * 24 + h) + m / 60 + sec / 3600


class Trace:
    """The trace's lines, with each job line's submit time (UTC epoch) and requested node-hours
    (nodes x time limit; SWF: processors x requested time, over processors per node)."""

    def __init__(self, path):
        self.lines = read_lines(path)
        self.submit = {}  # line index -> submit epoch
        node_hours = {}  # line index -> requested node-hours, where the line gives them
        swf_start, procs, nodes = None, None, None
        columns = None
        for i, line in enumerate(self.lines):
            if line.startswith(";"):
                key, _, value = line[1:].partition(":")
                number = value.split()[0] if value.split() else ""
                if number.isdigit():
                    if key.strip() == "UnixStartTime":
                        swf_start = int(number)
                    elif key.strip() == "MaxProcs":
                        procs = int(number)
                    elif key.strip() == "MaxNodes":
                        nodes = int(number)
                continue
            fields = [f.strip() for f in (line.split("\t") if "\t" in line else
                                          line.split("|") if "|" in line else line.split())]
            if columns is None and "Submit" in fields:
                columns = {name: k for k, name in enumerate(fields)}
                continue
            if columns is not None:  # sacct: a Submit column of ISO times
                at = columns["Submit"]
                if at < len(fields) and fields[at][:4].isdigit() and "T" in fields[at]:
                    self.submit[i] = epoch(fields[at][:19])
                    limit = next((sacct_limit_hours(fields[columns[c]]) for c in
                                  ("TimelimitRaw", "TimelimitR", "Timelimit") if c in columns), None)
                    n = fields[columns["NNodes"]] if "NNodes" in columns else ""
                    if limit is not None and n.isdigit():
                        node_hours[i] = int(n) * limit
            elif len(fields) >= 18 and fields[1].lstrip("-").isdigit():  # SWF
                self.submit[i] = (swf_start or 0) + int(fields[1])
                size = int(fields[7]) if int(fields[7]) > 0 else int(fields[4])
                seconds = int(fields[8]) if int(fields[8]) > 0 else int(fields[3])
                per_node = procs // nodes if procs and nodes and procs >= nodes else 1
                if size > 0 and seconds > 0:
                    node_hours[i] = size / per_node * seconds / 3600
        if not self.submit:
            sys.exit(f"{path}: no job lines with a submit time found (SWF or sacct expected)")
        self.last = max(self.submit, key=lambda i: self.submit[i])
        self.arrivals = sorted((t, node_hours.get(i, 0.0)) for i, t in self.submit.items())
        self.arrival_times = [t for t, _ in self.arrivals]

    def node_hours_submitted(self, begin, end):
        """Node-hours requested by the jobs submitted in (begin, end]."""
        a = bisect.bisect_right(self.arrival_times, begin)
        b = bisect.bisect_right(self.arrival_times, end)
        return sum(h for _, h in self.arrivals[a:b])

    def write_until(self, cutoff, out):
        with open(out, "w") as f:
            for i, line in enumerate(self.lines):
                s = self.submit.get(i)
                if s is None or s <= cutoff or i == self.last:
                    f.write(line + "\n")


def closed_windows(out_dir, policy):
    """The boundaries with a closed window, and the rows of those a submission at the end
    served without interruption (no window closed)."""
    rows = {(r["sample_time"], r["boundary"]): r for r in policy_samples(out_dir, policy)}
    found, served = [], []
    for key, tried in sorted(oracle_instants(out_dir).items()):
        if key not in rows:
            continue
        if int(tried[-1]["interruption_s"]) == 0:
            served.append(rows[key])
            continue
        zero = [r for r in tried if int(r["interruption_s"]) == 0]
        if zero:
            found.append((key, zero[-1], tried[-1], rows[key]))
    return found, served


def arrivals_before(trace, row, lead, window):
    """Node-hours per hour submitted in the `window` hours up to `lead` hours before the
    predecessor's end: what a policy deciding then could see of the arrivals."""
    t = epoch(row["predecessor_end"]) - lead * 3600
    return trace.node_hours_submitted(t - window * 3600, t) / window


def print_arrival_signal(trace, closed_later, served, lead, window):
    """How well the arrivals just before a decision tell boundaries that later jobs will close
    from those a submission at the end serves: the AUC, and what flagging the busiest serves."""
    pos = [arrivals_before(trace, r, lead, window) for r in closed_later]
    neg = sorted(arrivals_before(trace, r, lead, window) for r in served)
    if not pos or not neg:
        return
    auc = sum(bisect.bisect_left(neg, x) + (bisect.bisect_right(neg, x) - bisect.bisect_left(neg, x)) / 2
              for x in pos) / len(pos) / len(neg)
    print(f"arrivals in the {window:g} h up to {lead:g} h before the predecessor's end (node-hours"
          f" requested per hour): AUC {auc:.2f} for closed by later jobs ({len(pos)}) against"
          f" served at the end ({len(neg)})")
    for q in (0.75, 0.9):
        threshold = neg[min(int(q * len(neg)), len(neg) - 1)]
        print(f"  above {threshold:.0f} (the served boundaries' {q:.0%} quantile):"
              f" {sum(x > threshold for x in pos)} of {len(pos)} closed by later jobs,"
              f" {sum(x > threshold for x in neg)} of {len(neg)} served")


def recheck(trace, mirage, eval_args, key, last_zero, row, workdir):
    sample, boundary = key
    cutoff = epoch(last_zero["successor_submit"])
    if trace.submit[trace.last] <= epoch(row["predecessor_end"]):
        return None, "the trace's last job arrives before the predecessor's end; not checked"
    tag = sample.replace(":", "") + "-" + boundary
    path = os.path.join(workdir, tag + ".trace")
    trace.write_until(cutoff, path)
    to = time.strftime(TIME_FORMAT, time.gmtime(epoch(sample) + 60))
    out = os.path.join(workdir, tag + ".eval")
    cmd = [mirage, "eval", "--trace", path, "--from", sample, "--to", to, "--policies", "oracle",
           "--threads", "1", "--out", out] + eval_args
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        return None, "mirage eval failed: " + (run.stderr.strip().splitlines() or ["no message"])[0]
    tried = oracle_instants(out).get(key)
    if not tried:
        return None, "no oracle instants in the re-run (sample dropped?)"
    ends = {r["predecessor_end"] for r in policy_samples(out, "oracle") if r["boundary"] == boundary}
    if ends != {row["predecessor_end"]}:
        return None, f"the re-run's predecessor ends at {sorted(ends)}, not as before; not checked"
    return int(tried[-1]["interruption_s"]), ""


def main():
    argv = sys.argv[1:]
    eval_args = []
    if "--" in argv:
        cut = argv.index("--")
        argv, eval_args = argv[:cut], argv[cut + 1:]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir")
    ap.add_argument("trace")
    ap.add_argument("--policy", default="average", help="whose interruption to print beside (default average)")
    ap.add_argument("--lead", type=float, default=2, help="hours before the end of the arrivals check (default 2)")
    ap.add_argument("--window", type=float, default=6, help="hours of arrivals it counts (default 6)")
    args = ap.parse_args(argv)
    mirage = os.environ.get("MIRAGE", "build/cli/mirage")
    found, served = closed_windows(args.dir, args.policy)
    if not found:
        print("no closed windows: wherever an earlier submission avoided interruption, so did one at the end")
        return
    trace = Trace(args.trace)
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda f: recheck(trace, mirage, eval_args, f[0], f[1], f[3], workdir), found))
    print(f"{'sample':19} {'bucket':6} {'predecessor end':19} {'last safe':19} {'ahead':>6}"
          f" {args.policy + ' int.':>12} {'at end':>8} {'frozen':>8}  closed by")
    later = queued = 0
    closed_later = []
    for (key, last_zero, at_end, row), (frozen, note) in zip(found, results):
        end = row["predecessor_end"]
        ahead = (epoch(end) - epoch(last_zero["successor_submit"])) / 3600
        if frozen is None:
            verdict = note
        elif frozen == 0:
            verdict, later = "jobs submitted later", later + 1
            closed_later.append(row)
        else:
            verdict, queued = "the queue at that instant", queued + 1
        print(f"{key[0]:19} {row['bucket']:6} {end:19} {last_zero['successor_submit']:19}"
              f" {ahead:5.1f}h {int(row['interruption_s']) / 3600:10.2f} h"
              f" {int(at_end['interruption_s']) / 3600:6.2f} h"
              f" {'-' if frozen is None else f'{frozen / 3600:6.2f} h':>8}  {verdict}")
    print(f"{len(found)} closed windows: {later} closed by jobs submitted after the last safe instant,"
          f" {queued} by what was already queued then")
    print_arrival_signal(trace, closed_later, served, args.lead, args.window)


if __name__ == "__main__":
    main()
