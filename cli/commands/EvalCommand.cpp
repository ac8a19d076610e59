// mirage eval: every policy on the same chaining episodes of a trace, with Mirage's metrics.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "ClusterOptions.h"
#include "Commands.h"
#include "EpisodeOptions.h"
#include "ForwardPick.h"
#include "Progress.h"
#include "SampleTraces.h"
#include "TimeFlags.h"
#include "TraceReplay.h"
#include "Validators.h"
#include "WaitFit.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/agents/LoggedWaits.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/RiskFrontier.h"
#include "mirage/agents/Verdict.h"
#include "mirage/agents/WorldComparison.h"
#include "mirage/core/Error.h"

namespace mirage::cli {
namespace {

// The forward pick's default window: about a month of sample times.
constexpr Seconds kPickBefore = 28 * kDay;

struct EvalOptions {
  std::string trace;
  TraceOptions trace_options;
  ClusterOptions cluster;
  EpisodeOptions episode;
  int segments = 2;
  std::string decision_interval = "10m";
  std::string fallback_lead = "1m";
  bool tick = false;
  std::string policies = "reactive,average,oracle";
  bool sweep_risk = false;
  std::string save_frontier;  // with --sweep-risk: the Pareto points, for the daemon
  std::string work;           // empty: boundaries only
  std::string checkpoint_every = "30m";
  std::string restart_overhead = "10m";
  std::string wait_distribution;  // quantile's, from `mirage trace waits`; empty: fitted
  std::string pick_before;        // the forward pick's window; empty: kPickBefore where one is made
  int threads = 0;
  bool json = false;
  std::string out;
};

nlohmann::json to_json(const BucketMetrics& m) {
  return {{"samples", m.samples},
          {"boundaries", m.boundaries},
          {"censored", m.censored},
          {"censored_min_interruption_h", m.censored_min_interruption_h},
          {"mean_interruption_h", m.mean_interruption_h},
          {"zero_interruption_share", m.zero_interruption_share},
          {"mean_overlap_h", m.mean_overlap_h},
          {"p90_interruption_h", m.p90_interruption_h},
          {"interruption_reduction", m.interruption_reduction}};
}

nlohmann::json to_json(const CampaignMetrics& m) {
  return {{"compared", m.compared},           {"incomplete", m.incomplete},
          {"makespan_h", m.makespan_h},       {"stretch", m.stretch},
          {"segments", m.segments},           {"idle_gpu_h", m.idle_gpu_h},
          {"overlap_gpu_h", m.overlap_gpu_h}, {"restart_gpu_h", m.restart_gpu_h},
          {"redo_gpu_h", m.redo_gpu_h},       {"charged_gpu_h", m.charged_gpu_h}};
}

// Every policy's metrics (and campaign costs, and same-decision notes) of one world.
nlohmann::json policies_json(const EvalReport& r) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, m] : r.metrics) {
    nlohmann::json p = to_json(m.overall);
    for (const auto& [bucket, bm] : m.buckets) p["buckets"][bucket] = to_json(bm);
    if (!p.contains("buckets")) p["buckets"] = nlohmann::json::object();
    if (const auto it = r.campaign.find(name); it != r.campaign.end())
      p["campaign"] = to_json(it->second);
    if (const auto it = r.decides_as.find(name); it != r.decides_as.end())
      p["decides_as"] = it->second;
    out[name] = p;
  }
  return out;
}

// How the logged world was made and what it left out, for JSON.
nlohmann::json logged_world_json(const EvalReport& r, const EvalConfig& c) {
  nlohmann::json j = {{"samples", r.sample_times.size()},
                      {"window_s", c.logged_window},
                      {"real_jobs_per_wait", c.logged_jobs},
                      {"shape_jobs_in_log", r.logged_shape_jobs},
                      {"limit_floor_s", r.logged_limit_floor},
                      {"pooled", !r.logged_pooling.empty()},
                      {"dropped_too_few_real_jobs", r.dropped_few_logged_jobs},
                      {"log_has_starts", r.log_has_starts},
                      {"policies", policies_json(r)}};
  if (const auto lacks = world_lacks_data(r)) j["no_figures"] = *lacks;
  return j;
}

// The whole-campaign costs checked against what the flags ask: one clear line for each misfit.
CampaignWork campaign_work(const EvalOptions& o, const ChainSpec& chain) {
  CampaignWork w;
  if (o.work.empty()) return w;
  w.work = parse_hours_flag(o.work, "--work");
  w.checkpoint_every = parse_nonnegative_duration_flag(o.checkpoint_every, "--checkpoint-every");
  w.restart_overhead = parse_nonnegative_duration_flag(o.restart_overhead, "--restart-overhead");
  if (w.restart_overhead >= chain.runtime)
    throw InputError({"", 0, "--restart-overhead"},
                     fmt::format("{} is not shorter than a segment ({}): no segment after the "
                                 "first would make progress",
                                 format_short_duration(w.restart_overhead),
                                 format_short_duration(chain.runtime)));
  if (w.work <= chain.runtime)
    throw InputError(
        {"", 0, "--work"},
        fmt::format("{} of work fits in one segment ({}): a campaign of one segment "
                    "has no boundary to judge",
                    format_short_duration(w.work), format_short_duration(chain.runtime)));
  return w;
}

