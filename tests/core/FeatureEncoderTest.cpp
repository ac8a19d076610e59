// The feature encoder: the fixed-size vector every policy and learned agent reads.
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

TEST(FeatureEncoder, NormalisesTimesCountsAndSizes) {
  EXPECT_FLOAT_EQ(FeatureEncoder::time_feature(0), 0.f);
  EXPECT_FLOAT_EQ(FeatureEncoder::time_feature(48 * kHour), 1.f);
  QueueSnapshot q;
  q.total_nodes = 10;
  q.pending = {{kHour, 2, 0, 600}, {2 * kHour, 4, 0, 1200}};
  q.running = {{48 * kHour, 5, 0, 0, 3600}};
  const auto f = FeatureEncoder::encode_snapshot(q);
  EXPECT_FLOAT_EQ(f[0], 0.2f);                                     // 2 pending / 10 nodes
  EXPECT_FLOAT_EQ(f[1], 0.6f);                                     // 6 pending nodes / 10
  EXPECT_FLOAT_EQ(f[2], FeatureEncoder::time_feature(kHour));      // pending limit p0
  EXPECT_FLOAT_EQ(f[6], FeatureEncoder::time_feature(2 * kHour));  // pending limit p100
  EXPECT_FLOAT_EQ(f[12], 0.1f);                                    // 1 running / 10
  EXPECT_FLOAT_EQ(f[13], 0.5f);
  EXPECT_FLOAT_EQ(f[14], 1.f);                                 // running limit 48 h
  EXPECT_FLOAT_EQ(f[28], FeatureEncoder::time_feature(3600));  // running time run p100
}

// The five percentiles are the sorted list's entries at 0, 1/4, 1/2, 3/4 and the end, rounded to
// the nearest place: on lists of every length up to 40, with repeats.
TEST(FeatureEncoder, PercentilesAreTheSortedListsQuarterPoints) {
  std::mt19937 rng(3);
  for (std::size_t n = 1; n <= 40; ++n) {
    QueueSnapshot q;
    q.total_nodes = 10;
    std::vector<Seconds> waits;
    for (std::size_t i = 0; i < n; ++i) {
      waits.push_back(static_cast<Seconds>(rng() % 12) * 1800);
      q.pending.push_back({kHour, 1, 0, waits.back()});
    }
    std::sort(waits.begin(), waits.end());
    const auto f = FeatureEncoder::encode_snapshot(q);
    for (std::size_t k = 0; k <= 4; ++k)
      EXPECT_FLOAT_EQ(f[7 + k], FeatureEncoder::time_feature(waits[((n - 1) * k + 2) / 4]))
          << n << " waits, percentile " << 25 * k;
  }
}

TEST(FeatureEncoder, ObservationsHaveAFixedSizeAndZeroPadShortHistory) {
  ObservationBuilder b;
  QueueSnapshot q;
  q.total_nodes = 4;
  q.pending = {{kHour, 1, 0, 60}};
  b.add(q);
  const Observation o = b.build(CampaignView{});
  EXPECT_EQ(o.window_filled, 1);
  EXPECT_EQ(o.encoder_version, FeatureEncoder::kVersion);
  const auto x = FeatureEncoder::encode(o);
  ASSERT_EQ(x.size(), static_cast<std::size_t>(FeatureEncoder::kInputSize));
  for (int i = 0; i < (FeatureEncoder::kWindow - 1) * FeatureEncoder::kPerSnapshot; ++i)
    ASSERT_EQ(x[static_cast<std::size_t>(i)], 0.f);
  EXPECT_FLOAT_EQ(x[(FeatureEncoder::kWindow - 1) * FeatureEncoder::kPerSnapshot], 0.25f);
}

}  // namespace
}  // namespace mirage
