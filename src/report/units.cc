// Human units of the report (report/night.h): local times with their
// offset, money; lengths of time are util::duration's.
#include <cstdio>
#include <cstdlib>
#include <ctime>

#include "report/night.h"
#include "util/clock.h"

namespace phoenix::report {

namespace {
std::tm local(long long ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  localtime_r(&t, &tm);
  return tm;
}
}  // namespace

std::string clock(long long ms) { return util::local_hhmm(ms); }

std::string utc_offset(long long ms) {
  std::tm tm = local(ms);
  long off = tm.tm_gmtoff;
  char b[48];
  std::snprintf(b, sizeof b, "%c%02ld:%02ld", off < 0 ? '-' : '+', std::labs(off) / 3600, (std::labs(off) % 3600) / 60);
  return b;
}

std::string local_time(long long ms) {
  std::tm tm = local(ms);
  char b[32];
  std::strftime(b, sizeof b, "%Y-%m-%d %H:%M", &tm);
  return std::string(b) + " " + utc_offset(ms);
}

std::string money(const std::optional<double>& usd) {
  if (!usd) return kDash;
  char b[32];
  if (*usd > 0 && *usd < 0.01) std::snprintf(b, sizeof b, "$%.4f", *usd);
  else std::snprintf(b, sizeof b, "$%.2f", *usd);
  return b;
}

}  // namespace phoenix::report
