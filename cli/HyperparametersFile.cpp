#include "HyperparametersFile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string_view>
#include <variant>

#include "mirage/core/Error.h"
#include "mirage/core/TomlFile.h"

namespace mirage::cli {
namespace {

// A mode by its name: how to set it from one, read it back, and the names it takes.
struct Mode {
  std::function<bool(std::string_view)> set;  // false: not one of the names
  std::function<std::string()> get;
  std::vector<std::string_view> names;
};

std::vector<std::string_view> guard_names() {
  std::vector<std::string_view> names{"auto", learned::to_string(learned::ForecastGuard::kOff)};
  for (const auto g : learned::kForecastGuards) names.push_back(learned::to_string(g));
  return names;
}

// "auto" (none named: chosen on validation), or a guard.
Mode guard_mode(std::optional<learned::ForecastGuard>& field) {
  return {[&field](std::string_view text) {
            if (text == "auto") {
              field.reset();
              return true;
            }
            const auto g = learned::parse_forecast_guard(text);
            if (g) field = *g;
            return g.has_value();
          },
          [&field] { return std::string(learned::to_string(field)); }, guard_names()};
}

// One key: the field it sets, the values it takes, what it does.
struct Knob {
  const char* key;
  std::variant<int*, double*, bool*, Mode> field;
  double lo = 0, hi = 0;  // numbers: the range
  const char* help;
};

std::vector<Knob> knobs(LearningSettings& s) {
  learned::Hyperparameters& hp = s.hp;
  return {
      {"hidden", &hp.hidden, 1, 4096, "units per hidden layer"},
      {"layers", &hp.layers, 0, 8, "hidden layers"},
      {"batch_size", &hp.batch_size, 1, 1 << 20, "transitions per gradient step (dqn, moe)"},
      {"lr", &hp.lr, 1e-9, 10, "Adam learning rate"},
      {"weight_decay", &hp.weight_decay, 0, 10, "AdamW weight decay"},
      {"epochs", &hp.max_epochs, 0, 100000,
       "most passes over the training data (per expert and for the gate with moe)"},
      {"patience", &hp.patience, 1, 100000,
       "early stopping: epochs without a better validation cost"},
      {"val_fraction", &hp.val_fraction, 0.01, 0.9,
       "share of each block of the window held out (its time-ordered tail) for validation"},
      {"val_blocks", &hp.val_blocks, 1, 1000,
       "consecutive blocks of the window, each validated on its tail (1: the window's tail)"},
      {"overlap_weight", &hp.overlap_weight, 0, 1e6,
       "cost of an hour of overlap relative to an hour of interruption"},
      {"forecast_guard", guard_mode(hp.forecast_guard), 0, 0,
       "submit only once the queue forecast plans the successor no earlier than the "
       "predecessor's end (auto: chosen on validation)"},
      {"target_update", &hp.target_update, 1, 1e9,
       "dqn/moe: gradient steps between target-network copies"},
      {"huber_delta", &hp.huber_delta, 1e-9, 1e6, "dqn/moe: Huber loss threshold (hours)"},
      {"gamma", &hp.gamma, 0, 1, "dqn/moe: discount per decision"},
      {"priority_alpha", &hp.priority_alpha, 0, 10,
       "dqn/moe: prioritised replay exponent on |TD error| (0: uniform)"},
      {"priority_beta", &hp.priority_beta, 0, 1,
       "dqn/moe: importance-sampling exponent correcting the prioritised draw"},
      {"pg_batch_episodes", &hp.pg_batch_episodes, 1, 1e9, "pg: episodes per gradient step"},
      {"pg_samples", &hp.pg_samples, 1, 1e9, "pg: stopping times sampled per episode"},
      {"entropy", &hp.entropy, 0, 1e6, "pg: entropy bonus weight"},
      {"risk_input", &hp.risk_input, 0, 0,
       "train over prices, the risk an input (an idle hour costs RISK, an hour charged twice "
       "1 - RISK; drawn from 0.1 to 0.9): MODEL@RISK picks the point as quantile@RISK does; "
       "needs ensemble = 1"},
      {"quantile_residual", &hp.quantile_residual, 0, 0,
       "pg with risk_input and --wait-distribution: learn a departure from quantile@RISK, "
       "starting as exactly that rule"},
      {"history", &hp.history, 0, 24,
       "pg with risk_input: the sequence model over the last N queue snapshots, an hour apart, "
       "through a 1-D convolution over time (0: none; 3 to 24)"},
      {"history_channels", &hp.history_channels, 1, 1024,
       "the sequence model's convolution filters"},
      {"ensemble", &hp.ensemble, 1, 1000,
       "networks trained with seeds seed, seed+1, ...; the model decides on their mean margin"},
      {"experts", &hp.experts, 1, 1000, "moe: experts, one per consecutive period"},
      {"gate_hidden", &hp.gate_hidden, 1, 4096, "moe: units of the gate's hidden layer"},
      {"torch_threads", &s.torch_threads, 1, 1024,
       "LibTorch intra-op threads per network (small networks gain nothing from more)"},
  };
}

std::string value_text(const Knob& k) {
  struct Text {
    std::string operator()(int* v) const { return std::to_string(*v); }
    std::string operator()(double* v) const { return fmt::format("{:g}", *v); }
    std::string operator()(bool* v) const { return *v ? "true" : "false"; }
    std::string operator()(const Mode& m) const { return "\"" + m.get() + "\""; }
  };
  return std::visit(Text{}, k.field);
}

std::string expected(const Knob& k) {
  struct Expected {
    const Knob& k;
    std::string operator()(int*) const {
      return fmt::format("an integer from {:g} to {:g}", k.lo, k.hi);
    }
    std::string operator()(double*) const {
      return fmt::format("a number from {:g} to {:g}", k.lo, k.hi);
    }
    std::string operator()(bool*) const { return "true or false"; }
    std::string operator()(const Mode& m) const {
      return fmt::format("one of \"{}\"", fmt::join(m.names, "\", \""));
    }
  };
  return std::visit(Expected{k}, k.field);
}

// Sets the knob from `n`; false when the value does not fit.
bool set(const Knob& k, const toml::node& n) {
  struct Set {
    const Knob& k;
    const toml::node& n;
    bool in_range(double v) const { return v >= k.lo && v <= k.hi; }
    bool operator()(int* f) const {
      const auto v = n.value_exact<std::int64_t>();
      if (!v || !in_range(static_cast<double>(*v))) return false;
      *f = static_cast<int>(*v);
      return true;
    }
    bool operator()(double* f) const {
      const auto v = n.value<double>();  // integers too
      if (!v || !in_range(*v)) return false;
      *f = *v;
      return true;
    }
    bool operator()(bool* f) const {
      const auto v = n.value_exact<bool>();
      if (!v) return false;
      *f = *v;
      return true;
    }
    bool operator()(const Mode& m) const {
      const auto v = n.value_exact<std::string>();
      return v && m.set(*v);
    }
  };
  return std::visit(Set{k, n}, k.field);
}

}  // namespace

LearningSettings read_hyperparameters(const std::string& path) {
  const toml::table root = read_toml_file(path, "the hyperparameters file");
  LearningSettings s;
  const std::vector<Knob> all = knobs(s);
  for (const auto& [key, node] : root) {
    const auto line = static_cast<long>(key.source().begin.line);
    const auto it =
        std::find_if(all.begin(), all.end(), [&](const Knob& k) { return key.str() == k.key; });
    if (it == all.end())
      throw InputError({path, line, std::string(key.str())},
                       "unknown key (`mirage train --help` lists them)");
    if (!set(*it, node))
      throw InputError({path, static_cast<long>(node.source().begin.line), it->key},
                       "expected " + expected(*it));
  }
  return s;
}

std::string hyperparameters_help() {
  LearningSettings defaults;
  std::string out =
      "Hyperparameters (keys of --hyperparameters FILE.toml, e.g. `epochs = 20`; "
      "defaults in brackets):\n";
  for (const Knob& k : knobs(defaults))
    out += fmt::format("  {} [{}]: {}\n", k.key, value_text(k), k.help);
  return out;
}

}  // namespace mirage::cli