void print_campaign(const EvalReport& r, const EvalConfig& c, const EvalOptions& o,
                    const std::vector<std::string>& order, std::size_t width) {
  const CampaignWork& w = c.episode.campaign;
  const std::string unit = r.gpus_known ? "GPU-h" : "node-h";
  fmt::print(
      "\nwhole campaign{} ({}): {} of work in {} segments, {} {} a segment, {}, {} to "
      "restart; {} start time(s) compared (those where every policy finished its campaign)\n",
      r.world == SuccessorWait::kLogged ? ", logged world" : "", o.episode.overlap,
      format_short_duration(w.work), format_short_duration(c.episode.chain.time_limit),
      r.gpus_per_segment, r.gpus_known ? "GPUs" : "nodes (GPUs per node not given)",
      w.checkpoint_every > 0 ? "a checkpoint every " + format_short_duration(w.checkpoint_every)
                             : std::string("a checkpoint at each hand-off"),
      format_short_duration(w.restart_overhead), r.campaign.begin()->second.compared);
  if (r.campaign.begin()->second.compared == 0) {
    std::string incomplete;
    for (const auto& name : order)
      incomplete += fmt::format("{}{} {}", incomplete.empty() ? "" : ", ", name,
                                r.campaign.at(name).incomplete);
    fmt::print(
        "  no figures: at no start time did every policy finish its campaign (incomplete: "
        "{})\n",
        incomplete);
    return;
  }
  fmt::print("  {:<{}} {:>10} {:>8} {:>9} {:>12} {:>12} {:>12} {:>12} {:>11}\n", "policy", width,
             "makespan", "stretch", "segments", "idle " + unit, "overlap " + unit,
             "restart " + unit, "charged " + unit, "incomplete");
  for (const auto& name : order) {
    const CampaignMetrics& m = r.campaign.at(name);
    fmt::print(
        "  {:<{}} {:>8.1f} h {:>8.3f} {:>9.2f} {:>12.1f} {:>12.1f} {:>12.1f} {:>12.1f} {:>11}\n",
        name, width, m.makespan_h, m.stretch, m.segments, m.idle_gpu_h, m.overlap_gpu_h,
        m.restart_gpu_h, m.charged_gpu_h, m.incomplete);
  }
}

void print_same_decisions(const EvalReport& r, const std::vector<std::string>& order) {
  bool first = true;
  for (const auto& name : order)
    if (const auto it = r.decides_as.find(name); it != r.decides_as.end()) {
      if (first) fmt::print("\n");
      first = false;
      fmt::print("note: {} submitted exactly as {} on every boundary of every sample\n", name,
                 it->second);
    }
}

// One point of a risk sweep: a policy at one lead.
struct FrontierPoint {
  std::string policy, family;
  std::string risk;  // the knob's setting ("2h", "0.5"); empty: a policy without a knob
  const BucketMetrics* m = nullptr;
  const CampaignMetrics* campaign = nullptr;
  bool pareto = false;  // no other point (the oracle aside) interrupts and overlaps less
};

// --sweep-risk: each policy with a knob at every lead of its sweep; the others as they are.
std::vector<std::string> swept_policies(const std::vector<std::string>& policies) {
  std::vector<std::string> out;
  for (const auto& p : policies) {
    const auto points = risk_sweep(parse_policy_spec(p).family);
    if (points.empty())
      out.push_back(p);
    else
      out.insert(out.end(), points.begin(), points.end());
  }
  return out;
}

// What a point is judged by: per boundary, interruption and overlap; with --work, what whole
// campaigns cost (makespan and GPU-hours charged), which also counts what a hand-off cuts from
// the predecessor and the restarts, invisible in a boundary's overlap.
std::pair<double, double> frontier_costs(const FrontierPoint& f) {
  if (f.campaign && f.campaign->compared > 0)
    return {f.campaign->makespan_h, f.campaign->charged_gpu_h};
  return {f.m->mean_interruption_h, f.m->mean_overlap_h};
}

