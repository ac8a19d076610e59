#!/usr/bin/env python3
"""How much one user's own jobs lift the twins' agreement, from a log's real waits.

`mirage trace fidelity` pairs twins (the same nodes, limits within a quarter of each other,
submitted within ten minutes) only across users, since one user's jobs submitted together wait
alike for reasons of their own (an array, a held series). A log that names no user cannot hold
them apart. This prints, for the per-job CSV of `mirage simulate --trace T --out jobs.csv`, the
rank correlation of a real wait with its twin's three ways: twins of other users (what the report
prints), twins of any user (all a log without users allows), and twins of any user submitted at
least a minute apart. Real waits only: the replay does not enter, but as in the report only the
jobs the replay started are paired (the limits are the CSV's, the replay's own).
    bench/twins_by_user.py jobs.csv [--from UNIX --to UNIX] [jobs2.csv ...]
"""
import csv
import sys

from wait_rankers import spearman

NEAR = 600  # seconds: submitted within ten minutes of each other


def agreement(rows, other_users, min_apart=0):
    """Pairs each job with the first unpaired alike job after it, as the report does."""
    taken = [False] * len(rows)
    a, b = [], []
    for i, x in enumerate(rows):
        if taken[i]:
            continue
        for k in range(i + 1, len(rows)):
            y = rows[k]
            apart = y["submit"] - x["submit"]
            if apart > NEAR:
                break
            if taken[k] or apart < min_apart or x["nodes"] != y["nodes"]:
                continue
            if other_users and x["user"] and y["user"] and x["user"] == y["user"]:
                continue
            la, lb = max(x["limit"], 1), max(y["limit"], 1)
            if max(la, lb) > 1.25 * min(la, lb):
                continue
            taken[i] = taken[k] = True
            a += [x["wait"], y["wait"]]
            b += [y["wait"], x["wait"]]
            break
    return len(a) // 2, spearman(a, b) if a else float("nan")


def read(path, start, end):
    with open(path, newline="") as f:
        rows = [{"submit": int(r["submit"]), "nodes": int(r["nodes"]), "user": r["user"],
                 "limit": int(r["time_limit_s"]), "wait": float(r["real_wait_s"])}
                for r in csv.DictReader(f)
                if float(r["real_wait_s"]) >= 0 and float(r["sim_wait_s"]) >= 0]
    rows = [r for r in rows if start <= r["submit"] < end]
    rows.sort(key=lambda r: r["submit"])
    return rows


def main(args):
    start, end, paths = 0, 2**62, []
    while args:
        flag = args.pop(0)
        if flag == "--from":
            start = int(args.pop(0))
        elif flag == "--to":
            end = int(args.pop(0))
        else:
            paths.append(flag)
    print(f"{'jobs csv':<40} {'other users':>18} {'any user':>18} {'any, 1 min apart':>18}")
    for path in paths:
        rows = read(path, start, end)
        cells = [agreement(rows, True), agreement(rows, False), agreement(rows, False, 60)]
        print(f"{path[-40:]:<40} " + " ".join(f"{n:>8} pairs {r:>4.2f}" for n, r in cells))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
