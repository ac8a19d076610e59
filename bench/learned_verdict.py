#!/usr/bin/env python3
"""The verdict on the learned agents, from bench/learned_verdict.sh's eval JSONs.

  bench/learned_verdict.py DIR [--verdict FILE] [--page FILE]...
  bench/learned_verdict.py --runaway EVAL_JSON
  bench/learned_verdict.py DIR --compare AGENT AGENT

Reads every DIR/*-{concurrent,handoff}.json (`mirage eval --work ... --successor-wait both
--pick-before 28d --json` with every baseline point, the oracle and the models) and prints, per
case and world, what whole campaigns cost (makespan, charge) for reactive, the oracle, the
baseline point picked on the month before, hindsight's baseline point and each model; then one
table of where learning helps, and the verdict. A cost prices an hour a campaign stands idle or
finishes late as an hour charged twice (agents/LeastCostPick.h); the share of the oracle's gain is
(reactive - policy) / (reactive - oracle) on those costs.

A learned model *earns* a chain (a trace, a chain size and an overlap mode) in a world when it is
the least-cost point there (no baseline point, at any setting, costs less on the judged month), or
when it is on the frontier (no baseline point finishes sooner for no more charge, nor costs
less charge for no later finish) and costs less than the baseline point chosen on the month
before, the choice a user has. Ties go to the baseline: a model that decides as reactive earns
nothing. The rule of issue 58: where the models earn at least half of the
chains in the world of real waits, a learned agent becomes the default of new campaigns; else the
best baseline does: the point, among those that need no file (quantile reads a wait
distribution), with the largest mean share of the oracle's gain over the chains the real waits
judge. A chain the real waits cannot judge (too few real jobs of its shape) counts as not earned:
the verdict needs evidence. --verdict FILE writes the verdict for the build to compile in;
--page FILE writes the tables and the verdict into a page, each between the markers
`<!-- learned_verdict.py writes: NAME -->` and `<!-- end: NAME -->` (NAME: standing, verdict,
cases, training) where the page has them, so that no figure there is typed by hand.
--runaway EVAL_JSON prints, comma-separated, the points to judge a case again without, where a
world that has samples compared no campaign (every point finishing is what a campaign's figures
need): those that left a campaign incomplete there, the oracle aside; nothing where every world
with samples compared some. --compare A B prints agent B beside agent A chain by chain (each
one's share of the oracle's gain in both worlds, the baseline point picked on the month before)
and counts the chains where B costs less than A in real waits, more, or the same.
"""
import argparse
import contextlib
import datetime
import glob
import io
import json
import os
import re
import sys

MODEL = ".mirage-model"
AGENTS = ("moe", "pg", "dqn", "residual")
EPS = 1e-6


def agent_of(name):
    return os.path.basename(name)[: -len(MODEL)].rsplit("-", 1)[1] if name.endswith(MODEL) else name


