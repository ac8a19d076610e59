#include "WaitFit.h"

#include <fmt/format.h>

#include <algorithm>

#include "mirage/core/Error.h"
#include "mirage/simulator/Fidelity.h"

namespace mirage::cli {

std::shared_ptr<const WaitPredictor> wait_distribution_for(const Trace& trace,
                                                           const ClusterSpec& cluster,
                                                           const ChainSpec& chain, Seconds before,
                                                           const std::string& file) {
  if (!file.empty()) {
    auto d = read_wait_predictor(file);
    if (const auto why = d->chain_mismatch(chain.nodes))
      throw InputError({file, 0, "chain_nodes"}, "cannot serve this chain: " + *why);
    fmt::print(stderr, "mirage: quantile reads the successor's wait from {}: {}\n", file,
               d->describe());
    if (d->fitted_to() > before)
      fmt::print(stderr,
                 "mirage: warning: {} was fitted on jobs submitted after {}: its intervals are "
                 "not checked on unseen months\n",
                 file, format_iso_time(before).substr(0, 10));
    return d;
  }
  WaitDistributionSpec spec;
  spec.nodes = chain.nodes;
  spec.gpus_per_node = chain.gpus_per_node;
  spec.time_limit = chain.time_limit;
  spec.to = before;
  spec.from = std::max(trace.jobs.front().submit, before - kFitWindow);
  try {
    auto d =
        std::make_shared<const BinnedWaitPredictor>(fit_wait_distribution(trace, cluster, spec));
    fmt::print(stderr, "mirage: quantile: the successor's wait fitted on {}\n", d->describe());
    return d;
  } catch (const InputError& e) {
    throw InputError({trace.source, 0, "quantile"},
                     e.message() +
                         "; quantile is fitted on the 90 days before --from: move --from later, "
                         "or give --wait-distribution FILE (mirage trace waits)");
  }
}

}  // namespace mirage::cli
