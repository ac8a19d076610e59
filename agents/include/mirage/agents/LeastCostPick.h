#pragma once
// The least-cost point among evaluated policies, at the newsvendor's equal prices: an hour waited
// (with --work, an hour a campaign's GPUs stand idle or finish late) costs as much as an hour
// charged twice. `mirage eval` makes the pick forward: on sample times whose episodes are all over
// before the judged window begins, so the choice never sees the window it is judged on, and it
// reports what the chosen point costs there beside the point hindsight would have chosen.
#include <optional>
#include <string>
#include <vector>

#include "mirage/agents/Evaluation.h"

namespace mirage {

struct PointCost {
  std::string policy;
  // A boundary: hours waited plus held twice. A campaign: GPU-hours (node-hours where the GPUs
  // per node are not known) idle or late plus charged beyond the work.
  double cost = 0;
  // A boundary: interruption and overlap, hours. A campaign: makespan, hours, and GPU-h charged.
  double first = 0, second = 0;
};

// Each policy's cost, the oracle aside: per boundary on the samples where every policy finished
// (as the verdict judges), with `work_h` > 0 on the campaigns every policy finished (the report's
// campaign metrics). Empty when there is none such.
std::vector<PointCost> point_costs(const EvalReport& report, const ChainSpec& chain, double work_h);

// Each policy's cost as point_costs gives it; where that finds none because some points were cut
// off (censored) on every sample the others finished, those that finished least are left out, one
// at a time, until the rest share a finished sample (or campaign) and are priced on those.
struct PricedPoints {
  std::vector<PointCost> costs;
  std::vector<std::string> left_out;  // in the order they were left out
};
PricedPoints price_points(const EvalReport& report, const ChainSpec& chain, double work_h);

// The least cost; ties go to reactive, which decides nothing, then to the least charged twice.
std::optional<PointCost> least_cost(const std::vector<PointCost>& costs);

const PointCost* find_cost(const std::vector<PointCost>& costs, const std::string& policy);

// Sample times for a forward pick: `length` of them ending where every episode they start (and,
// in the logged world, each wait's window of real jobs) is over by `judged.from`.
struct PickWindow {
  Seconds from = 0, to = 0;
};
PickWindow forward_pick_window(const EvalConfig& judged, Seconds length, bool logged_world);

}  // namespace mirage
