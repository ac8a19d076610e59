#!/usr/bin/env python3
"""Which closed windows could a forecast have seen?

A boundary has a closed window when some submission instant before the predecessor's end gave
no interruption but submitting at the end would have. For each such boundary in a
`mirage eval --policies ...,oracle --out DIR` run, this takes t, the last instant without
interruption, drops from the trace every job submitted after t (what a policy deciding at t
could not know), and evaluates that sample again. If submitting at the predecessor's end is
then without interruption, jobs that arrived after t closed the window: no forecast made from
the queue at t, even one that knew every runtime, could have seen it. Otherwise the queue at t
already held what closed it.
    bench/closed_windows.py DIR TRACE [--policy NAME] -- EVAL_ARGS...
EVAL_ARGS are the machine and chain arguments the run used (for example --nodes 88
--chain-nodes 8); the mirage binary is $MIRAGE or build/cli/mirage. The last job of the trace
is kept as well, so that the sample stays inside the log's horizon; it must arrive after the\npredecessor's end, or the boundary is reported as not checked.
"""
import argparse
import csv
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


class Trace:
    """The trace's lines, with the submit time (UTC epoch) of each job line."""

    def __init__(self, path):
        self.lines = read_lines(path)
        self.submit = {}  # line index -> submit epoch
        swf_start = None
        header = None
        for i, line in enumerate(self.lines):
            if line.startswith(";"):
                if "UnixStartTime:" in line:
                    swf_start = int(line.split(":", 1)[1].split()[0])
                continue
            fields = line.split("\t") if "\t" in line else line.split("|") if "|" in line else line.split()
            if header is None and "Submit" in [f.strip() for f in fields]:
                header = [f.strip() for f in fields].index("Submit")
                continue
            if header is not None:  # sacct: a Submit column of ISO times
                if header < len(fields) and fields[header].strip()[:4].isdigit() and "T" in fields[header]:
                    self.submit[i] = epoch(fields[header].strip()[:19])
            elif len(fields) >= 18 and fields[1].lstrip("-").isdigit():  # SWF
                self.submit[i] = (swf_start or 0) + int(fields[1])
        if not self.submit:
            sys.exit(f"{path}: no job lines with a submit time found (SWF or sacct expected)")
        self.last = max(self.submit, key=lambda i: self.submit[i])

    def write_until(self, cutoff, out):
        with open(out, "w") as f:
            for i, line in enumerate(self.lines):
                s = self.submit.get(i)
                if s is None or s <= cutoff or i == self.last:
                    f.write(line + "\n")


def closed_windows(out_dir, policy):
    rows = {(r["sample_time"], r["boundary"]): r for r in policy_samples(out_dir, policy)}
    found = []
    for key, tried in sorted(oracle_instants(out_dir).items()):
        if int(tried[-1]["interruption_s"]) == 0:
            continue  # submitting at the end was fine: no window closed
        zero = [r for r in tried if int(r["interruption_s"]) == 0]
        if zero and key in rows:
            found.append((key, zero[-1], tried[-1], rows[key]))
    return found


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
        return None, f"mirage eval failed: {run.stderr.strip().splitlines()[-1:]}"
    tried = oracle_instants(out).get(key)
    if not tried:
        return None, "no oracle instants in the re-run (sample dropped?)"
    with open(os.path.join(out, "samples.csv")) as f:
        ends = {r["predecessor_end"] for r in csv.DictReader(f) if r["boundary"] == boundary}
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
    args = ap.parse_args(argv)
    mirage = os.environ.get("MIRAGE", "build/cli/mirage")
    found = closed_windows(args.dir, args.policy)
    if not found:
        print("no closed windows: wherever an earlier submission avoided interruption, so did one at the end")
        return
    trace = Trace(args.trace)
    with tempfile.TemporaryDirectory() as workdir, ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        results = list(pool.map(lambda f: recheck(trace, mirage, eval_args, f[0], f[1], f[3], workdir), found))
    print(f"{'sample':19} {'bucket':6} {'predecessor end':19} {'last safe':19} {'ahead':>6}"
          f" {args.policy + ' int.':>12} {'at end':>8} {'frozen':>8}  closed by")
    later = queued = 0
    for (key, last_zero, at_end, row), (frozen, note) in zip(found, results):
        end = row["predecessor_end"]
        ahead = (epoch(end) - epoch(last_zero["successor_submit"])) / 3600
        if frozen is None:
            verdict = note
        elif frozen == 0:
            verdict, later = "jobs submitted later", later + 1
        else:
            verdict, queued = "the queue at that instant", queued + 1
        print(f"{key[0]:19} {row['bucket']:6} {end:19} {last_zero['successor_submit']:19}"
              f" {ahead:5.1f}h {int(row['interruption_s']) / 3600:10.2f} h"
              f" {int(at_end['interruption_s']) / 3600:6.2f} h"
              f" {'-' if frozen is None else f'{frozen / 3600:6.2f} h':>8}  {verdict}")
    print(f"{len(found)} closed windows: {later} closed by jobs submitted after the last safe instant,"
          f" {queued} by what was already queued then")


if __name__ == "__main__":
    main()
