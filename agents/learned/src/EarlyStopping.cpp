#include "Nets.h"

namespace mirage::learned {

bool EarlyStopping::record(const Calibration& cal) {
  if (cal.score < best_score - 1e-9) {
    best_score = cal.score;
    best_rule = cal.rule;
    best_val = cal.val;
    bad_epochs = 0;
    return true;
  }
  ++bad_epochs;
  return false;
}

void EarlyStopping::save(torch::serialize::OutputArchive& a) const {
  put_int(a, "epoch", epoch);
  put_int(a, "bad_epochs", bad_epochs);
  put_double(a, "best_score", best_score);
  put_double(a, "best_threshold", best_rule.threshold);
  put_int(a, "best_forecast_guard", static_cast<int>(best_rule.guard));
  put_double(a, "best_after_average", best_rule.after_average);
  put_metrics(a, "best_val", best_val);
}

void EarlyStopping::load(torch::serialize::InputArchive& a) {
  epoch = static_cast<int>(get_int(a, "epoch"));
  bad_epochs = static_cast<int>(get_int(a, "bad_epochs"));
  best_score = get_double(a, "best_score");
  best_rule.threshold = get_double(a, "best_threshold");
  best_rule.guard = static_cast<ForecastGuard>(get_int(a, "best_forecast_guard"));
  best_rule.after_average = get_double(a, "best_after_average");
  best_val = get_metrics(a, "best_val");
}

}  // namespace mirage::learned
