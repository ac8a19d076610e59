#include "ForwardPick.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "Progress.h"
#include "TimeFlags.h"
#include "WaitFit.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/WorldComparison.h"
#include "mirage/core/Error.h"

namespace mirage::cli {
namespace {

std::string day(Seconds t) {
  return format_iso_time(t).substr(0, 10);
}

}  // namespace

std::optional<ForwardPick> pick_forward(const Trace& trace, const EvalConfig& judged,
                                        const std::vector<const EvalReport*>& judged_reports,
                                        Seconds length, bool length_given,
                                        const std::string& wait_file) {
  const bool logged =
      std::any_of(judged_reports.begin(), judged_reports.end(),
                  [](const EvalReport* r) { return r->world == SuccessorWait::kLogged; });
  ForwardPick p;
  p.length = length;
  p.window = forward_pick_window(judged, length, logged);
  // As the judged window: a day into the log, for a queue to have built up.
  const Seconds earliest = trace.jobs.front().submit + kDay;
  if (p.window.from < earliest) {
    const std::string why = fmt::format(
        "a forward pick needs {} of sample times whose episodes end before --from ({} .. {}), "
        "but the log begins {}",
        format_short_duration(length), day(p.window.from), day(p.window.to),
        day(trace.jobs.front().submit));
    if (length_given) throw InputError({"", 0, "--pick-before"}, why + ": give a shorter one");
    fmt::print(stderr, "mirage eval: note: no forward pick: {} (--pick-before sets the length)\n",
               why);
    return std::nullopt;
  }
  const double work_h = judged.episode.campaign.active()
                            ? static_cast<double>(judged.episode.campaign.work) / kHour
                            : 0.0;
  const EvalReport& first = *judged_reports.front();
  p.unit = work_h > 0 ? (first.gpus_known ? "GPU-h" : "node-h") : "h a boundary";
  EvalConfig c = judged;
  c.from = p.window.from;
  c.to = p.window.to;
  // The oracle is a bound, never a pick: per boundary nothing there needs it (whole campaigns
  // are compared where every policy, the oracle too, completed, so it stays for them).
  if (work_h <= 0) std::erase(c.policies, std::string(kOracleName));
  if (c.context.waits) {
    try {
      c.context.waits = wait_distribution_for(trace, c.cluster, c.episode.chain, c.from, wait_file);
      p.wait_fit = c.context.waits->describe();
    } catch (const InputError& e) {
      // Too few jobs before the earlier window to fit quantile on: the pick is made among the
      // other points, and says so, rather than on a distribution that saw the judged window.
      std::erase_if(c.policies, reads_wait_distribution);
      c.context.waits.reset();
      const std::string why = e.message();
      p.left_out = fmt::format("quantile left out of the pick: {}",
                               why.substr(0, why.find("; quantile is fitted")));
    }
  }
  std::vector<EvalReport> there;
  for (const EvalReport* r : judged_reports) {
    c.world = r->world;
    Progress progress(fmt::format("eval (forward pick, {} world): episodes", to_string(r->world)));
    there.push_back(
        evaluate(trace, c, [&](std::size_t d, std::size_t t) { progress.update(d, t); }));
    progress.finish();
  }
  // Both worlds on the same samples, as on the judged window.
  if (there.size() > 1 && !there.back().sample_times.empty())
    keep_samples(there.front(), there.back().sample_times, c);
  for (std::size_t i = 0; i < there.size(); ++i) {
    ForwardPick::World w;
    w.world = there[i].world;
    w.samples_there = there[i].sample_times.size();
    if (const auto lacks_here = world_lacks_data(*judged_reports[i])) {
      w.no_figures = *lacks_here;
      p.worlds.push_back(std::move(w));
      continue;
    }
    // Hindsight is the judged window's own: it stands where the earlier window has no figures.
    PricedPoints here_costs = price_points(*judged_reports[i], judged.episode.chain, work_h);
    w.here = std::move(here_costs.costs);
    w.left_out_here = std::move(here_costs.left_out);
    w.hindsight = least_cost(w.here);
    const std::string finish = work_h > 0 ? "its campaign" : "its chain";
    if (const auto why = why_no_figures(there[i])) {
      w.no_figures = fmt::format("no pick: the earlier samples ({} .. {}) have no figures: {}",
                                 day(p.window.from), day(p.window.to), *why);
    } else {
      PricedPoints there_costs = price_points(there[i], c.episode.chain, work_h);
      w.there = std::move(there_costs.costs);
      w.left_out_there = std::move(there_costs.left_out);
      w.picked = least_cost(w.there);
      if (!w.picked)
        w.no_figures = fmt::format(
            "no pick: on none of the {} earlier samples did any policy finish {} (the log's end "
            "or --max-wait cut every one off)",
            w.samples_there, finish);
    }
    if (w.picked && !w.hindsight)
      w.no_figures = fmt::format(
          "no figures here: on no sample of the judged window did any policy finish {}", finish);
    p.worlds.push_back(std::move(w));
  }
  return p;
}

std::string format_forward_pick(const ForwardPick& p, std::size_t width) {
  const bool campaign = p.unit != "h a boundary";
  std::string s = fmt::format(
      "\nforward pick: the least-cost point (an hour {} priced as an hour charged twice), chosen "
      "on the samples of {} .. {} ({}, every episode over before --from), judged here beside "
      "hindsight's pick; costs in {}{}\n",
      campaign ? "idle or late" : "waited", day(p.window.from), day(p.window.to),
      format_short_duration(p.length), p.unit,
      p.wait_fit.empty() ? "" : "; quantile there fitted on " + p.wait_fit);
  if (!p.left_out.empty()) s += "  " + p.left_out + "\n";
  const auto figures = [&](const PointCost& c) {
    return campaign ? fmt::format("{:.1f} h / {:.0f}", c.first, c.second)
                    : fmt::format("{:.2f} + {:.2f} h", c.first, c.second);
  };
  s += fmt::format("  {:<7} {:<{}} {:>10} {:>10} {:>18}   {:<{}} {:>10} {:>18}\n", "world",
                   "picked before", width, "cost then", "cost here",
                   campaign ? "makespan / charged" : "int. + ovl.", "hindsight's pick", width,
                   "cost here", campaign ? "makespan / charged" : "int. + ovl.");
  for (const ForwardPick::World& w : p.worlds) {
    if (!w.no_figures.empty()) {
      s += fmt::format("  {:<7} {}\n", to_string(w.world), w.no_figures);
      // No pick, but the judged window has figures: hindsight's pick there still reads.
      if (w.hindsight)
        s += fmt::format("  {:<7} hindsight's pick here: {} {:.1f} ({})\n", "", w.hindsight->policy,
                         w.hindsight->cost, figures(*w.hindsight));
      continue;
    }
    const PointCost* here = find_cost(w.here, w.picked->policy);
    const bool censored_here = std::find(w.left_out_here.begin(), w.left_out_here.end(),
                                         w.picked->policy) != w.left_out_here.end();
    s += fmt::format("  {:<7} {:<{}} {:>10.1f} {:>10} {:>18}   {:<{}} {:>10.1f} {:>18}\n",
                     to_string(w.world), w.picked->policy, width, w.picked->cost,
                     here ? fmt::format("{:.1f}", here->cost) : "-",
                     here            ? figures(*here)
                     : censored_here ? "censored here"
                                     : "not run here",
                     w.hindsight->policy, width, w.hindsight->cost, figures(*w.hindsight));
    const auto left_out = [&](const std::vector<std::string>& names, const char* where) {
      if (names.empty()) return;
      s += fmt::format(
          "  {:<7} left out {}: {} (cut off on every sample where the others finished; the rest "
          "priced without {})\n",
          "", where, fmt::join(names, ", "), names.size() == 1 ? "it" : "them");
    };
    left_out(w.left_out_there, "of the pick");
    left_out(w.left_out_here, "of hindsight's");
  }
  return s;
}

nlohmann::json forward_pick_json(const ForwardPick& p) {
  nlohmann::json j = {{"from", format_iso_time(p.window.from)},
                      {"to", format_iso_time(p.window.to)},
                      {"length_s", p.length},
                      {"unit", p.unit}};
  if (!p.wait_fit.empty()) j["wait_distribution_there"] = p.wait_fit;
  if (!p.left_out.empty()) j["left_out"] = p.left_out;
  // A campaign's figures are its makespan and charge; a boundary's its waiting and holding twice.
  const bool campaign = p.unit != "h a boundary";
  const auto cost = [&](const PointCost& c) {
    return nlohmann::json{{"policy", c.policy},
                          {"cost", c.cost},
                          {campaign ? "makespan_h" : "interruption_h", c.first},
                          {campaign ? "charged" : "overlap_h", c.second}};
  };
  for (const ForwardPick::World& w : p.worlds) {
    nlohmann::json wj = {{"samples_there", w.samples_there}};
    if (!w.no_figures.empty()) wj["no_figures"] = w.no_figures;
    if (w.picked) {
      wj["picked"] = cost(*w.picked);
      if (const PointCost* here = find_cost(w.here, w.picked->policy))
        wj["picked_here"] = cost(*here);
    }
    if (w.hindsight) wj["hindsight"] = cost(*w.hindsight);
    if (!w.left_out_there.empty()) wj["left_out_there"] = w.left_out_there;
    if (!w.left_out_here.empty()) wj["left_out_here"] = w.left_out_here;
    // Every point on both windows: other prices, or a budget, choose among them the same way.
    for (const PointCost& c : w.there) wj["there"].push_back(cost(c));
    for (const PointCost& c : w.here) wj["here"].push_back(cost(c));
    j["worlds"][std::string(to_string(w.world))] = wj;
  }
  return j;
}

}  // namespace mirage::cli
