"""Reading the files `mirage eval --out DIR` writes, for the scripts beside this one."""
import calendar
import csv
import os
import sys
import time
from collections import defaultdict

TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"


def epoch(text):
    """An eval CSV's UTC time as seconds since the epoch."""
    return calendar.timegm(time.strptime(text, TIME_FORMAT))


def oracle_instants(out_dir):
    """(sample_time, boundary) -> the oracle's tried instants, in submission order."""
    instants = defaultdict(list)
    with open(os.path.join(out_dir, "oracle_instants.csv")) as f:
        for r in csv.DictReader(f):
            instants[(r["sample_time"], r["boundary"])].append(r)
    for tried in instants.values():
        tried.sort(key=lambda r: r["successor_submit"])
    return instants


def policy_samples(out_dir, policy):
    """The rows of samples.csv for a policy, named as given to eval or by a model's file name."""
    with open(os.path.join(out_dir, "samples.csv")) as f:
        rows = [r for r in csv.DictReader(f)
                if r["policy"] == policy or os.path.basename(r["policy"]) == policy]
    if not rows:
        sys.exit(f"no samples of policy '{policy}' in {out_dir}/samples.csv")
    return rows
