// --max-cost and --max-hours decide before an iteration, on a clock the
// test moves by hand: no timing in the assertions.
#include <gtest/gtest.h>

#include "loop/caps.h"

namespace phoenix::loop {
namespace {

TEST(Caps, CostStopsBeforeTheIterationThatWouldPassIt) {
  long long now = 0;
  Caps caps({1.0, std::nullopt}, [&] { return now; });
  EXPECT_FALSE(caps.before_iteration(0).stop);  // nothing known yet: the first one starts
  caps.add_run(0.4);
  EXPECT_FALSE(caps.before_iteration(1).stop);  // 0.40 + 0.40 <= 1.00
  caps.add_run(0.35);
  caps.add(0.05, 0);                           // a heal in the same iteration
  Caps::Verdict v = caps.before_iteration(2);  // 0.80 + 0.40 > 1.00
  ASSERT_TRUE(v.stop);
  EXPECT_EQ(v.cap, "--max-cost");
  EXPECT_EQ(v.why,
            "--max-cost 1.00 USD: 0.80 USD spent in 2 iterations; the next could cost 0.40 USD (the most one has cost "
            "so far) and pass it");
  EXPECT_NEAR(caps.figures()["cost_usd"].get<double>(), 0.8, 1e-9);
}

TEST(Caps, UnknownCostIsShownAsUnknownNeverZero) {
  Caps caps({1.0, std::nullopt}, [] { return 0LL; });
  caps.add_run(std::nullopt);
  caps.add_run(std::nullopt, false);  // never reached a model: free
  EXPECT_TRUE(caps.figures()["cost_usd"].is_null());
  EXPECT_EQ(caps.figures()["unknown_cost_runs"], 1);
  EXPECT_EQ(caps.spent_text(), "cost unknown (1 run reported no cost)");
  Caps::Verdict v = caps.before_iteration(1);
  EXPECT_FALSE(v.stop);
  EXPECT_EQ(v.warning,
            "--max-cost: 1 run reported no cost; what they spent is unknown and not counted against the cap");
  EXPECT_TRUE(caps.before_iteration(2).warning.empty()) << "said once";
  caps.add_run(0.25);
  EXPECT_EQ(caps.spent_text(), "0.25 USD spent + 1 run of unknown cost");
}

TEST(Caps, HoursCountTheLongestIterationAndIgnoreWaits) {
  const long long min = 60 * 1000;
  long long now = 0;
  Caps caps({std::nullopt, 1.0}, [&] { return now; });
  EXPECT_FALSE(caps.before_iteration(0).stop);
  now = 10 * min;                               // iteration 1: 10 min
  EXPECT_FALSE(caps.before_iteration(1).stop);  // 10 + 10 <= 60
  now += 30 * min;                              // a rate-limit wait: no iteration
  EXPECT_FALSE(caps.before_iteration(1).stop);  // 40 + 10 <= 60 (the wait is no iteration's length)
  now += 5 * min;                               // iteration 2: 5 min
  EXPECT_FALSE(caps.before_iteration(2).stop);  // 45 + 10 <= 60
  now += 6 * min;                               // iteration 3: 6 min
  Caps::Verdict v = caps.before_iteration(3);   // 51 + 10 > 60
  ASSERT_TRUE(v.stop);
  EXPECT_EQ(v.cap, "--max-hours");
  EXPECT_EQ(v.why,
            "--max-hours 1: 51 min elapsed in 3 iterations; the next iteration could take 10 min (the longest so "
            "far) and pass it");
  EXPECT_NEAR(caps.seconds_left(), 9 * 60, 1e-6);
}

TEST(Caps, FiguresForAPerson) {
  long long now = 0;
  Caps caps({1.0, 6.0}, [&] { return now; });
  caps.add_run(0.8);
  caps.add_run(std::nullopt);
  now = 12 * 60 * 1000;
  EXPECT_EQ(figures_text(caps.figures()),
            "0.80 USD spent + 1 run of unknown cost (cap 1.00 USD), 12 min elapsed (cap 6 h)");
  Caps unknown({std::nullopt, std::nullopt}, [] { return 0LL; });
  unknown.add_run(std::nullopt);
  EXPECT_EQ(figures_text(unknown.figures()), "cost unknown (1 run reported no cost), 0.0 s elapsed");
}

TEST(Caps, ResumeCarriesTheFiguresOn) {
  long long now = 0;
  Caps first({2.0, 1.0}, [&] { return now; });
  first.add_run(1.5);
  now = 30 * 60 * 1000;
  Caps again({2.0, 1.0}, [&] { return now; });
  again.restore(first.figures());
  EXPECT_EQ(again.figures()["cost_usd"], 1.5);
  EXPECT_NEAR(again.seconds_left(), 30 * 60, 1e-6);
  again.add_run(0.5);
  Caps::Verdict v = again.before_iteration(3);
  ASSERT_TRUE(v.stop);
  EXPECT_EQ(v.why, "--max-cost 2.00 USD reached: 2.00 USD spent in 3 iterations");
}

}  // namespace
}  // namespace phoenix::loop