std::vector<FrontierPoint> frontier(const EvalReport& r, const std::vector<std::string>& order) {
  std::vector<FrontierPoint> points;
  for (const auto& name : order) {
    const PolicySpec spec = parse_policy_spec(name);
    const std::string risk =
        spec.family.size() < name.size() ? name.substr(spec.family.size() + 1) : "";
    FrontierPoint f{name, spec.family, risk, &r.metrics.at(name).overall, nullptr, false};
    if (const auto it = r.campaign.find(name); it != r.campaign.end()) f.campaign = &it->second;
    points.push_back(f);
  }
  for (FrontierPoint& a : points) {
    if (a.policy == kOracleName) continue;
    a.pareto = std::none_of(points.begin(), points.end(), [&](const FrontierPoint& b) {
      if (b.policy == kOracleName || &a == &b) return false;
      const auto [bi, bo] = frontier_costs(b);
      const auto [ai, ao] = frontier_costs(a);
      return bi <= ai && bo <= ao && (bi < ai || bo < ao);
    });
  }
  return points;
}

// `unit`: "GPU-h", or "node-h" where the machine's GPUs per node are not known.
void print_frontier(const std::vector<FrontierPoint>& points, std::size_t width,
                    const std::string& unit) {
  const bool campaign = !points.empty() && points.front().campaign;
  fmt::print("\nrisk frontier ({}, the oracle aside)\n  {:<{}} {:>12} {:>9} {:>11} {:>11}{}\n",
             campaign ? "* : no other policy's campaigns finish sooner and are charged less"
                      : "per boundary; * : no other policy interrupts and overlaps less",
             "policy", width, "mean int.", "zero int.", "overlap", "int.+ovl.",
             campaign ? fmt::format(" {:>10} {:>16}", "makespan", "charged " + unit) : "");
  for (const FrontierPoint& f : points)
    fmt::print("{} {:<{}} {:>10.2f} h {:>8.1f}% {:>9.2f} h {:>9.2f} h{}\n", f.pareto ? "*" : " ",
               f.policy, width, f.m->mean_interruption_h, 100 * f.m->zero_interruption_share,
               f.m->mean_overlap_h, f.m->mean_interruption_h + f.m->mean_overlap_h,
               f.campaign ? fmt::format(" {:>8.1f} h {:>16.1f}", f.campaign->makespan_h,
                                        f.campaign->charged_gpu_h)
                          : "");
}

// Writes a gnuplot script (its data inline) and renders it; without gnuplot, says where the
// script is.
void render_plot(const std::filesystem::path& script, const std::string& text) {
  std::ofstream(script) << text;
  const std::string cmd = "gnuplot '" + script.string() + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0)
    fmt::print(stderr, "mirage eval: gnuplot not available; the plot script is {}\n",
               script.string());
}

// The frontier as an SVG (gnuplot): interruption against overlap, one line per family.
void write_frontier_plot(const std::filesystem::path& dir,
                         const std::vector<FrontierPoint>& points) {
  std::map<std::string, std::vector<const FrontierPoint*>> families;
  for (const FrontierPoint& f : points) families[f.family].push_back(&f);
  std::ostringstream gp;
  int k = 0;
  for (const auto& [family, fs] : families) {
    gp << "$f" << k++ << " << EOD\n";
    for (const FrontierPoint* f : fs)
      gp << f->m->mean_overlap_h << ' ' << f->m->mean_interruption_h << '\n';
    gp << "EOD\n";
  }
  gp << "set terminal svg size 800,600 dynamic noenhanced font 'sans,11'\n"
     << "set output '" << (dir / "risk_frontier.svg").string() << "'\n"
     << "set title 'Risk frontier: mean interruption against mean overlap per boundary'\n"
     << "set xlabel 'overlap (h)'\nset ylabel 'interruption (h)'\nset grid\nset key top right\n"
     << "plot ";
  k = 0;
  for (const auto& [family, fs] : families) {
    gp << (k > 0 ? ", " : "") << "$f" << k << " using 1:2 with linespoints lw 2 title '" << family
       << "'";
    ++k;
  }
  gp << "\n";
  render_plot(dir / "risk_frontier.gp", gp.str());
}

// `width`: the policy column, wide enough for the longest name (model files have long ones).
// The means are over the finished boundaries; the censored ones are counted apart, with the
// interruption they had reached when cut off (at least that much).
void print_row(const std::string& name, std::size_t width, const BucketMetrics& m) {
  fmt::print("  {:<{}} {:>8} {:>10.2f} h {:>8.1f}% {:>9.2f} h {:>8.2f} h {:>9.1f}%  {}\n", name,
             width, m.boundaries, m.mean_interruption_h, 100 * m.zero_interruption_share,
             m.mean_overlap_h, m.p90_interruption_h, 100 * m.interruption_reduction,
             m.censored == 0
                 ? std::string("-")
                 : fmt::format("{} (int. >= {:.1f} h)", m.censored, m.censored_min_interruption_h));
}

