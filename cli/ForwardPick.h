#pragma once
// `mirage eval`'s forward pick: the least-cost point of its policies (agents/LeastCostPick.h)
// chosen on earlier sample times, whose episodes are all over before --from, in each world the
// evaluation asked for; then what that point costs on the judged window, beside the point
// hindsight would have chosen there.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/Evaluation.h"
#include "mirage/agents/LeastCostPick.h"

namespace mirage::cli {

struct ForwardPick {
  PickWindow window;
  Seconds length = 0;
  std::string wait_fit;  // quantile's wait distribution for the earlier window, when one is read
  std::string left_out;  // quantile's points, when too few jobs before the earlier window fit it
  struct World {
    SuccessorWait world = SuccessorWait::kReplay;
    std::size_t samples_there = 0;
    std::vector<PointCost> there;     // every point's cost on the earlier window
    std::optional<PointCost> picked;  // the least of them
    std::vector<PointCost> here;      // every point's cost on the judged window
    std::optional<PointCost> hindsight;
    // Points censored on every sample the others finished, left out of the pick (there) and of
    // hindsight's (here): price_points.
    std::vector<std::string> left_out_there, left_out_here;
    std::string no_figures;  // why a world has no pick, in one line
  };
  std::vector<World> worlds;
  std::string unit;  // "h a boundary", "GPU-h", "node-h"
};

// The earlier window of `length` (its sample times every `judged.every`). `judged_reports`: the
// judged window's reports, one per world, already on the same samples. `wait_file`: quantile's
// --wait-distribution (empty: fitted on the 90 days before the earlier window). nullopt, with a
// note on stderr, when the log does not reach back that far and the length was the default;
// InputError naming --pick-before when it was given.
std::optional<ForwardPick> pick_forward(const Trace& trace, const EvalConfig& judged,
                                        const std::vector<const EvalReport*>& judged_reports,
                                        Seconds length, bool length_given,
                                        const std::string& wait_file);

std::string format_forward_pick(const ForwardPick& p, std::size_t width);
nlohmann::json forward_pick_json(const ForwardPick& p);

}  // namespace mirage::cli
