#include "mirage/agents/PolicyRegistry.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "mirage/agents/Baselines.h"
#include "mirage/agents/learned/ModelPolicyHook.h"
#include "mirage/core/Error.h"

namespace mirage {
namespace {

// Set by mirage_learned (which links LibTorch); empty in programs built without it.
std::atomic<ModelPolicyLoader> model_loader{nullptr};
std::atomic<ModelRiskReader> risk_reader{nullptr};

}  // namespace

void set_model_policy_loader(ModelPolicyLoader loader) {
  model_loader.store(loader);
}

void set_model_risk_reader(ModelRiskReader reader) {
  risk_reader.store(reader);
}

std::optional<std::string> model_file_problem(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return "no such model file: " + path;
  std::ifstream f(path, std::ios::binary);
  char head[4] = {};
  f.read(head, sizeof head);
  // LibTorch writes its archives as zip files: a local file header first.
  constexpr char kZipMagic[] = {'P', 'K', '\x03', '\x04'};
  if (f.gcount() == sizeof head && std::equal(head, head + 4, kZipMagic)) return std::nullopt;
  return path +
         " is not a mirage model file: expected a LibTorch archive as `mirage train` "
         "writes it (a zip file, beginning \"PK\\x03\\x04\"), got \"" +
         escape_control(std::string_view(head, static_cast<std::size_t>(f.gcount()))) + "\"";
}

bool names_model_file(std::string_view name) {
  if (name.size() >= kModelFileExtension.size() &&
      name.substr(name.size() - kModelFileExtension.size()) == kModelFileExtension)
    return true;
  std::error_code ec;
  return !name.empty() && std::filesystem::is_regular_file(std::filesystem::path(name), ec);
}

std::vector<std::string> policy_names() {
  return {"reactive",       "average", "forecast", "forecast-recent",
          "slurm-estimate", "static",  "quantile", std::string(kOracleName)};
}

namespace {

// `static` alone: an hour's lead.
constexpr Seconds kStaticLead = kHour;

// The leads a family takes: static's is how long before the end it submits; the others' may
// also hold them back (negative), up to a segment's usual length.
bool lead_in_range(std::string_view family, Seconds lead) {
  if (family == "static") return lead >= 0 && lead <= 7 * kDay;
  return lead >= -2 * kDay && lead <= 7 * kDay;
}

std::optional<Seconds> parse_lead(std::string_view text) {
  if (text == "0") return 0;
  const bool negative = !text.empty() && text.front() == '-';
  const auto d = parse_short_duration(negative ? text.substr(1) : text);
  if (!d) return std::nullopt;
  return negative ? -*d : *d;
}

std::optional<double> parse_threshold(std::string_view text) {
  const std::string s(text);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool has_lead(std::string_view family) {
  return family == "average" || family == "forecast" || family == "forecast-recent" ||
         family == "slurm-estimate" || family == "static";
}

// What is wrong with the knob `name` gives its family, if anything.
std::optional<std::string> knob_problem(const PolicySpec& spec, std::string_view name) {
  if (spec.family == "quantile" &&
      (spec.lead || (spec.level && !(*spec.level > 0 && *spec.level < 1))))
    return "the level of '" + std::string(name) +
           "' is out of range (a quantile between 0 and 1, e.g. quantile@0.8)";
  if (!spec.lead) return std::nullopt;
  if (!has_lead(spec.family))
    return "'" + spec.family +
           "' has no risk knob (POLICY@LEAD takes average, forecast, forecast-recent, "
           "slurm-estimate and static; "
           "quantile@LEVEL a level between 0 and 1)";
  if (!lead_in_range(spec.family, *spec.lead))
    return "the lead of '" + std::string(name) + "' is out of range (" +
           (spec.family == "static" ? "0 to 7d" : "-2d to 7d") + ")";
  return std::nullopt;
}

}  // namespace

PolicySpec::PolicySpec(std::string_view text) : name(text), family(text) {
  const auto at = text.rfind('@');
  if (at == std::string_view::npos) return;
  const std::string head(text.substr(0, at));
  const std::string_view knob = text.substr(at + 1);
  if (names_model_file(head)) {
    if (const auto t = parse_threshold(knob)) {
      family = head;
      threshold = t;
    }
  } else if (const auto q = head == "quantile" ? parse_threshold(knob) : std::nullopt) {
    family = head;
    level = q;
  } else if (const auto l = parse_lead(knob)) {
    family = head;
    lead = l;
  }
}

namespace {

// A model file whose knob is a risk, swept at quantile's levels (ModelRiskReader).
bool reads_risk(std::string_view family) {
  if (!names_model_file(family) || model_file_problem(std::string(family))) return false;
  const ModelRiskReader reader = risk_reader.load();
  return reader && reader(std::string(family));
}

}  // namespace

std::vector<std::string> risk_sweep(std::string_view family) {
  std::vector<std::string> names;
  const auto lead_name = [&](Seconds h) {
    return std::string(family) + "@" + lead_text(h * kHour);
  };
  if (family == "static")
    for (Seconds h : {0, 1, 2, 4, 6, 9, 12, 18, 24}) names.push_back(lead_name(h));
  else if (has_lead(family))
    for (Seconds h : {-4, -2, -1, 0, 1, 2, 4, 8, 12}) names.push_back(lead_name(h));
  else if (family == "quantile" || reads_risk(family))
    for (const char* q : {"0.1", "0.2", "0.3", "0.4", "0.5", "0.6", "0.7", "0.8", "0.9"})
      names.push_back(std::string(family) + "@" + q);
  else if (names_model_file(family))
    for (const char* t : {"4", "2", "1", "0.5", "0.25", "0", "-0.25", "-0.5", "-1"})
      names.push_back(std::string(family) + "@" + t);
  return names;
}

std::unique_ptr<Policy> make_policy(const PolicySpec& spec, const PolicyContext& context) {
  const std::string& name = spec.name;
  if (const auto problem = knob_problem(spec, name)) throw InputError({"", 0, "policy"}, *problem);
  const Seconds lead = spec.lead.value_or(0);
  if (spec.family == "reactive" && !spec.lead) return std::make_unique<ReactivePolicy>();
  if (spec.family == "average") return std::make_unique<AveragePolicy>(lead);
  if (spec.family == "forecast")
    return std::make_unique<ForecastPolicy>(RuntimeGuess::limits(), lead);
  if (spec.family == "forecast-recent")
    return std::make_unique<ForecastPolicy>(RuntimeGuess::recent_ends(), lead);
  if (spec.family == "slurm-estimate") return std::make_unique<SlurmEstimatePolicy>(lead);
  if (spec.family == "static")
    return std::make_unique<StaticPolicy>(spec.lead.value_or(kStaticLead));
  if (spec.family == "quantile") {
    if (!context.waits)
      throw InputError({"", 0, "policy"},
                       "'" + name +
                           "' needs the distribution of the successor's wait on this cluster: "
                           "mirage eval fits it from the trace's months before --from, "
                           "--wait-distribution FILE reads one (mirage trace waits writes it)");
    return std::make_unique<QuantilePolicy>(context.waits,
                                            spec.level.value_or(QuantilePolicy::kDefaultLevel));
  }
  std::string known;
  for (const auto& n : policy_names()) known += (known.empty() ? "" : ", ") + n;
  if (name == kOracleName)
    throw InputError({"", 0, "policy"}, "the oracle exists only in simulation (mirage eval)");
  if (names_model_file(spec.family)) {
    // Checked before the loader runs: it loads the plugin, and LibTorch with it (150 MiB).
    if (const auto problem = model_file_problem(spec.family))
      throw InputError({"", 0, "policy"}, *problem);
    if (const ModelPolicyLoader load = model_loader.load())
      return load(spec.family, spec.threshold);
    throw InputError({std::string(name), 0, "policy"},
                     "this program was built without the learned agents, so it cannot load "
                     "model files");
  }
  throw InputError({"", 0, "policy"}, "unknown policy '" + std::string(name) +
                                          "' (expected one of: " + known + ", or a model file " +
                                          std::string(kModelFileExtension) + ")");
}

bool reads_wait_distribution(const PolicySpec& spec) {
  return spec.family == "quantile";
}

bool is_known_policy(const PolicySpec& spec) {
  for (const auto& n : policy_names())
    if (n == spec.family) return !knob_problem(spec, spec.name);
  return false;
}

}  // namespace mirage
