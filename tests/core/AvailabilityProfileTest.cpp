// The backfill plan's step function (AvailabilityProfile.h).
#include <gtest/gtest.h>

#include <random>

#include "mirage/core/AvailabilityProfile.h"

namespace mirage {
namespace {

// Where every request of every size and length would start, and on which slots.
std::vector<std::optional<Placement>> starts(const AvailabilityProfile& p, int capacity) {
  std::vector<std::optional<Placement>> out;
  for (int count = 1; count <= p.slots(); ++count)
    for (int units = 1; units <= capacity; ++units)
      for (Seconds duration : {1, 7, 30, 100, 1000})
        out.push_back(p.earliest_start({count, units}, duration, 2000));
  return out;
}

void expect_same(const std::vector<std::optional<Placement>>& a,
                 const std::vector<std::optional<Placement>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].has_value(), b[i].has_value()) << "request " << i;
    if (!a[i]) continue;
    EXPECT_EQ(a[i]->start, b[i]->start) << "request " << i;
    EXPECT_EQ(a[i]->slots, b[i]->slots) << "request " << i;
  }
}

// occupy_all is a faster occupy_until per holding: the same plan for every request, with ends in
// the past, shared ends and several holdings on one slot.
TEST(AvailabilityProfile, OccupyingAllAtOncePlansAsOccupyingEachInTurn) {
  std::mt19937 rng(7);
  for (int slots : {1, 4}) {
    const int capacity = slots == 1 ? 12 : 3;
    for (int round = 0; round < 50; ++round) {
      AvailabilityProfile one_by_one(100, slots, capacity), at_once(100, slots, capacity);
      std::vector<AvailabilityProfile::Holding> held;
      std::vector<int> used(static_cast<std::size_t>(slots), 0);
      for (int k = 0; k < 8; ++k) {
        const int slot = static_cast<int>(rng() % static_cast<unsigned>(slots));
        const int units = 1 + static_cast<int>(rng() % 2);
        if (used[slot] + units > capacity) continue;
        used[slot] += units;
        const Seconds end = 80 + 10 * static_cast<Seconds>(rng() % 12);  // some already over
        held.push_back({slot, units, end});
        one_by_one.occupy_until(slot, units, end);
      }
      at_once.occupy_all(held);
      for (int s = 0; s < slots; ++s) EXPECT_EQ(at_once.free_now(s), one_by_one.free_now(s));
      expect_same(starts(at_once, capacity), starts(one_by_one, capacity));
    }
  }
}

// A reservation splits the plan's segments; each new one starts as a copy of the one it splits.
TEST(AvailabilityProfile, AReservationLeavesTheTimeAroundItAsItWas) {
  AvailabilityProfile p(0, 2, 4);
  std::vector<AvailabilityProfile::Holding> held{{0, 3, 50}, {1, 1, 80}};
  p.occupy_all(held);
  p.reserve({20, {1}}, 3, 40);  // slot 1: 3 free until 80 except 0 over [20, 60)
  EXPECT_EQ(p.earliest_start({2, 3}, 10, 1000)->start, 60);  // both, once the reservation ends
  EXPECT_EQ(p.earliest_start({1, 3}, 10, 1000)->slots, std::vector<std::uint16_t>{1});
  EXPECT_EQ(p.earliest_start({1, 3}, 30, 1000)->start, 50);  // slot 0 once its job ends
  EXPECT_EQ(p.earliest_start({1, 4}, 10, 1000)->start, 50);
}

