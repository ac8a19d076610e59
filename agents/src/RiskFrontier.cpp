#include "mirage/agents/RiskFrontier.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "mirage/core/DurableFile.h"
#include "mirage/core/Error.h"
#include "mirage/core/TomlFile.h"

namespace mirage {

void write_risk_frontier(const std::string& path, const RiskFrontier& f) {
  std::string text = fmt::format(
      "# The risk frontier `mirage eval --sweep-risk` measured: each point a policy at one\n"
      "# setting of its risk knob, with the mean interruption and overlap per boundary it "
      "reached.\n"
      "# `[policy] frontier` in the daemon's config makes `mirage campaign add --max-overlap`\n"
      "# choose from it.\n"
      "trace = {}\nchain_nodes = {}\nlimit_min = {}\noverlap = {}\n",
      toml_quoted(f.trace), f.chain_nodes, f.time_limit / kMinute, toml_quoted(f.overlap));
  for (const FrontierOperatingPoint& p : f.points)
    text += fmt::format(
        "\n[[point]]\npolicy = {}\nmean_interruption_h = {:.4f}\nmean_overlap_h = {:.4f}\n",
        toml_quoted(p.policy), p.mean_interruption_h, p.mean_overlap_h);
  write_file_durably(path, text);
}

RiskFrontier read_risk_frontier(const std::string& path) {
  const toml::table root = read_toml_file(path, "the risk frontier");
  const auto bad = [&](long line, const std::string& key, const std::string& what) {
    return InputError({path, line, key}, what);
  };
  RiskFrontier f;
  for (const auto& [key, node] : root) {
    const std::string k(key.str());
    if (k == "trace" && node.is_string()) {
      f.trace = *node.value<std::string>();
    } else if (k == "chain_nodes" && node.value<std::int64_t>() &&
               *node.value<std::int64_t>() > 0) {
      f.chain_nodes = static_cast<int>(*node.value<std::int64_t>());
    } else if (k == "limit_min" && node.value<std::int64_t>() && *node.value<std::int64_t>() > 0) {
      f.time_limit = *node.value<std::int64_t>() * kMinute;
    } else if (k == "overlap" && node.is_string()) {
      f.overlap = *node.value<std::string>();
    } else if (k == "point" && node.is_array_of_tables()) {
      for (const auto& entry : *node.as_array()) {
        const toml::table& t = *entry.as_table();
        FrontierOperatingPoint p;
        bool policy = false, interruption = false, overlap = false;
        for (const auto& [pk, pv] : t) {
          const std::string name(pk.str());
          const auto number = pv.value<double>();
          if (name == "policy" && pv.is_string()) {
            p.policy = *pv.value<std::string>();
            policy = !p.policy.empty();
          } else if (name == "mean_interruption_h" && number && *number >= 0 &&
                     std::isfinite(*number)) {
            p.mean_interruption_h = *number;
            interruption = true;
          } else if (name == "mean_overlap_h" && number && *number >= 0 && std::isfinite(*number)) {
            p.mean_overlap_h = *number;
            overlap = true;
          } else {
            throw bad(toml_line(pv), "point." + name,
                      "expected policy (a name), mean_interruption_h and mean_overlap_h (hours, "
                      "0 or more)");
          }
        }
        if (!policy || !interruption || !overlap)
          throw bad(toml_line(entry), "point",
                    "a point needs policy, mean_interruption_h and mean_overlap_h");
        f.points.push_back(p);
      }
    } else {
      throw bad(toml_line(node), k,
                "unknown key or bad value (expected trace, chain_nodes, limit_min, overlap and "
                "[[point]] tables)");
    }
  }
  if (f.points.empty()) throw bad(0, "point", "the frontier has no [[point]]");
  return f;
}

std::optional<FrontierOperatingPoint> point_within(const RiskFrontier& f, Seconds max_overlap) {
  const double cap = static_cast<double>(max_overlap) / kHour;
  std::optional<FrontierOperatingPoint> best;
  for (const FrontierOperatingPoint& p : f.points) {
    if (p.mean_overlap_h > cap + 1e-9) continue;
    if (!best || p.mean_interruption_h < best->mean_interruption_h ||
        (p.mean_interruption_h == best->mean_interruption_h &&
         p.mean_overlap_h < best->mean_overlap_h))
      best = p;
  }
  return best;
}

const FrontierOperatingPoint& least_overlap_point(const RiskFrontier& f) {
  return *std::min_element(f.points.begin(), f.points.end(),
                           [](const FrontierOperatingPoint& a, const FrontierOperatingPoint& b) {
                             return a.mean_overlap_h < b.mean_overlap_h;
                           });
}

}  // namespace mirage
