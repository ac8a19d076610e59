// mirage train: a learned agent (dqn, pg, moe) from what-if probes of a trace window.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <filesystem>
#include <memory>
#include <vector>

#include "ClusterOptions.h"
#include "Commands.h"
#include "LearnedPlugin.h"
#include "Progress.h"
#include "TimeFlags.h"
#include "mirage/core/Error.h"
#include "mirage/learned/Training.h"

namespace mirage::cli {
namespace {

struct TrainOptions {
  std::string agent = "dqn";
  std::string trace;
  TraceOptions trace_options;
  ClusterOptions cluster;
  int chain_nodes = 1;
  int chain_gpus_per_node = 0;
  Seconds limit_min = 2880;
  std::string overlap = "concurrent";
  std::string from, to;
  std::string every = "1h";
  std::string max_wait = "2d";
  std::string start = "fork";
  std::string out;
  std::string probe_cache;
  bool no_probe_cache = false;
  std::vector<int> extra_chain_nodes;
  bool resume = false;
  std::uint64_t seed = 1;
  int threads = 2;
  int torch_threads = 1;
  learned::Hyperparameters hp;
};

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
      !w.active() ? std::string()
                  : fmt::format(
                        "once the predecessor has at most {:g} h left and the {} forecast "
                        "plans a wait of {:g} h or more were it submitted at the end",
                        static_cast<double>(w.within) / kHour, to_string(w.plan),
                        static_cast<double>(w.wait) / kHour);
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
  const auto agent = learned::parse_agent_kind(o.agent);
  if (!agent) throw InputError({"", 0, "--agent"}, "expected dqn, pg or moe");
  Trace trace = read_trace(o.trace, o.trace_options.to_read_options());

  learned::TrainConfig c;
  c.agent = *agent;
  c.hp = o.hp;
  c.trace_path = o.trace;
  c.out = o.out;
  c.resume = o.resume;
  c.seed = o.seed;
  c.threads = o.threads;
  c.torch_threads = o.torch_threads;
  learned::ProbeSpec& p = c.probes;
  p.cluster = o.cluster.to_spec(trace);
  o.cluster.calibrate(trace, p.cluster);
  p.episode.chain.nodes = o.chain_nodes;
  p.episode.chain.gpus_per_node = o.chain_gpus_per_node;
  p.episode.chain.time_limit = p.episode.chain.runtime = o.limit_min * kMinute;
  p.episode.chain.overlap = *parse_overlap_mode(o.overlap);
  p.episode.max_wait = parse_duration_flag(o.max_wait, "--max-wait");
  if (p.episode.chain.nodes > p.cluster.nodes)
    throw InputError({"", 0, "--chain-nodes"},
                     fmt::format("the chain needs {} nodes but the machine has {}",
                                 p.episode.chain.nodes, p.cluster.nodes));
  p.mode = o.start == "peer" ? EpisodeStartMode::kPeerWarmup : EpisodeStartMode::kForkReplay;
  p.from = parse_time_flag(o.from, "--from");
  p.to = parse_time_flag(o.to, "--to");
  p.every = parse_duration_flag(o.every, "--every");
  if (!o.no_probe_cache) {
    // Beside the model by default, named after what shapes the probes (not the agent), so that
    // dqn, pg and moe trained on the same window share one probing.
    const std::filesystem::path out_dir = std::filesystem::path(o.out).parent_path();
    c.probe_cache_dir = !o.probe_cache.empty() ? o.probe_cache
                        : out_dir.empty()      ? "."
                                               : out_dir.string();
  }
  c.extra_chain_nodes = o.extra_chain_nodes;

