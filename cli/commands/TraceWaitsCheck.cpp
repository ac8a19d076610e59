// `mirage trace waits TRACE --check FILE --from --to`: a wait model's or a binned distribution's
// stated waits held against the real waits of a window after its fit, beside every other
// predictor mirage has: the binned distribution fitted on the same months (per size class), the
// forecast's planned wait, and the calibrated and uncalibrated replays' simulated waits; and the
// checked file's quantiles recalibrated as the daemon recalibrates them live.
#include "TraceWaitsCheck.h"

#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>

#include "TimeFlags.h"
#include "TraceReplay.h"
#include "mirage/agents/WaitCheck.h"
#include "mirage/agents/WaitDistribution.h"
#include "mirage/agents/WaitTail.h"
#include "mirage/core/Error.h"
#include "mirage/core/QueueForecast.h"
#include "mirage/core/Time.h"
#include "mirage/daemon/campaigns/WaitCalibration.h"
#include "mirage/simulator/Fidelity.h"
#include "mirage/traces/LoggedQueue.h"

namespace mirage::cli {
namespace {

constexpr std::size_t kMinClassJobs = 30;

// One predictor's figures on the judged jobs: quantiles or a point per job, nothing where it has
// no figure for that job (a class the binned fit lacked, a job the replay never started).
struct Column {
  std::string name;
  std::vector<std::optional<WaitQuantiles>> quantiles;
  std::vector<std::optional<Seconds>> points;
  std::string note;  // why it is missing, when it is
};

struct Judged {
  std::vector<std::size_t> jobs;  // indices into the trace
  std::vector<Seconds> real;
  std::vector<Column> columns;
};

// The replay's simulated wait of each judged job (by job id), under `cluster`'s calibration.
Column replay_column(const std::string& name, const Trace& as_read, const TraceOptions& options,
                     const ClusterOptions& cluster, const Trace& trace, const Judged& judged) {
  Column c;
  c.name = name;
  c.points.resize(judged.jobs.size());
  try {
    const TraceReplay replay = prepare_replay(as_read, options, cluster);
    double wall = 0;
    const auto waits = replayed_waits(replay, wall);
    std::map<JobId, Seconds> by_id;
    for (std::size_t i = 0; i < replay.trace.jobs.size(); ++i)
      if ((*waits)[i] != kUnknownTime) by_id[replay.trace.jobs[i].id] = (*waits)[i];
    for (std::size_t k = 0; k < judged.jobs.size(); ++k)
      if (const auto it = by_id.find(trace.jobs[judged.jobs[k]].id); it != by_id.end())
        c.points[k] = it->second;
  } catch (const InputError& e) {
    c.note = e.what();
  }
  return c;
}

// The judged jobs `ks` (all of them by default) as the live recalibration learns them.
std::vector<daemon::StreamJob> stream_of(const Column& model, const Trace& trace, const Judged& j,
                                         std::vector<std::size_t> ks = {}) {
  if (ks.empty()) {
    ks.resize(j.jobs.size());
    std::iota(ks.begin(), ks.end(), std::size_t{0});
  }
  std::vector<daemon::StreamJob> stream;
  for (const std::size_t k : ks) {
    const Job& job = trace.jobs[j.jobs[k]];
    stream.push_back({job.submit, job.start, job.nodes, *model.quantiles[k]});
  }
  return stream;
}

// `model`'s quantiles recalibrated as the daemon once did (daemon::WaitCalibration, the latest 50
// per size class), on the waits of the judged jobs started by each job's submission: what the
// file states where it learns, live, from the cluster's own recent jobs (the daemon learns from
// the user's successors alone, fewer).
Column live_column(const Column& model, const Trace& trace, const Judged& j) {
  const std::vector<WaitQuantiles> live = daemon::recalibrated_live(stream_of(model, trace, j));
  return {"recalibrated live", {live.begin(), live.end()}, {}, {}};
}

// The same by adaptive conformal inference per size class (the daemon's rule until the weighted
// one replaced it), named `name`, moving by `step`, a size class corrected by its own state from
// `min_class_outcomes` waits on.
Column adaptive_column(std::string name, const Column& model, const Trace& trace, const Judged& j,
                       double step = daemon::AdaptiveWaitCalibration::kStep,
                       std::size_t min_class_outcomes = daemon::kMinClassOutcomes) {
  const std::vector<WaitQuantiles> live =
      daemon::recalibrated_adaptive(stream_of(model, trace, j), step, min_class_outcomes);
  return {std::move(name), {live.begin(), live.end()}, {}, {}};
}

// The same by the daemon's rule (ClassWaitCalibration: weighted conformal per size class), its
// weights decaying by `decay` a job, a size class corrected by its own state from
// `min_class_outcomes` waits on.
Column weighted_column(std::string name, const Column& model, const Trace& trace, const Judged& j,
                       double decay = daemon::WeightedWaitCalibration::kDecay,
                       std::size_t min_class_outcomes = daemon::kMinClassOutcomes) {
  const std::vector<WaitQuantiles> live =
      daemon::recalibrated_weighted(stream_of(model, trace, j), decay, min_class_outcomes);
  return {std::move(name), {live.begin(), live.end()}, {}, {}};
}

// With `minimums`, `rule`'s row with the pooled state alone, then one for each minimum of a size
// class's own waits before its own state corrects it (how the daemon's minimum is chosen), each
// made by `make` from its name and minimum.
void add_class_minimum_rows(std::vector<Column>& columns, const std::string& rule,
                            const std::vector<std::size_t>& minimums,
                            const std::function<Column(std::string, std::size_t)>& make) {
  if (minimums.empty()) return;
  columns.push_back(make(rule + ", pooled", daemon::kPooled));
  for (const std::size_t minimum : minimums)
    columns.push_back(make(fmt::format("{}, per class from {}", rule, minimum), minimum));
}

// The most active user of each size class among the judged jobs (kMinClassJobs jobs or more;
// the first name breaks a tie) and those jobs (indices into the judged jobs).
struct UserStream {
  std::size_t size_class = 0;
  std::string user;
  std::vector<std::size_t> jobs;
};

std::vector<UserStream> busiest_users(const Trace& trace, const Judged& j) {
  std::vector<UserStream> out;
  for (std::size_t c = 0; c < kSizeClasses; ++c) {
    std::map<std::string, std::vector<std::size_t>> by_user;
    for (std::size_t k = 0; k < j.jobs.size(); ++k) {
      const Job& job = trace.jobs[j.jobs[k]];
      if (size_class_index(job.nodes) == c && !job.user.empty()) by_user[job.user].push_back(k);
    }
    const std::vector<std::size_t>* busiest = nullptr;
    const std::string* name = nullptr;
    for (const auto& [user, ks] : by_user)
      if (ks.size() >= kMinClassJobs && (!busiest || ks.size() > busiest->size())) {
        busiest = &ks;
        name = &user;
      }
    if (busiest) out.push_back({c, *name, *busiest});
  }
  return out;
}

// The daemon's rule fed only `stream`'s jobs, as a daemon learns from one user's successors
// (the rows above feed it every job of the log); silent on every other job.
Column user_stream_column(const Column& model, const Trace& trace, const Judged& j,
                          const std::vector<UserStream>& streams) {
  Column c{"recalibrated weighted, one user's stream", {}, {}, {}};
  c.quantiles.resize(j.jobs.size());
  for (const UserStream& u : streams) {
    const std::vector<WaitQuantiles> live =
        daemon::recalibrated_weighted(stream_of(model, trace, j, u.jobs));
    for (std::size_t i = 0; i < u.jobs.size(); ++i) c.quantiles[u.jobs[i]] = live[i];
  }
  return c;
}

struct ClassScores {
  std::string name;
  std::size_t jobs = 0;
  std::vector<std::pair<std::string, std::optional<WaitScore>>> scores;  // by column
};

ClassScores score_class(const std::string& name, const Judged& j,
                        const std::function<bool(std::size_t)>& in_class) {
  ClassScores out;
  out.name = name;
  for (std::size_t k = 0; k < j.jobs.size(); ++k) out.jobs += in_class(k);
  for (const Column& c : j.columns) {
    std::vector<Seconds> real, points;
    std::vector<WaitQuantiles> quantiles;
    bool all = true;
    for (std::size_t k = 0; k < j.jobs.size(); ++k) {
      if (!in_class(k)) continue;
      const bool has = c.quantiles.empty() ? c.points[k].has_value() : c.quantiles[k].has_value();
      if (!has) {
        all = false;
        continue;
      }
      real.push_back(j.real[k]);
      if (c.quantiles.empty())
        points.push_back(*c.points[k]);
      else
        quantiles.push_back(*c.quantiles[k]);
    }
    // A predictor silent on some of the class's jobs is scored on none: figures on another set
    // of jobs would not compare.
    if (!all || real.empty())
      out.scores.emplace_back(c.name, std::nullopt);
    else
      out.scores.emplace_back(c.name, c.quantiles.empty() ? score_points(real, points)
                                                          : score_quantiles(real, quantiles));
  }
  return out;
}

std::string share(const std::optional<double>& v) {
  return v ? fmt::format("{:.0f}%", 100 * *v) : std::string("-");
}

void write_jobs_csv(const std::string& path, const Trace& trace, const Judged& j) {
  std::ofstream out(path);
  if (!out) throw InputError({path, 0, "--out"}, "cannot write the per-job table there");
  out << "job,nodes,real_wait_s,q05,q10,q25,q50,q75,q90,q95\n";
  for (std::size_t k = 0; k < j.jobs.size(); ++k) {
    const Job& job = trace.jobs[j.jobs[k]];
    out << fmt::format("{},{},{},{}\n", job.id, job.nodes, j.real[k],
                       fmt::join(*j.columns[0].quantiles[k], ","));
  }
  if (!out) throw InputError({path, 0, "--out"}, "writing the per-job table failed");
}

}  // namespace

void run_wait_check(const WaitCheckOptions& o) {
  const Trace as_read = read_trace(o.trace_file, o.trace_options.to_read_options());
  const std::shared_ptr<const WaitPredictor> checked = read_wait_predictor(o.file);
  const Seconds from = parse_time_flag(o.from, "--from"), to = parse_time_flag(o.to, "--to");
  if (to <= from) throw InputError({"", 0, "--to"}, "must be after --from");
  if (const auto why = checked->trace_mismatch(as_read))
    throw InputError({o.file, 0, "categories"}, *why);
  Trace trace = as_read;
  ClusterSpec spec = o.cluster.to_spec(trace);
  o.cluster.calibrate(trace, spec);  // the priority weights the forecast ranks the queue by

  Judged j;
  std::size_t in_window = 0;
  std::vector<Seconds> times;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& job = trace.jobs[i];
    if (job.submit < from || job.submit >= to) continue;
    ++in_window;
    if (!job.started() || !checked->speaks_for(job, job.nodes)) continue;
    j.jobs.push_back(i);
    j.real.push_back(job.wait());
    times.push_back(job.submit);
  }
  if (j.jobs.empty())
    throw InputError(
        {trace.source, 0, in_window > 0 ? "start" : "--from/--to"},
        in_window == 0
            ? fmt::format("no jobs were submitted in {} .. {}", o.from, o.to)
            : fmt::format("none of the {} jobs submitted in {} .. {} has a real start time that "
                          "{} speaks for: waits are judged on real waits",
                          in_window, o.from, o.to, o.file));