// A start no sooner than a given instant (a weekly boundary the job must not run across): the
// same plan from there, in a segment's middle too, in both allocation modes.
TEST(AvailabilityProfile, AStartNoSoonerThanAnInstantIsPlannedFromThere) {
  AvailabilityProfile pool(0, 1, 4);
  std::vector<AvailabilityProfile::Holding> held{{0, 3, 50}};
  pool.occupy_all(held);
  EXPECT_EQ(pool.earliest_start({1, 1}, 10, 1000, 30)->start, 30);  // 1 free all along
  EXPECT_EQ(pool.earliest_start({1, 2}, 10, 1000, 30)->start, 50);  // 2 free from 50
  EXPECT_EQ(pool.earliest_start({1, 2}, 10, 1000, 70)->start, 70);
  EXPECT_FALSE(pool.earliest_start({1, 1}, 10, 1000, 1001));  // past the latest start
  AvailabilityProfile nodes(0, 2, 4);
  std::vector<AvailabilityProfile::Holding> gpus{{0, 3, 50}, {1, 4, 80}};
  nodes.occupy_all(gpus);
  EXPECT_EQ(nodes.earliest_start({1, 1}, 10, 1000, 30)->start, 30);  // slot 0's one free GPU
  EXPECT_EQ(nodes.earliest_start({2, 2}, 10, 1000, 30)->start, 80);
  EXPECT_EQ(nodes.earliest_start({1, 4}, 10, 1000, 60)->start, 60);  // slot 0, free from 50
  expect_same(starts(nodes, 4), [&] {
    std::vector<std::optional<Placement>> out;  // not_before at or before now: no change
    for (int count = 1; count <= 2; ++count)
      for (int units = 1; units <= 4; ++units)
        for (Seconds duration : {1, 7, 30, 100, 1000})
          out.push_back(nodes.earliest_start({count, units}, duration, 2000, 0));
    return out;
  }());
}

// What a backfill pass asks before planning on: the fewest units free from now until an end, with
// a reservation in the future taking from the plan.
TEST(AvailabilityProfile, LeastFreeUntilIsTheFewestFromNowToTheEnd) {
  AvailabilityProfile pool(0, 1, 10);
  std::vector<AvailabilityProfile::Holding> held{{0, 4, 100}};
  pool.occupy_all(held);
  pool.reserve(Placement{50, {0}}, 3, 100);  // free: 6 until 50, 3 until 100, 7 until 150, then 10
  std::vector<int> so_far;
  pool.least_free_so_far(so_far);
  EXPECT_EQ(pool.least_free_until(so_far, 1), 6);
  EXPECT_EQ(pool.least_free_until(so_far, 50), 6);  // [0, 50): the reservation not yet begun
  EXPECT_EQ(pool.least_free_until(so_far, 51), 3);
  EXPECT_EQ(pool.least_free_until(so_far, 1000), 3);  // past every change: the fewest of all
}

// A pass remakes the least free units only from the first segment its reservations changed, and
// places whole-node jobs in the pool without a placement: both as the whole computations give,
// over random plans and reservations.
TEST(AvailabilityProfile, APooledPlanRemadeFromItsFirstChangeIsThePlanMadeWhole) {
  std::mt19937 rng(11);
  for (int round = 0; round < 50; ++round) {
    AvailabilityProfile pool(100, 1, 12);
    std::vector<AvailabilityProfile::Holding> held;
    for (int k = 0; k < 6; ++k)
      held.push_back({0, static_cast<int>(rng() % 3) + 1, 100 + static_cast<Seconds>(rng() % 500)});
    pool.occupy_all(held);
    std::vector<int> partial, whole;
    pool.least_free_so_far(partial);
    for (int k = 0; k < 8; ++k) {
      const int units = static_cast<int>(rng() % 6) + 1;
      const Seconds duration = 1 + static_cast<Seconds>(rng() % 300);
      const auto start = pool.earliest_start_pooled(units, duration, 2000);
      const auto placed = pool.earliest_start({1, units}, duration, 2000);
      ASSERT_EQ(start.has_value(), placed.has_value());
      if (!start) continue;
      EXPECT_EQ(*start, placed->start);
      const std::size_t from = pool.reserve_pooled(*start, units, duration);
      pool.least_free_so_far(partial, from);
      pool.least_free_so_far(whole);
      EXPECT_EQ(partial, whole) << "round " << round << ", reservation " << k;
    }
  }
}

}  // namespace
}  // namespace mirage