void write_samples_csv(const std::filesystem::path& path, const EvalReport& r,
                       const ChainSpec& chain) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f << "policy,sample_time,bucket,boundary,predecessor_submit,predecessor_start,predecessor_end,"
       "successor_submit,successor_start,gap_s,interruption_s,overlap_s,truncated\n";
  for (const auto& [name, outs] : r.outcomes)
    for (const auto& o : outs)
      for (std::size_t k = 0; k < o.episode.boundaries.size(); ++k) {
        const auto& b = o.episode.boundaries[k];
        f << name << ',' << format_iso_time(o.sample_time) << ',' << o.bucket << ',' << k << ','
          << format_iso_time(b.predecessor_submit) << ',' << format_iso_time(b.predecessor_start)
          << ',' << format_iso_time(b.predecessor_end) << ',' << format_iso_time(b.successor_submit)
          << ',' << format_iso_time(b.successor_start) << ',' << b.gap() << ',' << b.interruption()
          << ',' << b.overlap(chain) << ',' << (b.truncated ? 1 : 0) << '\n';
      }
}

// Both worlds side by side, one row per policy (overall figures), with the disagreement flag.
void write_worlds_csv(const std::filesystem::path& path, const EvalReport& replay,
                      const EvalReport& logged, const std::vector<std::string>& order) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f << "policy,samples,replay_mean_interruption_h,logged_mean_interruption_h,"
       "replay_mean_overlap_h,logged_mean_overlap_h,replay_censored,logged_censored,disagree\n";
  if (world_lacks_data(replay) || world_lacks_data(logged)) return;
  for (const WorldRow& row : compare_worlds(replay, logged, order))
    f << row.policy << ',' << logged.sample_times.size() << ',' << row.replay.mean_interruption_h
      << ',' << row.logged.mean_interruption_h << ',' << row.replay.mean_overlap_h << ','
      << row.logged.mean_overlap_h << ',' << row.replay.censored << ',' << row.logged.censored
      << ',' << (row.disagree ? 1 : 0) << '\n';
}

// Every submission instant the oracle tried, per sample and boundary, with what it would have
// given: the data to weigh other trade-offs than the oracle's smallest |gap|.
void write_oracle_instants_csv(const std::filesystem::path& path, const EvalReport& r,
                               const ChainSpec& chain) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path.string());
  f << "sample_time,bucket,boundary,successor_submit,gap_s,interruption_s,overlap_s\n";
  for (const auto& o : r.outcomes.at(std::string(kOracleName)))
    for (const WhatIfSubmission& w : o.what_ifs) {
      BoundaryOutcome b;
      b.successor_start = w.gap;  // measured from a predecessor end of 0
      f << format_iso_time(o.sample_time) << ',' << o.bucket << ',' << w.boundary << ','
        << format_iso_time(w.submit) << ',' << w.gap << ',' << b.interruption() << ','
        << b.overlap(chain) << '\n';
    }
}

// A gnuplot script with the data inline: CDF of the gap (hours) per policy, one panel for all
// samples and one per load bucket. Rendered to SVG when gnuplot is installed.
void write_plot(const std::filesystem::path& dir, const EvalReport& r) {
  const std::vector<std::string> panels = {"all", "low", "medium", "heavy"};
  // Datablocks by number: a policy's name ("forecast-recent", "average@2h", a model's path) is
  // no gnuplot identifier.
  std::map<std::string, int> block;
  for (const auto& [name, outs] : r.outcomes) block.emplace(name, static_cast<int>(block.size()));
  std::ostringstream gp;
  for (const auto& [name, outs] : r.outcomes)
    for (const auto& panel : panels) {
      std::vector<double> gaps;
      for (const auto& o : outs)
        if (panel == "all" || o.bucket == panel)
          for (const auto& b : o.episode.boundaries)
            gaps.push_back(static_cast<double>(b.gap()) / 3600);
      std::sort(gaps.begin(), gaps.end());
      gp << "$p" << block.at(name) << "_" << panel << " << EOD\n";
      for (std::size_t i = 0; i < gaps.size(); ++i)
        gp << gaps[i] << ' ' << static_cast<double>(i + 1) / static_cast<double>(gaps.size())
           << '\n';
      if (gaps.empty()) gp << "NaN NaN\n";
      gp << "EOD\n";
    }
  gp << "set terminal svg size 1600,420 dynamic noenhanced font 'sans,11'\n"
     << "set output '" << (dir / "gap_cdf.svg").string() << "'\n"
     << "set multiplot layout 1,4 title 'CDF of the gap (successor start - predecessor end)'\n"
     << "set xlabel 'gap (h)'\nset ylabel 'share of samples'\nset yrange [0:1]\nset grid\n"
     << "set key bottom right\n";
  for (const auto& panel : panels) {
    gp << "set title '" << panel << "'\nplot ";
    bool first = true;
    for (const auto& [name, outs] : r.outcomes) {
      gp << (first ? "" : ", ") << "$p" << block.at(name) << "_" << panel
         << " using 1:2 with steps lw 2 title '" << name << "'";
      first = false;
    }
    gp << "\n";
  }
  gp << "unset multiplot\n";
  render_plot(dir / "gap_cdf.gp", gp.str());
}