  // The binned distribution of each size class, fitted on the checked file's months, every
  // limit (the judged jobs ask any).
  const ClassDistributions fitted =
      fit_class_distributions(trace, spec, checked->fitted_from(), checked->fitted_to());
  std::array<std::shared_ptr<const BinnedWaitPredictor>, kSizeClasses> binned;
  for (std::size_t c = 0; c < kSizeClasses; ++c)
    if (fitted.classes[c])
      binned[c] = std::make_shared<const BinnedWaitPredictor>(*fitted.classes[c]);
  const std::string& binned_note = fitted.notes;
  Column model{std::filesystem::path(o.file).filename().string(), {}, {}, {}};
  Column bins{"binned", {}, {}, binned_note};
  Column forecast{"forecast", {}, {}, {}};
  model.quantiles.resize(j.jobs.size());
  bins.quantiles.resize(j.jobs.size());
  forecast.points.resize(j.jobs.size());
  for_each_logged_queue(trace.jobs, times, spec.nodes, spec.gpus_per_node, spec.priority,
                        [&](std::size_t k, const QueueSnapshot& queue) {
                          const Job& job = trace.jobs[j.jobs[k]];
                          const ForecastJob fj{job.nodes, job.gpus_per_node, job.time_limit};
                          model.quantiles[k] = checked->predict_logged(queue, job);
                          if (const auto& b = binned[size_class_index(job.nodes)])
                            bins.quantiles[k] = b->predict(queue, fj);
                          forecast.points[k] = QueueForecast::plan(queue, fj).wait;
                        });
  // The daemon's rule, then adaptive conformal inference, the rule it replaced.
  j.columns = {model, live_column(model, trace, j),
               weighted_column("recalibrated weighted", model, trace, j),
               adaptive_column("recalibrated adaptive", model, trace, j)};
  for (const double step : o.adaptive_steps)
    j.columns.push_back(adaptive_column(fmt::format("recalibrated adaptive, step {:g}", step),
                                        model, trace, j, step));
  add_class_minimum_rows(j.columns, "recalibrated adaptive", o.class_minimums,
                         [&](std::string name, std::size_t minimum) {
                           return adaptive_column(std::move(name), model, trace, j,
                                                  daemon::AdaptiveWaitCalibration::kStep, minimum);
                         });
  for (const double decay : o.weighted_decays)
    j.columns.push_back(weighted_column(fmt::format("recalibrated weighted, decay {:g}", decay),
                                        model, trace, j, decay));
  add_class_minimum_rows(j.columns, "recalibrated weighted", o.weighted_class_minimums,
                         [&](std::string name, std::size_t minimum) {
                           return weighted_column(std::move(name), model, trace, j,
                                                  daemon::WeightedWaitCalibration::kDecay, minimum);
                         });
  const std::vector<UserStream> streams =
      o.user_streams ? busiest_users(trace, j) : std::vector<UserStream>{};
  if (o.user_streams) j.columns.push_back(user_stream_column(model, trace, j, streams));
  j.columns.push_back(bins);
  j.columns.push_back(forecast);
  // The replays as `trace fidelity` runs them: forward (calibrated on the log before the judged
  // window), and the log's jobs alone on the whole machine.
  ClusterOptions calibrated = o.cluster;
  calibrated.fit_until = o.from;
  ClusterOptions uncalibrated = o.cluster;
  uncalibrated.calibration = "none";
  uncalibrated.fit_until.clear();
  if (!o.no_replays) {
    j.columns.push_back(
        replay_column("replay, calibrated", as_read, o.trace_options, calibrated, trace, j));
    j.columns.push_back(
        replay_column("replay, uncalibrated", as_read, o.trace_options, uncalibrated, trace, j));
  }