class World:
    """One world's campaign figures of one case."""

    def __init__(self, d, key):
        self.key = key
        c = d["campaign"]
        self.g, self.work = c["gpus_per_segment"], c["work_h"]
        block = d if key == "replay" else d["logged_world"]
        self.pol = {n: p["campaign"] for n, p in block["policies"].items() if "campaign" in p}
        self.pick = d.get("forward_pick", {}).get("worlds", {}).get(key, {})
        why = block.get("no_figures") if key == "logged" else None
        if why and why.startswith("logged world: "):
            why = why[len("logged world: "):]
        if why and why.startswith("no figures: "):
            why = why[len("no figures: "):]
        reactive = self.pol.get("reactive")
        if not why and (not reactive or reactive["compared"] == 0):
            why = self.pick.get("no_figures") or "no campaign that every point finished"
        self.no_figures = why
        self.n = 0 if why else reactive["compared"]

    def cost(self, name):
        m = self.pol[name]
        return (m["makespan_h"] - self.work) * self.g + (m["charged_gpu_h"] - self.work * self.g)

    def figures(self, name):
        m = self.pol[name]
        return m["makespan_h"], m["charged_gpu_h"]

    def names(self, models):
        return [n for n in self.pol if n != "oracle" and n.endswith(MODEL) == models]

    def share(self, name):
        """The share of the oracle's gain over reactive this point captures (None: no gain)."""
        gain = self.cost("reactive") - self.cost("oracle")
        return (self.cost("reactive") - self.cost(name)) / gain if gain > EPS else None

    def forward_pick(self):
        """The baseline point least costly on the month before (models aside: that month is in
        their training window); None when the earlier window compared none."""
        there = [p for p in self.pick.get("there", []) if not p["policy"].endswith(MODEL)]
        if not there:
            return None
        best = min(there, key=lambda p: (round(p["cost"], 6), p["policy"] != "reactive", p["charged"]))
        return best["policy"]

    def hindsight(self):
        return min(self.names(False), key=lambda n: (round(self.cost(n), 6), n != "reactive"))

    def dominated(self, name):
        mk, ch = self.figures(name)
        for b in self.names(False):
            bm, bc = self.figures(b)
            if bm <= mk + EPS and bc <= ch + EPS and (bm < mk - EPS or bc < ch - EPS):
                return b
        return None

    def earns(self, name):
        """Whether a model is the least-cost point, or on the frontier and cheaper than the
        forward pick."""
        # Ties go to the baseline (reactive first), as in mirage eval's own pick: a model that
        # decides as reactive earns nothing.
        c = self.cost(name)
        if c < self.cost(self.hindsight()) - EPS:
            return "least cost"
        fp = self.forward_pick()
        if not self.dominated(name) and fp and c < self.cost(fp) - EPS:
            return "on the frontier, cheaper than the forward pick"
        return None


def load(dir_):
    cases = []
    for path in sorted(glob.glob(os.path.join(dir_, "*-*-*.json"))):
        stem = os.path.basename(path)[:-5]
        name, chain, overlap = stem.rsplit("-", 2)
        if overlap not in ("concurrent", "handoff"):
            continue
        d = json.load(open(path))
        cases.append({"trace": name, "label": d["bench"]["label"], "chain": int(chain),
                      "overlap": overlap, "wall_s": d["bench"]["wall_s"],
                      "left_out": d["bench"].get("left_out", []),
                      "unit": "GPU-h" if d["campaign"]["gpus_known"] else "node-h",
                      "worlds": {w: World(d, w) for w in ("replay", "logged")}})
    order = ["ls6", "sdsc", "kth", "ctc", "hpc2n", "theta"]
    cases.sort(key=lambda c: (order.index(c["trace"]) if c["trace"] in order else 99, c["chain"],
                              c["overlap"]))
    return cases


def trace_rows():
    """bench/trace_windows.sh's traces: (name, the log's name in labels, chain sizes)."""
    return re.findall(r'^\s*"([a-z0-9]+)\|([^,|]*)[^|]*\|[^"]*\|([0-9 ]+)"', open(os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "trace_windows.sh")).read(), re.M)


def expected_chains():
    """Every chain the bench judges (bench/trace_windows.sh's traces and chain sizes, each with
    both overlap modes), as (trace, chain, overlap): a chain not measured counts as not earned."""
    return [(name, int(n), o) for name, _, sizes in trace_rows() for n in sizes.split()
            for o in ("concurrent", "handoff")]


# ---- rows kept from the page: cases this run did not measure ----------------------------------
# A run may judge only some chains (bench/learned_verdict.sh kth:8): the tables keep the page's
# rows of the others as they were measured, and the verdict counts them from the cases table.

def row_key(block, line):
    """A table row's case: (the log's name, chain, overlap) and, in the cases table, the world;
    None for a header or separator row."""
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    try:
        if block == "cases":
            return (cells[0].split(",")[0], int(cells[1]), cells[2], cells[3])
        if block == "standing":
            label, size, overlap = cells[0].rsplit(", ", 2)
            return (label.split(",")[0], int(size.split()[0]), overlap)
        label, size = cells[0].rsplit(", ", 1)
        return (label.split(",")[0], int(size.split()[0]))
    except (ValueError, IndexError):
        return None