  fmt::print(stderr,
             "mirage train: {} on {} ({} jobs), {} nodes, chain {} node(s), window {} .. {} "
             "every {}, seed {}\n",
             o.agent, trace.source, trace.jobs.size(), p.cluster.nodes, p.episode.chain.nodes,
             o.from, o.to, o.every, o.seed);
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
             o.hp.ensemble > 1 ? fmt::format(", ensemble of {} seeds", o.hp.ensemble) : "",
             trace.source, o.from, o.to);
  fmt::print("probes: {} episodes, {} decisions, {} in {:.1f} s{}\n", s.episodes, s.transitions,
             s.probes_from_cache ? "loaded from the cache" : "probed", s.probe_seconds,
             c.probe_cache_dir.empty() ? "" : " (cache in " + c.probe_cache_dir + ")");
  fmt::print(
      "training: {} episodes, validation: {} (the tail of each of {} blocks), {} purged before "
      "them; {} epochs, {:.1f} s\n",
      s.train_episodes, s.val_episodes, o.hp.val_blocks, s.purged_episodes, s.epochs,
      s.train_seconds);
  fmt::print(
      "\nvalidation (cost = interruption{} + {} x overlap; chosen for {})\n",
      o.hp.interruption_penalty > 0
          ? fmt::format(" + {} if interrupted at all", o.hp.interruption_penalty)
          : std::string(),
      o.hp.overlap_weight,
      o.hp.objective == "cost"
          ? std::string("the lowest cost")
          : fmt::format(
                "the lowest interruption{} with overlap <= average's {:.3f} h{}{}",
                o.hp.interruption_penalty > 0 ? " and penalty" : "", s.average.mean_overlap_h,
                s.overlap_caps.size() > 1 ? fmt::format(", and in each validation block: {:.3f} h",
                                                        fmt::join(s.overlap_caps, " / "))
                                          : "",
                o.hp.overlap_confidence > 0 ? fmt::format(" in {:.0f}% of day-bootstrap resamples",
                                                          100 * o.hp.overlap_confidence)
                                            : ""));
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
  learned::Hyperparameters& hp = o->hp;
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a learned submission agent (dqn, pg, moe) on what-if probes of a trace");
  cmd->add_option("--agent", o->agent, "dqn, pg or moe")
      ->check(CLI::IsMember({"dqn", "pg", "moe"}))
      ->capture_default_str();
  cmd->add_option("--trace", o->trace, "Trace file (SWF, sacct; .gz read directly)")
      ->required()
      ->check(CLI::ExistingFile);
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd);
  cmd->add_option("--chain-nodes", o->chain_nodes, "Nodes per segment of the chain")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--chain-gpus-per-node", o->chain_gpus_per_node, "GPUs per node per segment")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--limit", o->limit_min, "Each segment's time limit and runtime (minutes)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--overlap", o->overlap, "concurrent or handoff (how overlap is counted)")
      ->check(CLI::IsMember({"concurrent", "handoff"}))
      ->capture_default_str();
  cmd->add_option("--from", o->from, "First sample time of the training window (UTC)")->required();
  cmd->add_option("--to", o->to, "Samples before this time")->required();
  cmd->add_option("--every", o->every, "Spacing of the probed sample times")->capture_default_str();
  cmd->add_option("--max-wait", o->max_wait, "Longest wait a segment is allowed before the cut-off")
      ->capture_default_str();
  cmd->add_option("--start", o->start,
                  "fork: fork a full replay at each sample; peer: Mirage's protocol")
      ->check(CLI::IsMember({"fork", "peer"}))
      ->capture_default_str();
  cmd->add_option("--out", o->out, "The model file to write (e.g. ls6-dqn.mirage-model)")
      ->required();
  cmd->add_option("--probe-cache", o->probe_cache,
                  "Directory for the probed episodes (default: the model's; files are named after "
                  "the trace and a digest of everything that shapes the probes)");
  cmd->add_option("--extra-chain-nodes", o->extra_chain_nodes,
                  "Also probe chains of these sizes (comma-separated) and train on them too; "
                  "validation uses --chain-nodes only")
      ->delimiter(',');
  cmd->add_flag("--no-probe-cache", o->no_probe_cache, "Probe again and write no cache");
  cmd->add_flag("--resume", o->resume,
                "Continue from MODEL_FILE.ckpt (written after every epoch) when it exists");
  cmd->add_option("--seed", o->seed, "Seed of weights, shuffling and sampling")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads,
                  "Probing threads; moe also trains this many experts side by side")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--torch-threads", o->torch_threads,
                  "LibTorch intra-op threads per network (small networks gain nothing from more)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  // Hyperparameters: every one a flag.
  cmd->add_option("--history-blocks", hp.history_blocks,
                  "Means of this many equal blocks of the 24 h snapshot window join the input "
                  "(0: the latest snapshot only)")
      ->check(CLI::Range(0, 144))
      ->capture_default_str();
  cmd->add_option("--hidden", hp.hidden, "Units per hidden layer")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--layers", hp.layers, "Hidden layers")
      ->check(CLI::Range(0, 8))
      ->capture_default_str();
  cmd->add_option("--batch-size", hp.batch_size, "Transitions per gradient step (dqn, moe)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--lr", hp.lr, "Adam learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--weight-decay", hp.weight_decay, "AdamW weight decay")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--epochs", hp.max_epochs,
                  "Most passes over the training data (per expert and for the gate with moe)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--patience", hp.patience,
                  "Early stopping: epochs without a better validation cost")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--val-fraction", hp.val_fraction,
                  "Share of each block of the window held out (its time-ordered tail) for "
                  "validation and model selection")
      ->capture_default_str();
  cmd->add_option("--val-blocks", hp.val_blocks,
                  "Consecutive blocks of the window, each validated on its tail, so validation "
                  "sees quiet and busy periods alike (1: the window's tail only)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--overlap-weight", hp.overlap_weight,
                  "Cost of an hour of overlap relative to an hour of interruption")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--interruption-penalty", hp.interruption_penalty,
                  "Hours charged to a boundary with any interruption, on top of its length (what "
                  "the zero-interruption share counts)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--calibrate", hp.calibrate,
                  "Choose the decision threshold on validation (greedy, greedy by a margin, or "
                  "never submitting early when the model does worse than that) (true/false)")
      ->capture_default_str();
  cmd->add_option("--objective", hp.objective,
                  "What the threshold and the epoch are chosen for on validation: cost (lowest "
                  "mean cost) or match-average (lowest mean interruption with no more mean "
                  "overlap than the average baseline there)")
      ->check(CLI::IsMember({"cost", "match-average"}))
      ->capture_default_str();
  cmd->add_option("--overlap-cap", hp.overlap_cap,
                  "match-average: hold the overlap to the average baseline's in each validation "
                  "block (blocks) or over all validation episodes (pooled)")
      ->check(CLI::IsMember({"blocks", "pooled"}))
      ->capture_default_str();
  cmd->add_option("--overlap-confidence", hp.overlap_confidence,
                  "match-average: admit a threshold only where its overlap stays within the cap "
                  "in at least this share of day-bootstrap resamples of validation (0: compare "
                  "the means)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--forecast-guard", hp.forecast_guard,
                  "Submit only once the queue forecast plans the successor to start no earlier "
                  "than the predecessor's end: limits (running jobs to their time limits, where "
                  "the forecast baseline submits; 'on' is the same), halved (every other job "
                  "running half of what its limit leaves: opens later), recent (every other job "
                  "running as the recently ended jobs ran), off, or auto (off, limits or halved, "
                  "chosen on validation with the threshold)")
      ->check(CLI::IsMember({"auto", "off", "limits", "halved", "recent", "on"}))
      ->capture_default_str();
  cmd->add_option("--follow-average", hp.follow_average,
                  "Also try rules that follow the average baseline: where it would submit, "
                  "submit unless the margin is below a second threshold chosen on validation "
                  "(average itself is then one of the rules)")
      ->capture_default_str();
  cmd->add_option("--window-clause", hp.window_clause,
                  "Also try each final rule with a window clause: submit, whatever the margin, "
                  "once the predecessor has at most 1-4 h left and the queue forecast (limits, "
                  "halved or recent) plans a wait of 1-8 h were the successor submitted at its "
                  "end (a big job's reservation closing the window); the plan and both bounds "
                  "chosen on validation")
      ->capture_default_str();
  cmd->add_option("--target-update", hp.target_update,
                  "dqn/moe: gradient steps between target-network copies")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--huber-delta", hp.huber_delta, "dqn/moe: Huber loss threshold (hours)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--gamma", hp.gamma, "dqn/moe: discount per decision")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--wait-target", hp.wait_target,
                  "dqn/moe: value of waiting: bootstrap (max of the target network at the next "
                  "instant) or rollout (exact cost of the target network's greedy policy from "
                  "there, read off the probes)")
      ->check(CLI::IsMember({"bootstrap", "rollout"}))
      ->capture_default_str();
  cmd->add_option("--value-rescale", hp.value_rescale,
                  "dqn/moe: learn h(Q) with h(x) = sign(x)(sqrt(|x|+1)-1) + 0.001x (true/false)")
      ->capture_default_str();
  cmd->add_option("--priority-alpha", hp.priority_alpha,
                  "dqn/moe: prioritised replay exponent on |TD error| (0: uniform replay)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--priority-beta", hp.priority_beta,
                  "dqn/moe: importance-sampling exponent correcting the prioritised draw")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--pg-estimator", hp.pg_estimator,
                  "pg: reinforce (sampled stopping times, learned baseline) or exact (the "
                  "expected cost over all stopping times, differentiated directly)")
      ->check(CLI::IsMember({"reinforce", "exact"}))
      ->capture_default_str();
  cmd->add_option("--pg-batch-episodes", hp.pg_batch_episodes, "pg: episodes per gradient step")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--pg-samples", hp.pg_samples, "pg: stopping times sampled per episode")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--entropy", hp.entropy, "pg: entropy bonus weight")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--ensemble", hp.ensemble,
                  "Networks trained with seeds seed, seed+1, ...; the model decides on their mean "
                  "margin (1: one network)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--experts", hp.experts, "moe: experts, one per consecutive period")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--gate-hidden", hp.gate_hidden, "moe: units of the gate's hidden layer")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([o] {
    const int rc = run_train(*o);
    if (rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace mirage::cli