  std::vector<ClassScores> classes{score_class("all", j, [](std::size_t) { return true; })};
  for (std::size_t c = 0; c < kSizeClasses; ++c)
    classes.push_back(score_class(size_class(kSizeClassNodes[c]), j, [&](std::size_t k) {
      return size_class_index(trace.jobs[j.jobs[k]].nodes) == c;
    }));
  for (const UserStream& u : streams) {
    std::vector<bool> in_stream(j.jobs.size());
    for (const std::size_t k : u.jobs) in_stream[k] = true;
    classes.push_back(score_class(
        fmt::format("{}, user {}'s jobs", size_class(kSizeClassNodes[u.size_class]), u.user), j,
        [&](std::size_t k) { return in_stream[k]; }));
  }
  if (!o.out.empty()) write_jobs_csv(o.out, trace, j);

  const bool forward = checked->fitted_to() <= from;
  if (o.json) {
    nlohmann::json out = {{"file", o.file},
                          {"predictor", checked->describe()},
                          {"trace", trace.source},
                          {"from", format_iso_time(from)},
                          {"to", format_iso_time(to)},
                          {"fitted_from", format_iso_time(checked->fitted_from())},
                          {"fitted_to", format_iso_time(checked->fitted_to())},
                          {"forward", forward},
                          {"jobs", j.jobs.size()},
                          {"classes", nlohmann::json::array()}};
    for (const ClassScores& c : classes) {
      nlohmann::json row = {{"class", c.name}, {"jobs", c.jobs}};
      if (c.jobs < kMinClassJobs) {
        row["too_few"] = true;
      } else {
        for (const auto& [name, s] : c.scores) {
          nlohmann::json p = {{"name", name}};
          if (s) {
            p["pinball_h"] = s->pinball_h ? nlohmann::json(*s->pinball_h) : nlohmann::json();
            p["pinball_50_h"] = s->pinball_50_h;
            p["in_50"] = s->in_50 ? nlohmann::json(*s->in_50) : nlohmann::json();
            p["in_90"] = s->in_90 ? nlohmann::json(*s->in_90) : nlohmann::json();
            p["in_50_pit"] = s->in_50_pit ? nlohmann::json(*s->in_50_pit) : nlohmann::json();
            p["in_90_pit"] = s->in_90_pit ? nlohmann::json(*s->in_90_pit) : nlohmann::json();
            p["median_abs_error_h"] = s->median_abs_error_h;
          }
          row["predictors"].push_back(p);
        }
      }
      out["classes"].push_back(row);
    }
    fmt::print("{}\n", out.dump(2));
    return;
  }
  fmt::print("{}: {}\n", o.file, checked->describe());
  fmt::print("judged on {}: {} real jobs submitted {} .. {}{}\n", trace.source, j.jobs.size(),
             o.from, o.to,
             forward ? " (after the fit: forward)"
                     : " (WARNING: inside or before the fitted months: not forward)");
  for (const Column& c : j.columns)
    if (!c.note.empty()) fmt::print("note: {}\n", c.note);
  std::size_t width = 22;
  for (const Column& c : j.columns) width = std::max(width, c.name.size() + 2);
  for (const ClassScores& c : classes) {
    if (c.jobs < kMinClassJobs) {
      fmt::print("\n{}: {} jobs, fewer than {}: not judged\n", c.name, c.jobs, kMinClassJobs);
      continue;
    }
    fmt::print("\n{} ({} jobs)\n  {:<{}} {:>10} {:>13} {:>7} {:>7} {:>8} {:>8} {:>17}\n", c.name,
               c.jobs, "predictor", width, "pinball h", "pinball@50 h", "in 50%", "in 90%",
               "PIT 50%", "PIT 90%", "median abs err h");
    for (const auto& [name, s] : c.scores) {
      if (!s) {
        fmt::print("  {:<{}} {:>10}\n", name, width, "no figure for every job");
        continue;
      }
      fmt::print("  {:<{}} {:>10} {:>13.3f} {:>7} {:>7} {:>8} {:>8} {:>17.2f}\n", name, width,
                 s->pinball_h ? fmt::format("{:.3f}", *s->pinball_h) : std::string("-"),
                 s->pinball_50_h, share(s->in_50), share(s->in_90), share(s->in_50_pit),
                 share(s->in_90_pit), s->median_abs_error_h);
    }
  }
  if (!o.out.empty()) fmt::print("\nper job: {}\n", o.out);
}

}  // namespace mirage::cli