def merged_block(block, new_text, old_text):
    """The block's rows of this run, with the old text's rows of every case this run did not
    measure, in the bench's order (trace, chain, overlap, world)."""
    order = [log for _, log, _ in trace_rows()]
    head, rows = [], {}
    for text, fresh in ((old_text, False), (new_text, True)):
        for line in text.splitlines():
            if not line.startswith("|"):
                continue
            key = row_key(block, line)
            if key is None:
                if fresh:
                    head.append(line)
                continue
            if fresh or key not in rows:
                rows[key] = line
    if len(head) < 2:  # a run with no row of this block (training: no log kept)
        head = [line for line in old_text.splitlines() if line.startswith("|")][:2]
    world = {"replay": 0, "logged": 1}
    ranked = sorted(rows, key=lambda k: (order.index(k[0]) if k[0] in order else 99, k[1:2],
                                         k[2:3], world.get(k[3], 2) if len(k) > 3 else 0))
    return "\n".join(head + [rows[k] for k in ranked]) + "\n"


def page_block(path, name):
    """The text the page holds between the markers of block `name` ("" where it has none)."""
    text = open(path).read()
    begin, end = f"<!-- learned_verdict.py writes: {name} -->", f"<!-- end: {name} -->"
    i, j = text.find(begin), text.find(end)
    return text[i + len(begin): j] if 0 <= i < j else ""


def table_counts(cases_text):
    """From a cases table: the chains it holds, those the real waits judge, those a model earns
    there, and those a model earns in the replay, each as a set of (log, chain, overlap)."""
    held, judged, earned, replay = set(), set(), set(), set()
    for line in cases_text.splitlines():
        key = row_key("cases", line) if line.startswith("|") else None
        if key is None:
            continue
        chain, world = key[:3], key[3]
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        held.add(chain)
        figures = not cells[5].startswith("no figures")
        yes = figures and cells[-1].startswith("yes")
        if world == "logged" and figures:
            judged.add(chain)
        if world == "logged" and yes:
            earned.add(chain)
        if world == "replay" and yes:
            replay.add(chain)
    return held, judged, earned, replay


def pct(x):
    return "-" if x is None else f"{100 * x:.0f}%".replace("-0%", "0%")


def point(w, n, unit):
    mk, ch = w.figures(n)
    return f"`{agent_of(n)}` {mk:.1f} h / {ch:.0f} {unit}"


