#!/usr/bin/env python3
"""Drives the multi-account load and the probes of daemon/bench/forecast_error.sh on a running local
Slurm cluster with accounting (SLURM_CONF set), then prints the start-error table.

Load: 1- and 2-node sleep jobs from the accounts `small` (30 shares, but three quarters of the
load, so its fair share runs out) and `big` (70 shares), arriving at random. Probes: at random
moments a job of a random account is first tested (`sbatch --test-only`: Slurm's own estimate),
then submitted, and `mirage forecast` plans it (by slurmctld's reported priorities, and by the age
and size weights alone). When every probe has started, the start each method gave is compared with
the real one; the simulator replays the same submissions (sacct's record, as an SWF log) with its
own fair-share model for the fourth column. Asserts nothing."""
import json, os, random, re, statistics, subprocess, sys, time

mirage, config, work = sys.argv[1], sys.argv[2], sys.argv[3]
minutes = float(os.environ.get("MIRAGE_FORECAST_MINUTES", "30"))
rng = random.Random(int(os.environ.get("MIRAGE_FORECAST_SEED", "7")))
os.makedirs(work, exist_ok=True)


def sh(*args, check=True):
    return subprocess.run(args, capture_output=True, text=True, check=check)


def sbatch(account, nodes, runtime, limit_min, extra=(), test=False):
    args = ["sbatch", "-A", account, "-N", str(nodes), "-t", str(limit_min), "-o", "/dev/null",
            "-J", "probe" if extra == ("probe",) else "load"]
    args += ["--test-only"] if test else ["--parsable"]
    args += ["--wrap", f"sleep {runtime}"]
    r = sh(*args, check=False)
    if test:
        m = re.search(r"to start at (\S+)", r.stderr)
        return parse_time(m.group(1)) if m else None
    if r.returncode != 0:
        raise SystemExit(f"sbatch failed: {r.stderr.strip()}")
    return int(r.stdout.strip().split(";")[0])


