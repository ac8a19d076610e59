// Policies made by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "mirage/agents/Baselines.h"
#include "mirage/agents/Evaluation.h"
#include "mirage/agents/PolicyRegistry.h"
#include "mirage/agents/Probe.h"
#include "mirage/agents/ReactiveWhatIf.h"
#include "mirage/core/Error.h"
#include "support/BusyTrace.h"

namespace mirage {
namespace {

TEST(PolicyRegistry, CreatesBaselinesByNameAndNamesTheKnownOnesOnError) {
  EXPECT_EQ(make_policy("reactive")->name(), "reactive");
  EXPECT_EQ(make_policy("average")->name(), "average");
  EXPECT_EQ(make_policy("forecast")->name(), "forecast");
  EXPECT_EQ(make_policy("forecast-recent")->name(), "forecast-recent");
  try {
    make_policy("nope");
    FAIL() << "expected an error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "reactive, average, forecast, forecast-recent, slurm-estimate, static, quantile, "
                  "oracle"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace mirage
