// mirage train: a learned agent (dqn, pg, moe) from what-if probes of a trace window, or the wait
// model (wait-model) from the real waits of a trace window.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "ClusterOptions.h"
#include "Commands.h"
#include "EpisodeOptions.h"
#include "HyperparametersFile.h"
#include "LearnedPlugin.h"
#include "Progress.h"
#include "SampleTraces.h"
#include "TimeFlags.h"
#include "Validators.h"
#include "mirage/agents/LoggedWaits.h"
#include "mirage/agents/WaitCheck.h"
#include "mirage/agents/WaitModel.h"
#include "mirage/agents/learned/Training.h"
#include "mirage/core/CacheDir.h"
#include "mirage/core/Error.h"

namespace mirage::cli {
namespace {

struct TrainOptions {
  std::string agent = "dqn";
  std::string trace;
  TraceOptions trace_options;
  ClusterOptions cluster;
  EpisodeOptions episode;
  std::string out;
  std::string probe_cache;
  bool no_probe_cache = false;
  bool resume = false;
  std::uint64_t seed = 1;
  int threads = 2;
  std::string hyperparameters;        // a TOML file; empty: the defaults
  std::string wait_distribution;      // a wait predictor whose quantiles the agent sees
  std::string architecture = "mlp";   // wait-model
  std::size_t max_jobs = 20000;       // wait-model: the window's jobs evenly thinned to this
  bool no_level_calibration = false;  // wait-model: keep the network's levels as trained
  bool no_blend = false;  // wait-model: recalibrate per size class without the binned average
  // wait-model: fall back to the binned distribution alone where the network does not win on the
  // tail (off by default: forward it cost more than it saved, docs/results/wait-model.md)
  // wait-model: keep these models' networks (every member of each), fit only what is set on them
  std::vector<std::string> network_of;
  int seeds = 1;  // wait-model: networks fitted from different starting weights, averaged
  // wait-model: the window's last days, apart from the networks' rows, that the intervals are
  // calibrated on (WaitSplit); 0, the default: on the networks' early-stopping rows (forward, the
  // split lost beyond the seed noise on three of six logs, docs/results/wait-model.md)
  double calibration_days = 0;
  // wait-model: the tail cross-fitted over this many time folds of the window (WaitFold), one
  // network a fold; 0: not
  int cross_fit_folds = 0;
};

// `--agent wait-model`: every real job of the window, its queue and its wait, fitted in the
// plugin; the file decides without it.
int run_train_wait_model(const TrainOptions& o) {
  Trace trace = read_trace(o.trace, o.trace_options.to_read_options());
  ClusterSpec cluster = o.cluster.to_spec(trace);
  o.cluster.calibrate(trace, cluster);  // the priority weights the forecast ranks the queue by
  const Seconds from = *o.episode.from_time(), to = *o.episode.to_time();
  if (to <= from) throw InputError({"", 0, "--to"}, "must be after --from");
  const auto t0 = std::chrono::steady_clock::now();
  const WaitTrainingSet data = wait_training_set(trace, cluster, from, to, o.max_jobs);
  const double rows_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  fmt::print(stderr,
             "mirage train: wait-model ({}) on {}: {} real jobs submitted {} .. {}, {} of them "
             "fitted (their queues read in {:.1f} s)\n",
             o.architecture, trace.source, data.window_jobs, o.episode.from, o.episode.to,
             data.rows, rows_seconds);
  WaitModelTraining t;
  t.architecture = o.architecture;
  t.seed = o.seed;
  t.threads = o.threads;
  // The rows the networks are fitted on, and the tail the file's intervals are set on: the
  // window's last weeks, apart (WaitSplit), or, with --calibration-days 0, the networks' own
  // early-stopping rows (how files were fitted before).
  std::optional<WaitSplit> split;
  std::vector<WaitFold> folds;
  if (o.cross_fit_folds > 0) {
    if (o.calibration_days > 0 || o.seeds > 1 || o.no_level_calibration)
      throw InputError({"", 0, "--cross-fit-folds"},
                       "sets the tail on every fold's jobs, one network a fold: expected neither "
                       "--calibration-days, --seeds above 1 nor --no-level-calibration with it");
    folds = time_folds(data, from, to, o.cross_fit_folds);
  }
  if (o.calibration_days > 0)
    split = split_for_calibration(data, from, to,
                                  static_cast<Seconds>(std::llround(o.calibration_days * kDay)));
  const WaitTrainingSet fitted = split ? first_rows(data, split->calibration_first) : data;
  WaitModelFit fit;
  std::vector<WaitNet> members;
  if (o.network_of.empty() && !folds.empty()) {
    // One network a fold, fitted on the other folds' rows (early stopping on their latest).
    for (std::size_t f = 0; f < folds.size(); ++f) {
      const WaitModelFit one = learned_plugin().train_wait_model(
          rows_outside(data, folds[f]), t, [&](const std::string& line) {
            fmt::print(stderr, "mirage train: fold {} left out: {}\n", f + 1, line);
          });
      const double seconds = fit.train_seconds + one.train_seconds;
      fit = one;
      fit.train_seconds = seconds;
      members.push_back(one.net);
    }
  } else if (o.network_of.empty()) {
    // Every member on the same rows and the same held-out tail, from its own seed.
    for (int m = 0; m < o.seeds; ++m) {
      t.seed = o.seed + static_cast<std::uint64_t>(m);
      const WaitModelFit one =
          learned_plugin().train_wait_model(fitted, t, [&](const std::string& line) {
            fmt::print(stderr, "mirage train: {}{}\n",
                       o.seeds > 1 ? fmt::format("seed {}: ", t.seed) : "", line);
          });
      const double seconds = fit.train_seconds + one.train_seconds;
      fit = one;
      fit.train_seconds = seconds;
      members.push_back(one.net);
    }
  } else {  // the networks as they were; the same latest share of the window held out
    for (const std::string& file : o.network_of) {
      const WaitModel kept = read_wait_model(file);
      members.insert(members.end(), kept.members().begin(), kept.members().end());
    }
    if (!folds.empty() && members.size() != folds.size())
      throw InputError({o.network_of.front(), 0, "members"},
                       fmt::format("holds {} networks: expected one a fold ({}) for "
                                   "--cross-fit-folds",
                                   members.size(), folds.size()));
    fit.net = members.front();
    fit.val_rows = std::max<std::size_t>(
        1, static_cast<std::size_t>(static_cast<double>(fitted.rows) * t.val_share));
    fit.train_rows = fitted.rows - fit.val_rows;
  }
  // On the tail the network was not fitted on: its levels shifted to hold their shares, then per
  // size class the blend with the binned distribution of the months before the tail and the
  // conformal recalibration (WaitTail.h).
  // Cross-fitted, every row of the window, each as its fold's network predicts it.
  const std::size_t tail_first = split ? split->calibration_first : fit.train_rows;
  WaitTail tail;
  std::vector<TailRow> judged;
  const TailSettings settings{.blend = !o.no_blend};
  std::string notes;
  if (!folds.empty()) {
    judged = out_of_fold_rows(trace, cluster, from, to, members, data, folds);
    tail = fit_cross_fitted_tail(trace, cluster, from, to, judged, settings, &notes);
  } else {
    if (!o.no_level_calibration)
      tail = fit_model_tail(trace, cluster, from, members, data, tail_first, settings, &notes);
    judged = tail_rows(members, data, tail_first);
  }
  if (!notes.empty()) fmt::print(stderr, "mirage train: {}\n", notes);
  // The tail's pinball loss in hours, as `trace waits --check` scores it.
  double pinball = 0;
  for (const TailRow& r : judged) {
    const WaitQuantiles q = tail.apply(size_class_index(r.nodes), r.network, r.planned);
    for (std::size_t k = 0; k < q.size(); ++k)
      pinball += pinball_loss(kWaitLevels[k], r.wait, q[k]);
  }
  pinball /= static_cast<double>(judged.size() * kWaitLevels.size()) * kHour;
  WaitModelInfo info;
  info.trace = trace.source;
  info.categories = data.categories;
  info.from = from;
  info.to = to;
  info.jobs = data.rows;
  info.machine_nodes = cluster.nodes;
  info.val_pinball_h = pinball;
  info.train_seconds = fit.train_seconds;
  if (split) info.calibrated_from = split->calibration_from;
  info.cross_fit_folds = static_cast<int>(folds.size());
  const WaitModel model(info, members, tail);
  write_wait_model(o.out, model);
  // "(2725 train, 681 validation, 594 calibration: the latest, from 2022-05-18)", or without
  // the split "(3200 train, 800 validation: the latest, which also calibrates)".
  std::vector<std::size_t> fold_rows;
  for (const WaitFold& f : folds) fold_rows.push_back(f.last - f.first);
  const std::string rows =
      !folds.empty() ? fmt::format(
                           "{} time folds of {} jobs, each predicted by the network fitted on the "
                           "others, all of them calibrating",
                           folds.size(), fmt::join(fold_rows, " / "))
      : split ? fmt::format("{} train, {} validation, {} calibration: the latest, from {}",
                            fit.train_rows, fit.val_rows, data.rows - split->calibration_first,
                            format_iso_time(split->calibration_from).substr(0, 10))
              : fmt::format("{} train, {} validation: the latest, which also calibrates",
                            fit.train_rows, fit.val_rows);
  fmt::print(
      "wait model {} ({}), fitted on {} {} .. {}: {} jobs ({})\n"
      "training: {} epochs, the best {}, {:.1f} s; {} pinball loss {:.3f} h; file {} bytes\n{}\n",
      o.out, fit.net.architecture, trace.source, o.episode.from, o.episode.to, data.rows, rows,
      fit.epochs, fit.best_epoch, fit.train_seconds,
      !folds.empty() ? "out-of-fold"
      : split        ? "calibration"
                     : "validation",
      pinball, std::filesystem::file_size(o.out), model.describe());
  return 0;
}

std::string metrics_row(const std::string& name, const learned::StopMetrics& m) {
  return fmt::format("  {:<10} {:>9.3f} h {:>10.3f} h {:>8.1f}% {:>9.3f} h", name, m.mean_cost_h,
                     m.mean_interruption_h, 100 * m.zero_share, m.mean_overlap_h);
}

// The saved rule in words (DecisionRule); margins are hours for dqn and moe, logits for pg.
std::string rule_text(const learned::TrainSummary& s) {
  const auto margin_above = [](double t) {
    return t == learned::kAlwaysAfterAverage ? std::string("whatever the margin")
                                             : fmt::format("when the margin exceeds {:g}", t);
  };
  const bool early = !std::isinf(s.rule.threshold), after = !std::isinf(s.rule.after_average);
  const learned::WindowClause& w = s.rule.window;
  const std::string window =
      !w.active()
          ? std::string()
          : fmt::format(
                "once the predecessor has at most {} left and the {} forecast "
                "plans a wait of {} or more were it submitted at the end",
                format_short_duration(w.within), to_string(*w.plan), format_short_duration(w.wait));
  if (!early && !after)
    return window.empty() ? "never submit early (as reactive)" : "submit " + window;
  std::string text;
  if (early)
    text = "submit " + margin_above(s.rule.threshold) +
           (s.rule.guard == learned::ForecastGuard::kOff
                ? ""
                : fmt::format(" and the {} forecast guard allows", to_string(s.rule.guard)));
  if (after)
    text += (early ? ", or" : "submit") +
            fmt::format(" where average would submit, {}", margin_above(s.rule.after_average));
  if (!window.empty()) text += ", or " + window;
  return text;
}

int run_train(const TrainOptions& o) {
  if (o.agent == "wait-model") return run_train_wait_model(o);
  const auto agent = learned::parse_agent_kind(o.agent);
  if (!agent) throw InputError({"", 0, "--agent"}, "expected dqn, pg or moe");
  const LearningSettings learning =
      o.hyperparameters.empty() ? LearningSettings{} : read_hyperparameters(o.hyperparameters);
  const learned::Hyperparameters& hp = learning.hp;
  Trace trace = read_trace(o.trace, o.trace_options.to_read_options());

  learned::TrainConfig c;
  c.agent = *agent;
  c.hp = hp;
  c.trace_path = o.trace;
  c.out = o.out;
  c.resume = o.resume;
  c.seed = o.seed;
  c.threads = o.threads;
  c.torch_threads = learning.torch_threads;
  learned::ProbeSpec& p = c.probes;
  p.cluster = o.cluster.to_spec(trace);
  // The world whose outcomes it learns from; it observes the replayed queue in both. The logged
  // one reads the log as eval's does: its dependent jobs by the log's own fields, marked before
  // the replay's calibration marks its own.
  p.world = o.episode.worlds().front();
  p.yardstick_log = o.episode.logged_yardstick(trace, p.cluster);
  o.cluster.calibrate(trace, p.cluster);
  o.episode.apply(p.episode, p.cluster);
  p.mode = o.episode.start_mode();
  p.from = *o.episode.from_time();  // both required
  p.to = *o.episode.to_time();
  p.every = o.episode.spacing();
  {
    EvalConfig logged;
    o.episode.apply_logged_waits(logged);
    p.logged_window = logged.logged_window;
    p.logged_jobs = logged.logged_jobs;
  }
  if (!o.wait_distribution.empty()) {
    p.waits = learned::read_recorded_predictor(o.wait_distribution, &p.waits_ref);
    if (const auto why = p.waits->chain_mismatch(p.episode.chain.nodes))
      throw InputError({o.wait_distribution, 0, "--wait-distribution"}, *why);
    // Fitted on the window it trains on, its quantiles are better there than they will be live.
    if (p.waits->fitted_to() > p.from)
      fmt::print(stderr,
                 "mirage train: warning: {} was fitted up to {}, after --from: the agent learns "
                 "from its in-sample answers\n",
                 o.wait_distribution, format_iso_time(p.waits->fitted_to()));
  }
  std::optional<LoggedWaits> logged_world;
  if (p.world == SuccessorWait::kLogged) logged_world.emplace(*p.yardstick_log, p.logged_spec());
  if (logged_world && logged_world->shape_jobs() == 0)
    throw InputError({"", 0, "--successor-wait"},
                     fmt::format("logged: {} has no real job of the chain's shape with a start "
                                 "time, so the logged world has no waits for it",
                                 trace.source));
  // Probes in the user's cache by default, named after what shapes them (not the agent), so that
  // dqn, pg and moe trained on the same window share one probing; the checkpoint there too,
  // named after the model file.
  if (!o.no_probe_cache)
    c.probe_cache_dir = !o.probe_cache.empty() ? o.probe_cache : user_cache_dir("probes");
  c.checkpoint =
      (std::filesystem::path(user_cache_dir("checkpoints")) / cache_name_for(o.out, ".ckpt"))
          .string();

  fmt::print(stderr,
             "mirage train: {} on {} ({} jobs), {} nodes, chain {} node(s), window {} .. {} "
             "every {}, seed {}, outcomes in the {} world\n",
             o.agent, trace.source, trace.jobs.size(), p.cluster.nodes, p.episode.chain.nodes,
             o.episode.from, o.episode.to, o.episode.every, o.seed, to_string(p.world));
  std::unique_ptr<Progress> probe_progress, step_progress;
  std::string step_label;
  learned::TrainCallbacks cb;
  cb.probe = [&](std::size_t d, std::size_t t) {
    if (!probe_progress) probe_progress = std::make_unique<Progress>("train: probing episodes");
    probe_progress->update(d, t);
    if (d == t) probe_progress->finish();
  };
  cb.step = [&](std::size_t d, std::size_t t, double loss) {
    if (!step_progress) step_progress = std::make_unique<Progress>(step_label);
    step_progress->update(d, t, fmt::format("loss {:.4f}", loss));
  };
  cb.epoch = [&](const learned::EpochStats& s) {
    if (step_progress) step_progress->finish();
    step_progress.reset();
    fmt::print(stderr,
               "{} epoch {}/{}: loss {:.4f}, {:.0f} steps/s | validation: cost {:.3f} h, "
               "interruption {:.3f} h, zero {:.1f}%, overlap {:.3f} h{}\n",
               s.phase, s.epoch, s.max_epochs, s.loss, s.steps_per_s, s.val.mean_cost_h,
               s.val.mean_interruption_h, 100 * s.val.zero_share, s.val.mean_overlap_h,
               s.best ? "  (best so far)" : "");
    step_label = fmt::format("train: {} epoch {}: steps", s.phase, s.epoch + 1);
  };
  cb.message = [](const std::string& m) { fmt::print(stderr, "mirage train: {}\n", m); };
  step_label = fmt::format("train: {} epoch 1: steps", o.agent);

  const learned::TrainSummary s = learned_plugin().train_agent(trace, c, cb);
  if (step_progress) step_progress->finish();

  fmt::print("model {} ({}{}), trained on {} {} .. {}\n", o.out, o.agent,
             hp.ensemble > 1 ? fmt::format(", ensemble of {} seeds", hp.ensemble) : "",
             trace.source, o.episode.from, o.episode.to);
  fmt::print("probes: {} episodes, {} decisions, {} in {:.1f} s{}\n", s.episodes, s.transitions,
             s.probes_from_cache ? "loaded from the cache" : "probed", s.probe_seconds,
             c.probe_cache_dir.empty() ? "" : " (cache in " + c.probe_cache_dir + ")");
  if (logged_world)
    fmt::print(
        "outcomes: the logged world ({}); left out for want of a logged wait: {} decision "
        "instants, {} episodes\n",
        logged_world->describe(), s.unscored_instants, s.unscored_episodes);
  fmt::print(
      "training: {} episodes, validation: {} (the tail of each of {} blocks), {} purged before "
      "them; {} epochs, {:.1f} s\n",
      s.train_episodes, s.val_episodes, hp.val_blocks, s.purged_episodes, s.epochs,
      s.train_seconds);
  if (hp.risk_input)
    fmt::print(
        "\nvalidation (each risk's cost = interruption + (1 - risk) / risk x overlap; the "
        "epoch chosen for the lowest mean of risk x that cost over the levels, each level's "
        "threshold for the lowest cost there; `{}` below: MODEL without a knob, @{:g})\n",
        o.agent, learned::kDefaultRisk);
  else
    fmt::print("\nvalidation (cost = interruption + {} x overlap; chosen for the lowest cost)\n",
               hp.overlap_weight);
  if (!s.risk_points.empty()) {
    // One rule per validated risk: MODEL@RISK decides with the nearest one's.
    fmt::print(
        "decision rules by risk (MODEL@RISK; the cost prices an idle hour RISK and an "
        "hour charged twice 1 - RISK, here / RISK):\n");
    for (const learned::RiskPoint& r : s.risk_points)
      fmt::print(
          "  @{:<4g} threshold {:>8}  {}\n", r.risk,
          std::isinf(r.threshold) ? std::string("never") : fmt::format("{:.3g}", r.threshold),
          metrics_row("", r.val).substr(13));
  }
  fmt::print("decision rule: {}\n", rule_text(s));
  fmt::print("  {:<10} {:>11} {:>12} {:>9} {:>11}\n", "policy", "mean cost", "interruption",
             "zero int.", "overlap");
  fmt::print("{}\n{}\n{}\n{}\n", metrics_row("reactive", s.reactive),
             metrics_row("average", s.average), metrics_row(o.agent, s.agent),
             metrics_row("hindsight", s.hindsight));
  if (s.agent.mean_cost_h > s.average.mean_cost_h)
    fmt::print(stderr,
               "mirage train: warning: the agent does worse than `average` on the validation "
               "episodes; consider a longer window or other hyperparameters\n");
  return 0;
}

}  // namespace

void register_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a learned submission agent (dqn, pg, moe) on what-if probes of a trace");
  cmd->add_option("--agent", o->agent,
                  "dqn, pg or moe; wait-model: quantiles of a job's wait from the queue it meets")
      ->check(CLI::IsMember({"dqn", "pg", "moe", "wait-model"}))
      ->capture_default_str();
  cmd->add_option("--trace", o->trace, "Trace file (SWF, sacct; .gz read directly)")
      ->required()
      ->transform(sample_trace())
      ->check(CLI::ExistingFile);
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd, /*command_has_segment=*/true);
  o->episode.add_to(*cmd, "1h", true);
  o->episode.add_successor_wait_to(*cmd, /*both=*/false);
  cmd->add_option("--out", o->out, "The model file to write (e.g. ls6-dqn.mirage-model)")
      ->required();
  cmd->add_option(
      "--probe-cache", o->probe_cache,
      "Directory for the probed episodes (default: $XDG_CACHE_HOME/mirage/probes; files "
      "are named after the trace and a digest of everything that shapes the probes)");
  cmd->add_flag("--no-probe-cache", o->no_probe_cache, "Probe again and write no cache");
  cmd->add_flag("--resume", o->resume,
                "Continue from the model's checkpoint (written after every epoch to "
                "$XDG_CACHE_HOME/mirage/checkpoints) when it exists");
  cmd->add_option("--seed", o->seed, "Seed of weights, shuffling and sampling")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "Probing threads; moe also trains this many experts side by side")
      ->check(whole_number(1))
      ->capture_default_str();
  cmd->add_option("--hyperparameters", o->hyperparameters,
                  "A TOML file of learning knobs (the keys below); the rest keep their defaults")
      ->check(CLI::ExistingFile);
  cmd->add_option("--wait-distribution", o->wait_distribution,
                  "A wait predictor (the learned wait model's JSON or a binned distribution's "
                  "TOML) whose quantiles of the successor's wait the agent sees; the model file "
                  "records its path and digest, and decides only with that file")
      ->check(CLI::ExistingFile);
  cmd->add_option("--architecture", o->architecture,
                  "wait-model: one network (mlp) or experts mixed by a gate over the queue (moe)")
      ->check(CLI::IsMember({"mlp", "moe"}))
      ->capture_default_str();
  cmd->add_option("--max-jobs", o->max_jobs,
                  "wait-model: fit on at most this many of the window's jobs (evenly thinned)")
      ->check(whole_number(kMinWaitModelJobs))
      ->capture_default_str();
  cmd->add_flag("--no-level-calibration", o->no_level_calibration,
                "wait-model: keep the levels as trained instead of shifting each to hold its "
                "share of the validation tail's waits (and no blend or recalibration per size "
                "class)");
  cmd->add_option("--network-of", o->network_of,
                  "wait-model: keep this model file's networks (no LibTorch needed) and fit only "
                  "the levels, blend and recalibration on the window's latest jobs; given "
                  "again, every file's networks are averaged")
      ->check(CLI::ExistingFile);
  cmd->add_option("--seeds", o->seeds,
                  "wait-model: fit this many networks from different starting weights (--seed, "
                  "--seed + 1, ...) and average their quantiles")
      ->check(whole_number(1))
      ->capture_default_str();
  cmd->add_option("--calibration-days", o->calibration_days,
                  fmt::format("wait-model: the window's last days (at most a quarter of it; {} "
                              "measured), on which the networks are not fitted, set each size "
                              "class's interval offsets (conformalized quantile regression); 0: "
                              "set them on the networks' early-stopping rows",
                              kCalibrationSpan / kDay))
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--cross-fit-folds", o->cross_fit_folds,
                  "wait-model: cut the window into this many spans of equal time, fit one "
                  "network with each left out, and set each size class's blend and interval "
                  "offsets on every job as predicted by the network that did not see it; the "
                  "file averages the fold networks; 0: not")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--no-blend", o->no_blend,
                "wait-model: recalibrate each size class on the validation tail without "
                "averaging the binned distribution in");
  cmd->footer(hyperparameters_help());
  cmd->callback([o] {
    const int rc = run_train(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace mirage::cli
