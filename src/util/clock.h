// A local time of day as people read a clock ("03:00"): the loop's waits,
// `phoenix status` and the morning report say it the same way.
#pragma once

#include <ctime>
#include <string>

namespace phoenix::util {

// "HH:MM" of `ms` (epoch milliseconds) in the local time zone.
inline std::string local_hhmm(long long ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm l{};
  localtime_r(&t, &l);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M", &l);
  return buf;
}

}  // namespace phoenix::util