int run_eval(const EvalOptions& o) {
  Trace trace = read_trace_or_sample(o.trace, o.trace_options);
  if (trace.jobs.empty()) throw InputError({trace.source, 0, ""}, "no jobs in the trace");

  EvalConfig c;
  c.cluster = o.cluster.to_spec(trace);
  const std::vector<SuccessorWait> worlds = o.episode.worlds();
  c.yardstick_log = o.episode.logged_yardstick(trace, c.cluster);
  o.cluster.calibrate(trace, c.cluster);
  o.episode.apply(c.episode, c.cluster);
  c.episode.chain.segments = o.segments;
  c.episode.decision_interval = parse_duration_flag(o.decision_interval, "--decision-interval");
  c.episode.fallback_at_decision = o.tick;
  c.episode.reactive_lead = parse_duration_flag(o.fallback_lead, "--fallback-lead");
  c.episode.campaign = campaign_work(o, c.episode.chain);
  // Without a window: from a day into the log (a queue has built up) to its last submission;
  // samples whose episode runs past the log are dropped as always.
  c.from = o.episode.from_time().value_or(trace.jobs.front().submit + kDay);
  c.to = o.episode.to_time().value_or(trace.jobs.back().submit);
  if (c.to <= c.from) {
    // Name the flag the user gave: a --from past the log is --from's fault, not --to's.
    const bool to_given = o.episode.to_time().has_value();
    if (to_given)
      throw InputError({"", 0, "--to"}, "must be after --from (" + format_iso_time(c.from) + ")");
    throw InputError({"", 0, "--from"}, "must be before the log's last submission, " +
                                            format_iso_time(c.to) + " (or give --to)");
  }
  c.every = o.episode.spacing();
  // The policy to use is chosen forward, on earlier sample times, unless --pick-before 0 says
  // not to (a log too short for them says so and is judged in hindsight).
  const bool pick_given = !o.pick_before.empty();
  const Seconds pick_length =
      pick_given ? parse_nonnegative_duration_flag(o.pick_before, "--pick-before") : kPickBefore;
  c.start_mode = o.episode.start_mode();
  c.threads = o.threads;
  std::stringstream ss(o.policies);
  for (std::string p; std::getline(ss, p, ',');)
    if (!p.empty()) {
      if (const PolicySpec spec(p); !is_known_policy(spec))
        (void)make_policy(spec);  // throws the clear error
      c.policies.push_back(p);
    }
  if (o.sweep_risk) c.policies = swept_policies(c.policies);
  std::optional<IntervalCoverage> coverage;
  if (std::any_of(c.policies.begin(), c.policies.end(), reads_wait_distribution)) {
    c.context.waits =
        wait_distribution_for(trace, c.cluster, c.episode.chain, c.from, o.wait_distribution);
    coverage = check_wait_intervals(*c.context.waits, trace, c.cluster, c.episode.chain.nodes,
                                    c.from, c.to);
  }

  o.episode.apply_logged_waits(c);
  std::vector<EvalReport> reports;
  for (const SuccessorWait world : worlds) {
    c.world = world;
    Progress progress(worlds.size() > 1 ? fmt::format("eval ({} world): episodes", to_string(world))
                                        : std::string("eval: episodes"));
    reports.push_back(
        evaluate(trace, c, [&](std::size_t d, std::size_t t) { progress.update(d, t); }));
    progress.finish();
  }
  EvalReport& r = reports.front();
  // Both worlds: the replay's figures on the samples the logged world kept, so that the two are
  // compared on the same ones.
  const EvalReport* logged_beside = reports.size() > 1 ? &reports.back() : nullptr;
  if (logged_beside && !logged_beside->sample_times.empty())
    keep_samples(r, logged_beside->sample_times, c);
  c.world = r.world;
  if (c.episode.campaign.active() && r.sample_times.empty() && r.dropped_few_logged_jobs == 0)
    throw InputError({"", 0, "--from"},
                     fmt::format("no start time in the window leaves room for a whole campaign: "
                                 "one may need {} of the log after it (widen the window or give "
                                 "less --work)",
                                 format_short_duration(c.episode.horizon())));
  if (r.dropped_past_horizon)
    fmt::print(stderr,
               "mirage eval: warning: {} sample(s) dropped: their episode would need trace data "
               "past the end of the log ({} after the sample time)\n",
               r.dropped_past_horizon, format_short_duration(c.episode.horizon()));
  if (r.truncated && c.episode.campaign.active())
    fmt::print(stderr,
               "mirage eval: warning: {} of reactive's campaigns cut off by the end of the log\n",
               r.truncated);
  else if (r.truncated)
    fmt::print(stderr,
               "mirage eval: note: {} of reactive's episodes censored (cut off at --max-wait {} or "
               "by the log's end): their boundaries are counted apart, not scored\n",
               r.truncated, o.episode.max_wait);
  // A segment longer than the stretches between the cluster's weekly boundaries starts only in
  // the few that fit it: the segment, more than the moment, is then the user's decision.
  if (c.cluster.boundaries) {
    const Seconds limit = c.episode.chain.time_limit;
    const double share = startable_share(*c.cluster.boundaries, c.from, limit);
    if (share < 0.5)
      fmt::print(stderr,
                 "mirage eval: note: the calibrated cluster lets no job run across its weekly "
                 "boundaries ({}): a {} segment may start in {:.0f}% of the week from --from on; "
                 "shorter segments that fit between them wait less\n",
                 describe_boundaries(*c.cluster.boundaries), format_short_duration(limit),
                 100 * share);
  }

  if (!o.out.empty()) {
    std::filesystem::create_directories(o.out);
    write_samples_csv(std::filesystem::path(o.out) / "samples.csv", r, c.episode.chain);
    if (r.outcomes.count(std::string(kOracleName)))
      write_oracle_instants_csv(std::filesystem::path(o.out) / "oracle_instants.csv", r,
                                c.episode.chain);
    write_plot(o.out, r);
  }
  std::vector<std::string> order = {"reactive"};
  for (const auto& p : c.policies)
    if (p != "reactive") order.push_back(p);
  std::optional<ForwardPick> pick;
  if (pick_length > 0) {
    std::vector<const EvalReport*> judged;
    for (const EvalReport& w : reports) judged.push_back(&w);
    pick = pick_forward(trace, c, judged, pick_length, pick_given, o.wait_distribution);
  }
  const std::string calibration_fit = o.cluster.describe_fit(trace.source);
  if (!o.out.empty() && logged_beside) {
    write_samples_csv(std::filesystem::path(o.out) / "samples_logged.csv", *logged_beside,
                      c.episode.chain);
    write_worlds_csv(std::filesystem::path(o.out) / "worlds.csv", r, *logged_beside, order);
  }
  std::vector<FrontierPoint> points;
  if (o.sweep_risk) {
    points = frontier(r, order);
    if (!o.out.empty()) write_frontier_plot(o.out, points);
    if (!o.save_frontier.empty()) {
      RiskFrontier saved{
          trace.source, c.episode.chain.nodes, c.episode.chain.time_limit, o.episode.overlap, {}};
      for (const FrontierPoint& f : points)
        if (f.pareto)
          saved.points.push_back({f.policy, f.m->mean_interruption_h, f.m->mean_overlap_h});
      write_risk_frontier(o.save_frontier, saved);
      fmt::print(stderr, "mirage eval: {} points of the frontier saved to {}\n",
                 saved.points.size(), o.save_frontier);
    }
  }
  if (o.json) {
    nlohmann::json j;
    j["trace"] = trace.source;
    j["samples"] = r.sample_times.size();
    j["dropped_past_horizon"] = r.dropped_past_horizon;
    j["wall_seconds"] = r.wall_seconds;
    j["successor_wait"] = o.episode.successor_wait;
    j["calibration_fit"] = calibration_fit;
    if (pick) j["forward_pick"] = forward_pick_json(*pick);
    j["policies"] = policies_json(r);
    if (r.world == SuccessorWait::kLogged) j["logged_world"] = logged_world_json(r, c);
    if (logged_beside) {
      j["logged_world"] = logged_world_json(*logged_beside, c);
      if (!world_lacks_data(*logged_beside))
        for (const WorldRow& row : compare_worlds(r, *logged_beside, order))
          if (row.disagree) j["worlds_disagree"].push_back(row.policy);
    }
    for (const FrontierPoint& f : points)
      j["frontier"].push_back(
          {{"policy", f.policy}, {"family", f.family}, {"risk", f.risk}, {"pareto", f.pareto}});
    if (o.sweep_risk && logged_beside && !world_lacks_data(*logged_beside)) {
      const std::vector<FrontierPoint> logged_points = frontier(*logged_beside, order);
      for (std::size_t i = 0; i < logged_points.size(); ++i)
        j["frontier"][i]["pareto_logged"] = logged_points[i].pareto;
    }
    if (coverage)
      j["wait_distribution"] = {{"fitted_jobs", c.context.waits->fitted_jobs()},
                                {"fitted_from", format_iso_time(c.context.waits->fitted_from())},
                                {"fitted_to", format_iso_time(c.context.waits->fitted_to())},
                                {"checked_jobs", coverage->jobs},
                                {"in_50_interval", coverage->in_50},
                                {"in_90_interval", coverage->in_90}};
    if (c.episode.campaign.active())
      j["campaign"] = {{"work_h", static_cast<double>(c.episode.campaign.work) / kHour},
                       {"checkpoint_every_s", c.episode.campaign.checkpoint_every},
                       {"restart_overhead_s", c.episode.campaign.restart_overhead},
                       {"gpus_per_segment", r.gpus_per_segment},
                       {"gpus_known", r.gpus_known},
                       {"overlap", o.episode.overlap}};
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  fmt::print("trace {}  machine {}  chain {} node(s) x {} segments, {} limit, {}  start {}\n",
             trace.source, c.cluster.describe(), c.episode.chain.nodes, c.episode.chain.segments,
             format_short_duration(c.episode.chain.time_limit), o.episode.overlap, o.episode.start);
  fmt::print("samples {} from {} every {} ({} dropped past the horizon); {:.1f} s\n",
             r.sample_times.size(), format_iso_time(c.from), o.episode.every,
             r.dropped_past_horizon, r.wall_seconds);
  fmt::print("{}\n", calibration_fit);
  for (const EvalReport& w : reports)
    if (w.world == SuccessorWait::kLogged)
      fmt::print(
          "logged world: a segment submitted at t waits {} of t; {} such jobs in the log; {} "
          "sample(s) dropped (too few of them near a segment's submission); {:.1f} s{}\n",
          w.logged_description, w.logged_shape_jobs, w.dropped_few_logged_jobs, w.wall_seconds,
          !logged_beside ? ""
          : logged_beside->sample_times.empty()
              ? "; the replay's figures are on all its samples"
              : "; the replay's figures are on the samples it kept");
  for (const EvalReport& w : reports)
    if (w.world == SuccessorWait::kLogged && !w.logged_pooling.empty())
      fmt::print("logged world {}\n", w.logged_pooling);
  if (r.world == SuccessorWait::kLogged) {
    if (const auto lacks = world_lacks_data(r)) {
      fmt::print("{}\n", *lacks);
      return 0;
    }
  }
  if (coverage)
    fmt::print(
        "quantile's wait distribution ({}): of the {} such jobs submitted in the window, the real "
        "wait fell in its 50% interval for {:.0f}%, in its 90% interval for {:.0f}%\n",
        c.context.waits->describe(), coverage->jobs, 100 * coverage->in_50, 100 * coverage->in_90);
  std::size_t width = 12;
  for (const auto& p : c.policies) width = std::max(width, p.size());
  // Whole-campaign costs, each world's that has figures.
  const auto print_campaigns = [&] {
    if (!c.episode.campaign.active()) return;
    print_campaign(r, c, o, order, width);
    if (logged_beside && !world_lacks_data(*logged_beside))
      print_campaign(*logged_beside, c, o, order, width);
  };
  if (o.sweep_risk) {
    print_frontier(points, width, r.gpus_known ? "GPU-h" : "node-h");
    print_campaigns();
    if (logged_beside) {
      std::map<std::string, std::pair<bool, bool>> marks;
      for (const FrontierPoint& f : points) marks[f.policy].first = f.pareto;
      if (!world_lacks_data(*logged_beside))
        for (const FrontierPoint& f : frontier(*logged_beside, order))
          marks[f.policy].second = f.pareto;
      fmt::print("{}", format_world_table(r, *logged_beside, order, width, marks));
    }
    if (pick) fmt::print("{}", format_forward_pick(*pick, width));
    print_same_decisions(r, order);
    if (!o.out.empty()) fmt::print("\nper-sample CSV and plots in {}\n", o.out);
    return 0;
  }
  for (const std::string& bucket :
       {std::string("overall"), std::string("low"), std::string("medium"), std::string("heavy")}) {
    fmt::print("\n{}\n  {:<{}} {:>8} {:>12} {:>9} {:>11} {:>10} {:>10}  {}\n", bucket, "policy",
               width, "finished", "mean int.", "zero int.", "overlap", "p90 int.", "reduction",
               "censored");
    bool any = false;
    for (const auto& name : order) {
      const PolicyMetrics& m = r.metrics.at(name);
      if (bucket == "overall") {
        print_row(name, width, m.overall);
        any = true;
      } else if (auto it = m.buckets.find(bucket); it != m.buckets.end()) {
        print_row(name, width, it->second);
        any = true;
      }
    }
    if (!any) fmt::print("  (no samples)\n");
  }
  const auto& reactive_outs = r.outcomes.at("reactive");
  const auto unknown = std::count_if(reactive_outs.begin(), reactive_outs.end(),
                                     [](const SampleOutcome& x) { return x.bucket == "unknown"; });
  if (unknown > 0)
    fmt::print(
        "\n{} sample(s) of unknown load (reactive's chain was cut off before it finished a "
        "boundary) count in `overall` only\n",
        unknown);
  print_campaigns();
  if (logged_beside) fmt::print("{}", format_world_table(r, *logged_beside, order, width));
  if (pick) fmt::print("{}", format_forward_pick(*pick, width));
  print_same_decisions(r, order);
  fmt::print("\n{}\n", describe(choose_policy(r, c.episode.chain),
                                r.world == SuccessorWait::kLogged ? "logged" : "replay"));
  if (logged_beside && !world_lacks_data(*logged_beside))
    fmt::print("{}\n", describe(choose_policy(*logged_beside, c.episode.chain), "logged"));
  if (!o.out.empty()) fmt::print("\nper-sample CSV and plot in {}\n", o.out);
  return 0;
}

}  // namespace

