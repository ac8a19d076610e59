// The probes' split into training and validation days.
#include "LearnedFixtures.h"

namespace mirage::learned {
namespace {

class ProbeSetTest : public LearnedTest {};

TEST_F(ProbeSetTest, ValidationIsTheTailOfEveryBlockWithTheEpisodesReachingIntoItPurged) {
  // 30 days of hourly episodes, 3 blocks of 10 days, the last 10% of each validates, and an
  // episode spans a day.
  ProbeSet data;
  for (int h = 0; h < 30 * 24; ++h) {
    ProbeSet::Episode e;
    e.sample_time = kT0 + h * kHour;
    data.episodes.push_back(e);
  }
  const Split s = time_split(data, 0.1, kDay, 3);
  ASSERT_EQ(s.val.size(), 3u * 24);
  EXPECT_EQ(s.blocks, 3);
  for (int b = 0; b < 3; ++b)  // 24 hours at the end of each block
    for (int h = 0; h < 24; ++h) {
      const auto i = static_cast<std::size_t>(b * 24 + h);
      EXPECT_EQ(data.episodes[s.val[i]].sample_time, kT0 + (b + 1) * 10 * kDay - kDay + h * kHour);
    }
  // The day before each validation period is purged; training goes on after it.
  EXPECT_EQ(s.purged, 3u * 23);
  EXPECT_EQ(s.train.size() + s.val.size() + s.purged, data.episodes.size());
  for (std::size_t i : s.train) {
    const Seconds t = data.episodes[i].sample_time - kT0;
    const Seconds into_block = t % (10 * kDay);
    EXPECT_TRUE(into_block + kDay <= 9 * kDay) << "episode at " << t / kHour << " h";
  }
  EXPECT_GT(data.episodes[s.train.back()].sample_time, kT0 + 20 * kDay);
  // One block: the plain time-ordered tail.
  const Split tail = time_split(data, 0.1, kDay, 1);
  EXPECT_EQ(data.episodes[tail.val.front()].sample_time, kT0 + 27 * kDay);
}

}  // namespace
}  // namespace mirage::learned
