#include "mirage/simulator/SlurmConf.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <map>
#include <utility>

#include "mirage/core/Error.h"
#include "mirage/core/Text.h"
#include "mirage/core/Time.h"

namespace mirage {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

struct Value {
  std::string text;
  long line = 0;
};

class Keys {
 public:
  explicit Keys(std::string path) : path_(std::move(path)) {}
  void add(std::string key, Value v) { keys_[std::move(key)] = std::move(v); }
  const Value* get(const char* key) const {
    const auto it = keys_.find(key);
    return it == keys_.end() ? nullptr : &it->second;
  }
  [[noreturn]] void fail(const Value& v, const std::string& key, const std::string& what) const {
    throw InputError({path_, v.line, key}, what + ", got '" + v.text + "'");
  }
  double number(const Value& v, const std::string& key, std::string_view text) const {
    double out = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    if (ec != std::errc() || end != text.data() + text.size() || out < 0)
      fail(v, key, "expected a number from 0");
    return out;
  }
  Seconds duration(const Value& v, const std::string& key) const {
    const auto d = parse_slurm_duration(v.text);
    if (!d || *d < 0) fail(v, key, "expected a duration such as 7-0 (days-hours) or minutes");
    return *d;
  }

 private:
  std::string path_;
  std::map<std::string, Value> keys_;  // lower-case key -> its last value
};

void read_scheduler_parameters(const Keys& keys, const Value& v, SlurmConf& conf) {
  SchedulerParameters& s = conf.spec.scheduler;
  std::string_view rest = v.text;
  while (!rest.empty()) {
    const auto comma = rest.find(',');
    const std::string_view item = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (item.empty()) continue;
    const auto eq = item.find('=');
    const std::string k = lower(item.substr(0, eq));
    const std::string_view val = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    const std::string field = "SchedulerParameters:" + k;
    const auto whole = [&](double lo) {
      const double x = keys.number(v, field, val);
      if (x < lo || x != static_cast<double>(static_cast<long long>(x)))
        keys.fail(v, field, "expected a whole number from " + std::to_string(int(lo)));
      return static_cast<long long>(x);
    };
    if (k == "sched_interval") {
      s.sched_interval = whole(1);
    } else if (k == "bf_interval") {
      s.bf_interval = whole(1);
    } else if (k == "bf_window") {
      s.bf_window = whole(1) * kMinute;  // minutes in slurm.conf
    } else if (k == "bf_resolution") {
      s.bf_resolution = whole(1);
    } else if (k == "bf_max_job_test") {
      s.bf_max_job_test = static_cast<int>(whole(1));
    } else if (k == "bf_max_job_user") {
      s.bf_max_job_user = static_cast<int>(whole(0));
    } else {
      conf.notes.push_back("SchedulerParameters " + std::string(item) +
                           " is not modelled by the simulator");
    }
  }
}

}  // namespace

SlurmConf read_slurm_conf(const std::string& path, ClusterSpec base) {
  std::ifstream in(path);
  if (!in) throw InputError({path, 0, ""}, "cannot read the slurm.conf");
  Keys keys(path);
  std::string line;
  for (long line_no = 1; std::getline(in, line); ++line_no) {
    std::string_view text = line;
    if (const auto hash = text.find('#'); hash != std::string_view::npos)
      text = text.substr(0, hash);
    text = trim(text);
    const auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    std::string key = lower(trim(text.substr(0, eq)));
    if (key == "nodename" || key == "partitionname") continue;
    keys.add(std::move(key), {std::string(trim(text.substr(eq + 1))), line_no});
  }

  // Slurm's defaults for what the file leaves out.
  SlurmConf conf;
  ClusterSpec& s = conf.spec;
  s = base;
  s.scheduler = SchedulerParameters{};
  s.priority = PriorityParameters{};
  s.priority.weight_age = 0;
  s.priority.weight_job_size = 0;
  s.priority.weight_fairshare = 0;

  if (const Value* v = keys.get("schedulertype")) {
    if (v->text == "sched/builtin")
      s.scheduler.backfill = BackfillMode::kNone;
    else if (v->text != "sched/backfill")
      keys.fail(*v, "SchedulerType", "expected sched/backfill or sched/builtin");
  }
  if (const Value* v = keys.get("schedulerparameters")) read_scheduler_parameters(keys, *v, conf);

  const Value* type = keys.get("prioritytype");
  if (!type || type->text != "priority/multifactor") {
    conf.notes.push_back(
        "PriorityType is not priority/multifactor: every job has the same priority, so jobs are "
        "scheduled in submit order");
    return conf;
  }
  if (const Value* v = keys.get("priorityweightage"))
    s.priority.weight_age = keys.number(*v, "PriorityWeightAge", v->text);
  if (const Value* v = keys.get("priorityweightjobsize"))
    s.priority.weight_job_size = keys.number(*v, "PriorityWeightJobSize", v->text);
  if (const Value* v = keys.get("priorityweightfairshare"))
    s.priority.weight_fairshare = keys.number(*v, "PriorityWeightFairshare", v->text);
  if (const Value* v = keys.get("prioritymaxage"))
    s.priority.max_age = keys.duration(*v, "PriorityMaxAge");
  if (const Value* v = keys.get("prioritydecayhalflife"))
    s.priority.decay_half_life = keys.duration(*v, "PriorityDecayHalfLife");
  if (const Value* v = keys.get("priorityfavorsmall"))
    s.priority.favor_small = lower(v->text) == "yes";
  for (const char* k : {"priorityweightpartition", "priorityweightqos", "priorityweightassoc",
                        "priorityweighttres"}) {
    const Value* v = keys.get(k);
    if (v && v->text != "0" && !v->text.empty())
      conf.notes.push_back(std::string(k) + "=" + v->text + " is not modelled by the simulator");
  }
  const Value* storage = keys.get("accountingstoragetype");
  const bool dbd = storage && storage->text == "accounting_storage/slurmdbd";
  if (!dbd && (s.priority.weight_age != 0 || s.priority.weight_fairshare != 0)) {
    conf.notes.push_back(
        "PriorityWeightAge and PriorityWeightFairshare are ignored by Slurm without SlurmDBD: "
        "the simulator uses 0");
    s.priority.weight_age = 0;
    s.priority.weight_fairshare = 0;
  }
  s.scheduler.priority_calc_period = 5 * kMinute;  // Slurm's default
  if (const Value* v = keys.get("prioritycalcperiod"))
    s.scheduler.priority_calc_period = keys.duration(*v, "PriorityCalcPeriod");
  return conf;
}

}  // namespace mirage