def detail_rows(cases):
    print("| trace, month | chain | overlap | world | campaigns | reactive | oracle | "
          "baseline picked before: on the month, share | hindsight's baseline, share | "
          "models: makespan / charge, share, frontier | learned earns it? |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for c in cases:
        for key, w in c["worlds"].items():
            head = f"| {c['label']} | {c['chain']} | {c['overlap']} | {key} |"
            if w.no_figures:
                print(f"{head} 0 | no figures: {w.no_figures} |||||||")
                continue
            u = c["unit"]
            fp = w.forward_pick()
            fp_cell = f"{point(w, fp, u)}, {pct(w.share(fp))}" if fp else "no earlier campaign every point finished"
            hs = w.hindsight()
            models = []
            for m in w.names(True):
                by = w.dominated(m)
                models.append(f"{point(w, m, u)}, {pct(w.share(m))}, "
                              + (f"under `{by}`" if by else "on it"))
            earned = [f"`{agent_of(m)}` ({w.earns(m)})" for m in w.names(True) if w.earns(m)]
            n = str(w.n)
            if c["left_out"]:
                gone = [f"`{agent_of(p)}`" for p in c["left_out"] if p.endswith(MODEL)]
                n += (f" (without {len(c['left_out'])} points that ran away"
                      + (f", the models {', '.join(gone)} among them" if gone else "") + ")")
            print(f"{head} {n} | {point(w, 'reactive', u)} | {point(w, 'oracle', u)} | {fp_cell} | "
                  f"{point(w, hs, u)}, {pct(w.share(hs))} | {'; '.join(models) or 'no model'} | "
                  f"{'yes: ' + ', '.join(earned) if earned else 'no'} |")


def trained_in(log):
    """A training's wall and CPU time from its log ("" where there is none)."""
    text = open(log).read() if os.path.exists(log) else ""
    wall = re.findall(r"train wall ([0-9.]+) s", text)
    cpu = re.findall(r"CPU ([0-9.]+) s user \+ ([0-9.]+) s system", text)
    if not wall:
        return ""
    cell = f"{float(wall[-1]):.0f} s"
    if cpu:
        cell += f" ({float(cpu[-1][0]) + float(cpu[-1][1]):.0f} s CPU)"
    return cell


def training_times(dir_, cases):
    """Each model's training wall and CPU time, from the logs bench/learned_verdict.sh kept."""
    print("| chain | " + " | ".join(f"`{a}`" for a in AGENTS) + " |")
    print("|---|" + "---|" * len(AGENTS))
    seen = set()
    for c in cases:
        key = (c["trace"], c["chain"])
        if key in seen:
            continue
        seen.add(key)
        cells = []
        for agent in AGENTS:
            cell = trained_in(os.path.join(dir_, f"{c['trace']}-{c['chain']}-{agent}.log"))
            cells.append(cell or "not trained")
        print(f"| {c['label']}, {c['chain']} node{'s' if c['chain'] > 1 else ''} | " + " | ".join(cells) + " |")


def best_model(w):
    return min(w.names(True), key=w.cost) if w.names(True) else None


def summary_rows(cases):
    print("| chain | replay: best model / baseline picked before (share of the oracle's gain) | "
          "real waits: best model / baseline picked before | learning helps? |")
    print("|---|---|---|---|")
    for c in cases:
        cells, helps = [], []
        for key, w in c["worlds"].items():
            if w.no_figures:
                cells.append("no figures")
                continue
            m, fp = best_model(w), w.forward_pick()
            mc = f"`{agent_of(m)}` {pct(w.share(m))}" if m else "no model"
            fc = f"`{fp}` {pct(w.share(fp))}" if fp else "no pick"
            cells.append(f"{mc} / {fc}")
            if any(w.earns(n) for n in w.names(True)):
                helps.append(key if key == "replay" else "real waits")
        print(f"| {c['label']}, {c['chain']} node{'s' if c['chain'] > 1 else ''}, {c['overlap']} | "
              f"{cells[0]} | {cells[1]} | {'yes (' + ', '.join(helps) + ')' if helps else 'no'} |")


def comparison_rows(cases, a, b):
    """Agent `b` beside agent `a` (bench/learned_verdict.py --compare A B), chain by chain: each
    one's share of the oracle's gain in either world, the baseline point picked on the month
    before, and whether b costs less than a in real waits; then the count of each."""
    print(f"| chain | replay: `{a}` / `{b}` / baseline picked before | real waits: `{a}` / `{b}` / "
          f"baseline picked before | `{b}` against `{a}` in real waits |")
    print("|---|---|---|---|")
    tally = {"better": 0, "worse": 0, "the same": 0, "not judged": 0}
    for c in cases:
        cells, verdict, cost = [], "not judged", ""
        for key, w in c["worlds"].items():
            models = {agent_of(m): m for m in w.names(True)}
            if w.no_figures or a not in models or b not in models:
                cells.append("no figures" if w.no_figures else "no model")
                continue
            fp = w.forward_pick()
            cells.append(f"{pct(w.share(models[a]))} / {pct(w.share(models[b]))} / "
                         + (f"`{fp}` {pct(w.share(fp))}" if fp else "no pick"))
            if key == "logged":
                gap = w.cost(models[b]) - w.cost(models[a])
                verdict = "better" if gap < -EPS else "worse" if gap > EPS else "the same"
                cost = f" ({gap:+.1f} {c['unit']} of cost a campaign)" if verdict != "the same" else ""
        tally[verdict] += 1
        print(f"| {c['label']}, {c['chain']} node{'s' if c['chain'] > 1 else ''}, {c['overlap']} | "
              f"{cells[0]} | {cells[1]} | {verdict}{cost if verdict != 'not judged' else ''} |")
    print()
    print(f"`{b}` against `{a}` in real waits: " + ", ".join(f"{v} {k}" for k, v in tally.items()))


def best_baseline(cases):
    """The baseline point needing no file with the largest mean share over the chains the real
    waits judge; ties to reactive."""
    judged = [c["worlds"]["logged"] for c in cases if not c["worlds"]["logged"].no_figures]
    shares = {}
    for w in judged:
        for n in w.names(False):
            if n.startswith("quantile"):
                continue
            s = w.share(n)
            shares.setdefault(n, []).append(0.0 if s is None else s)
    full = {n: sum(v) / len(v) for n, v in shares.items() if len(v) == len(judged)}
    if not full:
        return "reactive", 0.0, []
    ranked = sorted(full, key=lambda n: (-round(full[n], 9), n != "reactive"))
    # A knob at zero is the policy itself: name it plainly.
    plain = lambda n: n[:-2] if n.endswith("@0") else n
    return plain(ranked[0]), full[ranked[0]], [(plain(n), full[n]) for n in ranked[:4]]


def state_in_example(path, policy):
    """The example config a user copies states the compiled default ([policy] default)."""
    if not os.path.exists(path):
        return
    text = open(path).read()
    line = re.search(r'^default = "[^"]*" *(#.*)$', text, re.M)
    if line:
        new = f'default = "{policy}"'.ljust(28) + " " + line.group(1)
        open(path, "w").write(text[: line.start()] + new + text[line.end():])


def printed(fn, *args):
    """What fn(*args) prints, as a string."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        fn(*args)
    return out.getvalue()


def write_page(path, blocks):
    """Replaces each block the page `path` marks with its text; a page that marks none is an
    error (a wrong path, or markers lost in an edit)."""
    text = open(path).read()
    written = 0
    for name, body in blocks.items():
        begin, end = f"<!-- learned_verdict.py writes: {name} -->", f"<!-- end: {name} -->"
        i, j = text.find(begin), text.find(end)
        if i < 0 or j < i:
            continue
        text = text[: i + len(begin)] + "\n" + body.rstrip("\n") + "\n" + text[j:]
        written += 1
    if not written:
        sys.exit(f"learned_verdict: {path}: no block marked <!-- learned_verdict.py writes: NAME -->")
    open(path, "w").write(text)


def runaway(path):
    """The points that left a campaign incomplete in a world that compared none (empty when each
    world with samples compared some)."""
    d = json.load(open(path))
    worlds = [d] + ([d["logged_world"]] if "policies" in d.get("logged_world", {}) else [])
    worlds = [b for b in worlds if not b.get("no_figures") and "reactive" in b["policies"]]
    if all(b["policies"]["reactive"].get("campaign", {}).get("compared", 0) > 0 for b in worlds):
        return []
    return sorted({n for b in worlds for n, p in b["policies"].items()
                   if n != "oracle" and p.get("campaign", {}).get("incomplete", 0) > 0})


def read_verdict(path):
    """The verdict file's keys (policy, counts), or None where there is none."""
    if not os.path.exists(path):
        return None
    out = {}
    for line in open(path):
        m = re.match(r'^(\w+) = "?([^"\n]*)"?$', line.strip())
        if m:
            out[m.group(1)] = float(m.group(2)) if m.group(1).endswith("share") else m.group(2)
    return out if "policy" in out else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", nargs="?")
    ap.add_argument("--runaway", metavar="EVAL_JSON",
                    help="print the points to judge this case again without, and stop")
    ap.add_argument("--verdict", help="write the verdict (TOML) here for the build")
    ap.add_argument("--page", action="append", default=[],
                    help="write the tables and the verdict into this page (repeatable)")
    ap.add_argument("--keep-page", metavar="PAGE",
                    help="keep this page's rows of the chains DIR does not hold, and count them")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"),
                    help="print agent B beside agent A chain by chain, and stop")
    a = ap.parse_args()
    if a.runaway:
        print(",".join(runaway(a.runaway)))
        return
    if not a.dir:
        ap.error("DIR is required")
    cases = load(a.dir)
    if not cases:
        sys.exit(f"learned_verdict: no eval JSON in {a.dir}")
    if a.compare:
        comparison_rows(cases, *a.compare)
        return
    blocks = {"cases": printed(detail_rows, cases), "standing": printed(summary_rows, cases),
              "training": printed(training_times, a.dir, cases)}
    if a.keep_page:
        blocks = {name: merged_block(name, text, page_block(a.keep_page, name))
                  for name, text in blocks.items()}
    print(blocks["cases"])
    print(blocks["standing"])
    print(blocks["training"], end="")
    held, judged, earned, replay = table_counts(blocks["cases"])
    log_of = {name: log for name, log, _ in trace_rows()}
    expected = [(log_of[t], n, o) for t, n, o in expected_chains()]
    chains = len(held | set(expected))
    missing = [k for k in expected if k not in held]
    this_run = {(log_of.get(c["trace"], c["trace"]), c["chain"], c["overlap"]) for c in cases}
    kept = sorted(held - this_run, key=lambda k: expected.index(k) if k in expected else len(expected))
    learned = 2 * len(earned) >= chains
    policy, share, runners = best_baseline(cases)
    run_judged = sum(1 for c in cases if not c["worlds"]["logged"].no_figures)
    name = lambda k: f"{k[0]} {k[1]}-node {k[2]}"
    lines = [f"verdict: learned agents earn {len(earned)} of {chains} chains in real waits "
             f"({len(held)} measured, {len(judged)} of them judged there; in the replay "
             f"{len(replay)})"]
    if kept:
        lines.append(f"verdict: kept as the page had them, from an earlier run ({len(kept)} "
                     "chains): " + ", ".join(map(name, kept)))
    if missing:
        lines.append("verdict: not measured (counted as not earned): " + ", ".join(map(name, missing)))
    # The best baseline is chosen over every chain the real waits judge, which needs each one's
    # figures for every point: where some are kept rows, the default chosen with them stays.
    partial = bool(judged & set(kept))
    previous = read_verdict(a.verdict) if a.verdict and partial else None
    ranked = (f"`{policy}`, the baseline with the largest mean share of the oracle's gain "
              f"({pct(share)}) over the {run_judged} chain(s) the real waits judge"
              + (" in this run" if partial else "") + "; the next: "
              + ", ".join(f"`{n}` {pct(v)}" for n, v in runners[1:]))
    if learned:
        lines.append("verdict: a learned agent should be the default: ship its model and name it")
    elif previous:
        chosen_over = previous.get("policy_chosen_over", previous.get("judged_in_real_waits"))
        lines.append(f"verdict: the default stays `{previous['policy']}`, chosen over the "
                     f"{chosen_over} chains the real waits judged when it was chosen; this run's "
                     f"best: {ranked}")
        policy, share = previous["policy"], previous.get("policy_mean_oracle_share", 0.0)
        run_judged = int(chosen_over)
    else:
        lines.append(f"verdict: the default is {ranked}")
    print()
    print("\n".join(lines))
    blocks["verdict"] = "```\n" + "\n".join(lines) + "\n```\n"
    for page in a.page:
        write_page(page, blocks)
    if a.verdict and not learned:
        state_in_example(os.path.join(os.path.dirname(a.verdict), "mirage.example.toml"), policy)
        with open(a.verdict, "w") as f:
            f.write("# Written by bench/learned_verdict.sh from its figures "
                    "(docs/results/learned-agents.md), not by hand;\n"
                    "# the build compiles it in as the default policy of new campaigns.\n")
            f.write(f'policy = "{policy}"\n')
            f.write(f"learned_earned_chains = {len(earned)}\n")
            f.write(f"chains = {chains}\n")
            f.write(f"judged_in_real_waits = {len(judged)}\n")
            f.write(f"policy_mean_oracle_share = {share:.3f}\n")
            f.write(f"policy_chosen_over = {run_judged}\n")
            f.write(f'measured = "{datetime.date.today().isoformat()}"\n')


if __name__ == "__main__":
    main()