def parse_time(text):
    """Slurm prints local times."""
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    return int(time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S")))


def forecast(job):
    r = sh(mirage, "forecast", "--config", config, "--job", str(job), "--json", check=False)
    try:
        return json.loads(r.stdout)[0]
    except (ValueError, IndexError):
        return {"pending": False}


# A job over its user's limit: the QOS `capped` lets a user run one node; with one capped job
# running, a second one pends for the limit and must be forecast as held.
first = sh("sbatch", "--parsable", "-q", "capped", "-N", "1", "-t", "3", "-o", "/dev/null",
           "--wrap", "sleep 120").stdout.strip()
time.sleep(3)
second = sh("sbatch", "--parsable", "-q", "capped", "-N", "1", "-t", "3", "-o", "/dev/null",
            "--wrap", "sleep 60").stdout.strip()
time.sleep(3)
limited = forecast(second)
sh("scancel", first, second, check=False)


def load_job():
    # Runs end within a minute of their limits (-t is in minutes): every predictor plans with
    # limits, so the error left is the order of the queue, not the runtimes.
    account = "small" if rng.random() < 0.75 else "big"
    runtime = rng.randint(60, 180)
    sbatch(account, rng.choice([1, 1, 2]), runtime, runtime // 60 + 1)


probes = []
t_end = time.time() + minutes * 60
next_load = time.time()
next_probe = time.time() + 180  # let the queue and the fair shares build first
while time.time() < t_end:
    now = time.time()
    if now >= next_load:
        load_job()
        next_load = now + rng.expovariate(1 / 40)
    if now >= next_probe:
        account = rng.choice(["small", "big"])
        nodes = rng.choice([1, 2])
        estimate = sbatch(account, nodes, 110, 2, test=True)
        asked = int(time.time())
        job = sbatch(account, nodes, 110, 2, extra=("probe",))
        time.sleep(2)
        f = forecast(job)
        probes.append({"job": job, "account": account, "nodes": nodes, "asked": asked,
                       "slurm": estimate, "forecast": f})
        next_probe = now + rng.uniform(60, 120)
    time.sleep(1)

# Every probe started (or the queue is left to drain for at most an hour).
deadline = time.time() + 3600
while time.time() < deadline:
    r = sh("squeue", "-h", "-t", "PD", "-n", "probe", "-o", "%i", check=False)
    if not r.stdout.strip():
        break
    time.sleep(10)
time.sleep(5)

# The whole record, for the actual starts and the simulator's replay.
r = sh("sacct", "-X", "-n", "-P", "-a", "-S", "now-6hours", "-o",
       "JobID,Submit,Start,ElapsedRaw,NNodes,TimelimitRaw,Account,State")
jobs = []
for line in r.stdout.splitlines():
    f = line.split("|")
    if len(f) < 8 or not f[0].isdigit():
        continue
    jobs.append({"id": int(f[0]), "submit": parse_time(f[1]), "start": parse_time(f[2]),
                 "elapsed": int(f[3] or 0), "nodes": int(f[4] or 1),
                 "limit": int(f[5] or 0) * 60, "account": f[6]})
starts = {j["id"]: j["start"] for j in jobs}
t0 = min(j["submit"] for j in jobs)
swf = os.path.join(work, "load.swf")
with open(swf, "w") as out:
    out.write(f"; UnixStartTime: {t0}\n; MaxNodes: 4\n; MaxProcs: 4\n")
    for j in sorted(jobs, key=lambda j: j["submit"]):
        if j["start"] is None:
            continue
        user = 1 if j["account"] == "big" else 2
        fields = [j["id"], j["submit"] - t0, j["start"] - j["submit"], j["elapsed"], j["nodes"], -1, -1,
                  j["nodes"], j["limit"], -1, 1, user, -1, -1, -1, -1, -1, -1]
        out.write(" ".join(str(x) for x in fields) + "\n")
csv = os.path.join(work, "sim.csv")
sh(mirage, "simulate", "--trace", swf, "--cluster-nodes", "4", "--slurm-conf", os.environ["SLURM_CONF"],
   "--calibration", "none", "--out", csv)
sim = {}
with open(csv) as f:
    next(f)
    for line in f:
        c = line.strip().split(",")
        sim[int(c[0])] = int(c[9]) if c[9] not in ("", "-1") else None

rows = {"forecast, reported priorities": [], "forecast, recomputed priorities": [],
        "Slurm's estimate (sbatch --test-only)": [], "simulator replay (its fair-share model)": []}
held = 0
for p in probes:
    actual = starts.get(p["job"])
    f = p["forecast"]
    if actual is None or not f.get("pending"):
        continue
    now = f["now"]
    wait = actual - now
    for name, start in (("forecast, reported priorities", f.get("reported_start")),
                        ("forecast, recomputed priorities", f.get("recomputed_start")),
                        ("Slurm's estimate (sbatch --test-only)", p["slurm"]),
                        ("simulator replay (its fair-share model)", sim.get(p["job"]))):
        if start is not None:
            rows[name].append(abs(start - actual))
    p["wait"] = wait

waits = [p["wait"] for p in probes if "wait" in p]
at_once = sum(1 for p in probes if not p["forecast"].get("pending"))
print(f"probes: {len(probes)}, {at_once} of them started at once (nothing to forecast)")
print(f"probes forecast: {len(waits)}; their waits: median {statistics.median(waits):.0f} s, "
      f"mean {statistics.mean(waits):.0f} s, max {max(waits)} s" if waits else "no probe started")
print()
print("| predictor | probes | median start error | mean start error | within 1 min |")
print("|---|---|---|---|---|")
for name, errs in rows.items():
    if not errs:
        print(f"| {name} | 0 | - | - | - |")
        continue
    within = sum(e <= 60 for e in errs) / len(errs)
    print(f"| {name} | {len(errs)} | {statistics.median(errs):.0f} s | {statistics.mean(errs):.0f} s | "
          f"{within:.0%} |")
print()
print(f"a job over its user's limit (QOS capped, MaxTRESPerUser=node=1, one capped job running): "
      f"reason {limited.get('reason', '?')}, forecast as held: "
      f"{'yes' if limited.get('held_by_limit') else 'no'}")
with open(os.path.join(work, "probes.json"), "w") as f:
    json.dump(probes, f, indent=1)
