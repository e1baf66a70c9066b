#include "loop/caps.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "util/format.h"

namespace phoenix::loop {

using util::Json;

namespace {

constexpr double kEpsilon = 1e-9;  // sums of cents are not exact in binary

long long steady_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string runs(int n) { return std::to_string(n) + (n == 1 ? " run" : " runs"); }
std::string iterations(int n) { return std::to_string(n) + (n == 1 ? " iteration" : " iterations"); }

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

std::string duration_text(long long ms) {
  if (ms < 120 * 1000) return util::seconds_tenths(ms);
  char buf[32];
  if (ms < 120 * 60 * 1000) std::snprintf(buf, sizeof buf, "%lld min", (ms + 30000) / 60000);
  else std::snprintf(buf, sizeof buf, "%.2f h", static_cast<double>(ms) / 3600000.0);
  return buf;
}

std::string usd_text(double usd) {
  char buf[32];
  std::snprintf(buf, sizeof buf, usd != 0 && usd < 0.01 ? "%.4f USD" : "%.2f USD", usd);
  return buf;
}

Caps::Caps(CapLimits limits, std::function<long long()> steady_ms)
    : limits_(limits), steady_ms_(steady_ms ? std::move(steady_ms) : steady_now_ms), start_ms_(steady_ms_()) {}

void Caps::add_run(std::optional<double> cost_usd, bool may_have_cost) {
  if (cost_usd) {
    known_usd_ += *cost_usd;
    ++known_runs_;
  } else if (may_have_cost) {
    ++unknown_runs_;
  }
}

void Caps::add(double known_usd, int unknown_runs) {
  known_usd_ += known_usd;
  if (known_usd > 0) ++known_runs_;
  unknown_runs_ += unknown_runs;
}

long long Caps::elapsed_ms() const { return earlier_ms_ + (steady_ms_() - start_ms_); }

double Caps::seconds_left() const {
  if (!limits_.max_hours) return 1e9;
  return std::max(0.0, *limits_.max_hours * 3600.0 - static_cast<double>(elapsed_ms()) / 1000.0);
}

Caps::Verdict Caps::before_iteration(int iterations_done) {
  const long long now = elapsed_ms();
  if (mark_iterations_ >= 0 && iterations_done > mark_iterations_) {
    // One iteration (and whatever waits led to it) since the last mark.
    max_iter_ms_ = std::max(max_iter_ms_, now - mark_ms_);
    max_iter_usd_ = std::max(max_iter_usd_, known_usd_ - mark_usd_);
  }
  mark_iterations_ = iterations_done;
  mark_ms_ = now;
  mark_usd_ = known_usd_;
  mark_unknown_ = unknown_runs_;

  Verdict v;
  if (limits_.max_cost_usd && unknown_runs_ > 0 && !warned_) {
    warned_ = true;
    v.warning = "--max-cost: " + runs(unknown_runs_) +
                " reported no cost; what they spent is unknown and not counted against the cap";
  }
  if (limits_.max_cost_usd) {
    const double cap = *limits_.max_cost_usd;
    const std::string head = "--max-cost " + usd_text(cap);
    if (known_usd_ >= cap - kEpsilon) {
      v = {true, "--max-cost", head + " reached: " + spent_text() + " in " + iterations(iterations_done), v.warning};
    } else if (known_usd_ + max_iter_usd_ > cap + kEpsilon) {
      v = {true, "--max-cost",
           head + ": " + spent_text() + " in " + iterations(iterations_done) + "; the next could cost " +
               usd_text(max_iter_usd_) + " (the most one has cost so far) and pass it",
           v.warning};
    }
    if (v.stop) return v;
  }
  if (limits_.max_hours) {
    const double cap_ms = *limits_.max_hours * 3600.0 * 1000.0;
    const std::string head = "--max-hours " + number(*limits_.max_hours);
    if (static_cast<double>(now) >= cap_ms) {
      v = {true, "--max-hours", head + " reached: " + duration_text(now) + " elapsed in " + iterations(iterations_done),
           v.warning};
    } else if (static_cast<double>(now + max_iter_ms_) > cap_ms) {
      v = {true, "--max-hours",
           head + ": " + duration_text(now) + " elapsed in " + iterations(iterations_done) +
               "; the next iteration could take " + duration_text(max_iter_ms_) + " (the longest so far) and pass it",
           v.warning};
    }
  }
  return v;
}

std::string Caps::spent_text() const {
  if (known_runs_ == 0 && unknown_runs_ > 0) return "cost unknown (" + runs(unknown_runs_) + " reported no cost)";
  std::string s = usd_text(known_usd_) + " spent";
  if (unknown_runs_ > 0) s += " + " + runs(unknown_runs_) + " of unknown cost";
  return s;
}

Json Caps::figures() const {
  auto opt = [](const std::optional<double>& v) { return v ? Json(*v) : Json(nullptr); };
  return Json{{"max_cost_usd", opt(limits_.max_cost_usd)},
              {"max_hours", opt(limits_.max_hours)},
              {"cost_usd", known_runs_ == 0 && unknown_runs_ > 0 ? Json(nullptr) : Json(known_usd_)},
              {"unknown_cost_runs", unknown_runs_},
              {"elapsed_s", static_cast<double>(elapsed_ms()) / 1000.0}};
}

void Caps::restore(const Json& f) {
  if (!f.is_object()) return;
  if (f.contains("cost_usd") && f["cost_usd"].is_number()) {
    known_usd_ = f["cost_usd"].get<double>();
    known_runs_ = 1;  // a number there: no run so far, or at least one that reported its cost
  }
  if (f.contains("unknown_cost_runs") && f["unknown_cost_runs"].is_number_integer())
    unknown_runs_ = f["unknown_cost_runs"].get<int>();
  if (f.contains("elapsed_s") && f["elapsed_s"].is_number())
    earlier_ms_ = static_cast<long long>(f["elapsed_s"].get<double>() * 1000.0);
}

std::string figures_text(const Json& f) {
  auto num = [&](const char* k) { return f.contains(k) && f[k].is_number() ? f[k].get<double>() : -1.0; };
  const int unknown = f.contains("unknown_cost_runs") && f["unknown_cost_runs"].is_number_integer()
                          ? f["unknown_cost_runs"].get<int>()
                          : 0;
  std::string s;
  if (num("cost_usd") < 0 && unknown > 0) s = "cost unknown (" + runs(unknown) + " reported no cost)";
  else
    s = usd_text(std::max(0.0, num("cost_usd"))) + " spent" +
        (unknown ? " + " + runs(unknown) + " of unknown cost" : "");
  if (num("max_cost_usd") > 0) s += " (cap " + usd_text(num("max_cost_usd")) + ")";
  s += ", " + duration_text(static_cast<long long>(std::max(0.0, num("elapsed_s")) * 1000)) + " elapsed";
  if (num("max_hours") > 0) s += " (cap " + number(num("max_hours")) + " h)";
  return s;
}

}  // namespace phoenix::loop