void register_eval_command(CLI::App& app) {
  auto o = std::make_shared<EvalOptions>();
  CLI::App* cmd = app.add_subcommand(
      "eval", "Evaluate submission policies on chaining episodes replayed from a trace");
  cmd->add_option("--trace", o->trace,
                  "Trace file (SWF, sacct; .gz read directly). Default: the embedded sample")
      ->transform(sample_trace())
      ->check(CLI::ExistingFile);
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd, /*command_has_segment=*/true);
  o->episode.add_to(*cmd, "4h", false);
  o->episode.add_successor_wait_to(*cmd);
  cmd->add_option("--segments", o->segments, "Segments in each chain (2: one boundary)")
      ->check(whole_number(2, 100))
      ->capture_default_str();
  cmd->add_option("--decision-interval", o->decision_interval,
                  "How often the policy is asked (and the queue snapshotted), e.g. 5m")
      ->capture_default_str();
  cmd->add_option("--fallback-lead", o->fallback_lead,
                  "The fallback submission, this long before the predecessor's limit (the "
                  "daemon's [policy] fallback_lead)")
      ->capture_default_str();
  cmd->add_flag("--tick", o->tick,
                "The fallback too waits for the next decision instant, as with `mirage tick` "
                "from scrontab every --decision-interval");
  cmd->add_option("--policies", o->policies,
                  "Comma-separated policy names (reactive, average, forecast, forecast-recent, "
                  "static, quantile, oracle) or model files; POLICY@LEAD sets a baseline's risk "
                  "knob (e.g. average@2h submits 2 h earlier than average would), quantile@LEVEL "
                  "the quantile of the successor's wait it submits at (e.g. 0.8), "
                  "MODEL@THRESHOLD a model's decision threshold")
      ->capture_default_str();
  cmd->add_flag("--sweep-risk", o->sweep_risk,
                "Evaluate each policy with a risk knob (average, forecast, forecast-recent, "
                "static: their lead; quantile: its level; a model file: its decision threshold) "
                "over its range, and print (and with --out plot) the frontier of interruption "
                "against overlap");
  cmd->add_option("--save-frontier", o->save_frontier,
                  "With --sweep-risk: write the frontier's points (a TOML file) for the daemon's "
                  "[policy] frontier, from which `campaign add --max-overlap` chooses")
      ->needs("--sweep-risk");
  cmd->add_option("--work", o->work,
                  "Judge whole campaigns: hours of compute (e.g. 336, or 14d) done in --time "
                  "segments chained until the work is done; adds makespan and GPU-hours "
                  "(node-hours where the trace gives no GPUs per node)")
      ->group("Whole campaign");
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "With --work: a segment stopped by a hand-off keeps its work up to its last "
                  "checkpoint (0: the stop itself checkpoints)")
      ->capture_default_str()
      ->group("Whole campaign");
  cmd->add_option("--restart-overhead", o->restart_overhead,
                  "With --work: each segment after the first spends this loading the checkpoint")
      ->capture_default_str()
      ->group("Whole campaign");
  cmd->add_option("--wait-distribution", o->wait_distribution,
                  "quantile's distribution of the successor's wait, from `mirage trace waits` "
                  "(default: fitted on the trace's 90 days before --from)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--pick-before", o->pick_before,
                  "The least-cost point (an hour waited, or a campaign's hour idle or late, "
                  "priced as an hour charged twice) chosen on this long of earlier sample times "
                  "(e.g. 28d), whose episodes all end before --from, and judged on --from..--to "
                  "beside hindsight's pick, in each world (0: none)")
      ->default_str("28d");
  cmd->add_option("--threads", o->threads, "Worker threads (0: all cores)")->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object instead of tables");
  cmd->add_option(
      "--out", o->out,
      "Directory for per-sample CSV, the gap CDF plot (SVG) and, with the oracle, what each "
      "instant it tried would have given (oracle_instants.csv)");
  cmd->callback([o] {
    const int rc = run_eval(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace mirage::cli
