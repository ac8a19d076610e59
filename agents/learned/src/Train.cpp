// train_agent: probe (or load) the window, split it, train the chosen agent, write its model file.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "Internal.h"
#include "ModelFile.h"
#include "mirage/agents/learned/LearnedModel.h"
#include "mirage/core/Error.h"

namespace mirage::learned {
namespace {

nlohmann::json hyperparameters_json(const Hyperparameters& hp) {
  return {{"hidden", hp.hidden},
          {"layers", hp.layers},
          {"batch_size", hp.batch_size},
          {"lr", hp.lr},
          {"weight_decay", hp.weight_decay},
          {"max_epochs", hp.max_epochs},
          {"patience", hp.patience},
          {"val_fraction", hp.val_fraction},
          {"val_blocks", hp.val_blocks},
          {"overlap_weight", hp.overlap_weight},
          {"forecast_guard", to_string(hp.forecast_guard)},
          {"target_update", hp.target_update},
          {"huber_delta", hp.huber_delta},
          {"gamma", hp.gamma},
          {"priority_alpha", hp.priority_alpha},
          {"priority_beta", hp.priority_beta},
          {"pg_batch_episodes", hp.pg_batch_episodes},
          {"pg_samples", hp.pg_samples},
          {"entropy", hp.entropy},
          {"risk_input", hp.risk_input},
          {"quantile_residual", hp.quantile_residual},
          {"history", hp.history},
          {"history_channels", hp.history_channels},
          {"experts", hp.experts},
          {"gate_hidden", hp.gate_hidden},
          {"ensemble", hp.ensemble}};
}

// The world the outcomes were read in (ProbeSpec::world), and how the logged one pooled the log.
nlohmann::json world_json(const ProbeSpec& p) {
  nlohmann::json w = {{"successor_wait", std::string(to_string(p.world))}};
  if (p.world == SuccessorWait::kLogged) {
    w["logged_window_s"] = p.logged_window;
    w["logged_jobs"] = p.logged_jobs;
  }
  return w;
}

// What a checkpoint must agree on to be resumed: everything but when to stop, so that a run can
// also be resumed with more epochs or more patience.
std::string run_fingerprint(const TrainConfig& c) {
  auto hp = hyperparameters_json(c.hp);
  hp.erase("max_epochs");
  hp.erase("patience");
  return std::string(to_string(c.agent)) + " seed=" + std::to_string(c.seed) + " " + hp.dump();
}

void check(const TrainConfig& c) {
  const Hyperparameters& hp = c.hp;
  auto bad = [](const char* flag, const std::string& what) {
    throw InputError({"", 0, flag}, what);
  };
  if (c.out.empty()) bad("--out", "a model file is required");
  if (c.probes.to <= c.probes.from) bad("--to", "must be after --from");
  if (c.probes.every <= 0) bad("--every", "must be positive");
  if (hp.hidden < 1 || hp.layers < 0) bad("hidden", "the network needs at least one unit");
  if (hp.val_fraction <= 0 || hp.val_fraction >= 1)
    bad("val_fraction", "must be in (0, 1): early stopping needs held-out episodes");
  if (hp.val_blocks < 1) bad("val_blocks", "needs at least one block");
  if (hp.overlap_weight < 0) bad("overlap_weight", "must not be negative");
  if (hp.experts < 1) bad("experts", "needs at least one expert");
  if (hp.ensemble < 1) bad("ensemble", "needs at least one member");
  if (hp.risk_input && hp.ensemble != 1)
    bad("ensemble", "must be 1 with risk_input (one network for every price)");
  if (hp.quantile_residual && !hp.risk_input)
    bad("quantile_residual", "needs risk_input = true (the residual is on quantile@risk)");
  if (hp.quantile_residual && c.agent != AgentKind::kPg)
    bad("quantile_residual", "the residual on quantile@risk is pg's (--agent pg)");
  if (hp.history != 0 && (!hp.risk_input || c.agent != AgentKind::kPg))
    bad("history", "the sequence model is pg's with risk_input = true");
  if (hp.history != 0 && (hp.history < 3 || hp.history > kMaxHistory))
    bad("history", "must be 0 (none) or from 3 to " + std::to_string(kMaxHistory) +
                       " snapshots (an hour apart, within the encoder's window)");
  if (hp.history_channels < 1) bad("history_channels", "needs at least one channel");
  if (hp.quantile_residual && !c.probes.waits)
    bad("--wait-distribution",
        "quantile_residual needs a wait predictor (--wait-distribution FILE) for quantile@risk");
}

}  // namespace

TrainSummary train_agent(const Trace& trace, const TrainConfig& config,
                         const TrainCallbacks& callbacks) {
  check(config);
  set_torch_threads(config.torch_threads);
  TrainSummary summary;
  const auto t0 = std::chrono::steady_clock::now();
  ProbeSet data;
  {
    const ProbeSpec& spec = config.probes;
    const std::string cache =
        config.probe_cache_dir.empty()
            ? ""
            : probe_cache_file(config.probe_cache_dir, config.trace_path, trace, spec);
    bool cached = false;
    add_probes(data, probe_or_load(trace, spec, cache, config.threads, callbacks.probe, &cached),
               spec.waits != nullptr, config.hp.history > 0);
    summary.probes_from_cache = cached;
  }
  const auto t1 = std::chrono::steady_clock::now();
  summary.probe_seconds = std::chrono::duration<double>(t1 - t0).count();
  summary.episodes = data.episodes.size();
  summary.transitions = data.decisions();
  summary.unscored_episodes = data.unscored_episodes;
  summary.unscored_instants = data.unscored_instants;

  CostModel cost;
  cost.overlap_weight = config.hp.overlap_weight;
  cost.overlap = config.probes.episode.chain.overlap;
  cost.handoff_grace = config.probes.episode.chain.handoff_grace;
  // An episode spans its horizon; those that would reach into the validation period are purged.
  const Split split = time_split(data, config.hp.val_fraction, config.probes.episode.horizon(),
                                 config.hp.val_blocks);
  summary.train_episodes = split.train.size();
  summary.val_episodes = split.val.size();
  summary.purged_episodes = split.purged;
  if (split.train.empty() || split.val.empty())
    throw InputError(
        {"", 0, "--from"},
        "the window gives " + std::to_string(data.episodes.size()) + " probed episode(s), " +
            std::to_string(split.train.size()) + " to train and " +
            std::to_string(split.val.size()) +
            " to validate: too few; widen --from/--to, shorten --every or use "
            "fewer --val-blocks" +
            (data.unscored_episodes > 0 ? " (" + std::to_string(data.unscored_episodes) +
                                              " had no logged wait: widen --logged-window)"
                                        : std::string()));
  summary.reactive = evaluate_stops(data, split.val, reactive_stops(data, split.val), cost);
  summary.average = evaluate_stops(data, split.val, average_stops(data, split.val), cost);
  summary.hindsight = evaluate_stops(data, split.val, hindsight_stops(data, split.val, cost), cost);

  const auto& ep = config.probes.episode;
  const auto& cl = config.probes.cluster;
  nlohmann::json meta = {
      {"format", "mirage-model"},
      {"format_version", 1},
      {"agent", std::string(to_string(config.agent))},
      {"encoder_version", FeatureEncoder::kVersion},
      {"pooling_version", kPoolingVersion},
      {"pooled_features", data.width},
      {"trace",
       {{"path", config.trace_path}, {"source", trace.source}, {"jobs", trace.jobs.size()}}},
      {"window",
       {{"from", format_iso_time(config.probes.from)},
        {"to", format_iso_time(config.probes.to)},
        {"every_s", config.probes.every},
        {"start", config.probes.mode == EpisodeStartMode::kForkReplay ? "fork" : "peer"}}},
      {"world", world_json(config.probes)},
      // Read again from there by every live decision, and refused if its bytes changed.
      {"wait_predictor", config.probes.waits
                             ? nlohmann::json{{"path", config.probes.waits_ref.path},
                                              {"digest", config.probes.waits_ref.digest}}
                             : nlohmann::json()},
      {"machine",
       {{"nodes", cl.nodes},
        {"gpus_per_node", cl.gpus_per_node},
        {"allocation", std::string(to_string(cl.allocation))},
        {"backfill", std::string(to_string(cl.scheduler.backfill))}}},
      {"chain",
       {{"nodes", ep.chain.nodes},
        {"gpus_per_node", ep.chain.gpus_per_node},
        {"limit_s", ep.chain.time_limit},
        {"overlap", std::string(to_string(ep.chain.overlap))},
        {"max_wait_s", ep.max_wait}}},
      {"overlap_weight", config.hp.overlap_weight},
      {"hyperparameters", hyperparameters_json(config.hp)},
      {"seed", config.seed},
      {"training",
       {{"episodes", summary.episodes},
        {"train_episodes", summary.train_episodes},
        {"val_episodes", summary.val_episodes},
        {"transitions", summary.transitions}}}};
  const std::string probes_fingerprint = probe_fingerprint(trace, config.probes);
  // Each member of an ensemble is a model of its own seed, in a file of its own.
  const auto context = [&](const TrainConfig& c) {
    nlohmann::json m = meta;
    m["hyperparameters"] = hyperparameters_json(c.hp);
    m["seed"] = c.seed;
    return TrainContext{c,
                        data,
                        split,
                        cost,
                        callbacks,
                        m.dump(),
                        run_fingerprint(c) + " " + probes_fingerprint,
                        c.checkpoint.empty() ? c.out + ".ckpt" : c.checkpoint};
  };
  const auto train_one = [](const TrainContext& c) {
    switch (c.config.agent) {
      case AgentKind::kDqn: return train_dqn(c);
      case AgentKind::kPg: return c.config.hp.risk_input ? train_risk_pg(c) : train_pg(c);
      case AgentKind::kMoe: break;
    }
    return train_moe(c);
  };
  const TrainContext ctx = context(config);
  AgentResult r;
  if (config.hp.ensemble == 1) {
    r = train_one(ctx);
    // The window clause is chosen with the final rule (combine_ensemble), for one network too.
    if (!config.hp.risk_input) r = combine_ensemble(ctx, {config.out}, r.epochs);
  } else {
    // Member k: seed + k, its own file and checkpoint (so --resume resumes each), the files
    // removed once the ensemble holds their weights.
    std::vector<std::string> files;
    int epochs = 0;
    for (int k = 0; k < config.hp.ensemble; ++k) {
      TrainConfig member = config;
      member.seed = config.seed + static_cast<std::uint64_t>(k);
      member.hp.ensemble = 1;
      member.out = config.out + ".member" + std::to_string(k + 1);
      if (callbacks.message)
        callbacks.message("ensemble member " + std::to_string(k + 1) + "/" +
                          std::to_string(config.hp.ensemble) + ", seed " +
                          std::to_string(member.seed));
      epochs += train_one(context(member)).epochs;
      files.push_back(member.out);
    }
    r = combine_ensemble(ctx, files, epochs);
    for (const std::string& f : files) std::filesystem::remove(f);
  }
  summary.agent = r.val;
  summary.epochs = r.epochs;
  summary.rule = r.rule;
  if (config.hp.risk_input)  // as the file holds them
    summary.risk_points =
        read_risk_model(nlohmann::json::parse(read_model_info(config.out).metadata_json),
                        config.out)
            ->points;
  summary.train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  return summary;
}

}  // namespace mirage::learned
