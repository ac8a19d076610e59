// `mirage trace refit-waits EXPORT --current FILE --candidate FILE --from --to [--out FILE]`: the
// weekly refit's last step (scripts/refit-waits.sh). Both wait predictors are judged forward, on
// the real waits of the jobs of the site's own accounting submitted in the window (after the
// candidate's fit), as `trace waits --check` judges one; the candidate replaces the model in use
// only when its pinball loss is lower. One line says which, and why.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <memory>

#include "ClusterOptions.h"
#include "Commands.h"
#include "TimeFlags.h"
#include "mirage/agents/WaitCheck.h"
#include "mirage/agents/WaitPredictor.h"
#include "mirage/core/Error.h"
#include "mirage/core/Time.h"
#include "mirage/traces/LoggedQueue.h"

namespace mirage::cli {
namespace {

struct RefitOptions {
  std::string trace_file;
  std::string current, candidate;
  std::string out;  // empty: --current
  std::string from, to;
  TraceOptions trace_options;
  ClusterOptions cluster;
};

// Copies `from` over `to` through a file beside it, so the daemon never reads half a model.
void replace_file(const std::string& from, const std::string& to) {
  const std::string staging = to + ".new";
  std::error_code ec;
  std::filesystem::copy_file(from, staging, std::filesystem::copy_options::overwrite_existing, ec);
  if (!ec) std::filesystem::rename(staging, to, ec);
  if (ec) throw InputError({to, 0, "--out"}, "cannot write it: " + ec.message());
}

void run_refit(const RefitOptions& o) {
  Trace trace = read_trace(o.trace_file, o.trace_options.to_read_options());
  const auto current = read_wait_predictor(o.current);
  const auto candidate = read_wait_predictor(o.candidate);
  const Seconds from = parse_time_flag(o.from, "--from"), to = parse_time_flag(o.to, "--to");
  if (to <= from) throw InputError({"", 0, "--to"}, "must be after --from");
  if (candidate->fitted_to() > from)
    throw InputError({o.candidate, 0, "fitted_to"},
                     fmt::format("the refit was fitted until {}, after --from {}: it is judged "
                                 "forward, on jobs it was not fitted on",
                                 format_iso_time(candidate->fitted_to()), o.from));
  for (const auto& [file, p] : {std::pair{o.current, current}, std::pair{o.candidate, candidate}})
    if (const auto why = p->trace_mismatch(trace)) throw InputError({file, 0, "categories"}, *why);
  ClusterSpec spec = o.cluster.to_spec(trace);
  o.cluster.calibrate(trace, spec);  // the priority weights the forecast ranks the queue by

  // The jobs both speak for: each is judged on the same real waits.
  std::vector<std::size_t> judged;
  std::vector<Seconds> times, real;
  for (std::size_t i = 0; i < trace.jobs.size(); ++i) {
    const Job& job = trace.jobs[i];
    if (job.submit < from || job.submit >= to || !job.started()) continue;
    if (!current->speaks_for(job, job.nodes) || !candidate->speaks_for(job, job.nodes)) continue;
    judged.push_back(i);
    times.push_back(job.submit);
    real.push_back(job.wait());
  }
  if (judged.empty())
    throw InputError({trace.source, 0, "start"},
                     fmt::format("no job submitted in {} .. {} has a real start that both {} and "
                                 "{} speak for: nothing to judge the refit on",
                                 o.from, o.to, o.current, o.candidate));
  std::vector<WaitQuantiles> by_current(judged.size()), by_candidate(judged.size());
  for_each_logged_queue(trace.jobs, times, spec.nodes, spec.gpus_per_node, spec.priority,
                        [&](std::size_t k, const QueueSnapshot& queue) {
                          const Job& job = trace.jobs[judged[k]];
                          by_current[k] = current->predict_logged(queue, job);
                          by_candidate[k] = candidate->predict_logged(queue, job);
                        });
  const double now_h = *score_quantiles(real, by_current).pinball_h;
  const double refit_h = *score_quantiles(real, by_candidate).pinball_h;
  const std::string out = o.out.empty() ? o.current : o.out;
  const std::string figures =
      fmt::format("pinball loss {:.3f} h against {:.3f} h on the {} jobs submitted {} .. {}",
                  refit_h, now_h, judged.size(), o.from, o.to);
  if (refit_h < now_h) {
    replace_file(o.candidate, out);
    fmt::print("replaced {} with the refit {}: {}\n", out, o.candidate, figures);
  } else {
    fmt::print("kept {}: the refit {} does not predict better forward ({})\n", o.current,
               o.candidate, figures);
  }
}

}  // namespace

void register_trace_refit_waits_command(CLI::App& trace) {
  auto o = std::make_shared<RefitOptions>();
  CLI::App* cmd = trace.add_subcommand(
      "refit-waits",
      "Swap a refitted wait model in for the one in use only if it predicts the window's real "
      "waits better (lower pinball loss); the weekly refit's last step");
  cmd->add_option("FILE", o->trace_file, "Trace with real start times (mirage trace export)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--current", o->current, "The wait model or distribution in use")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--candidate", o->candidate, "The refit, fitted before --from")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", o->out, "Where the refit goes if it wins (default: --current)");
  cmd->add_option("--from", o->from, "Judge on jobs submitted from (YYYY-MM-DD[THH:MM:SS], UTC)")
      ->required();
  cmd->add_option("--to", o->to, "... until (exclusive)")->required();
  o->trace_options.add_to(*cmd);
  o->cluster.add_to(*cmd);
  cmd->callback([o] { run_refit(*o); });
}

}  // namespace mirage::cli
