#include "util/format.h"

#include <cstdio>
#include <ctime>

namespace phoenix::util {

std::string iso8601(long long ms) {
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
  return s;
}

std::string plural(long long n, std::string_view one, std::string_view many) {
  return std::to_string(n) + " " + std::string(n == 1 ? one : many);
}

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", s);
  return buf;
}

std::string duration(long long ms) {
  if (ms < 0) ms = 0;
  char b[64];
  if (ms < 1000) {
    std::snprintf(b, sizeof b, "%lld ms", ms);
  } else if (ms < 10'000) {
    std::snprintf(b, sizeof b, "%.1f s", static_cast<double>(ms) / 1000.0);
  } else if (ms < 60'000) {
    std::snprintf(b, sizeof b, "%lld s", (ms + 500) / 1000);
  } else if (ms < 3'600'000) {
    long long s = (ms + 500) / 1000;
    if (s % 60) std::snprintf(b, sizeof b, "%lld min %lld s", s / 60, s % 60);
    else std::snprintf(b, sizeof b, "%lld min", s / 60);
  } else {
    long long m = (ms + 30'000) / 60'000;
    if (m % 60) std::snprintf(b, sizeof b, "%lld h %lld min", m / 60, m % 60);
    else std::snprintf(b, sizeof b, "%lld h", m / 60);
  }
  return b;
}

std::string duration_compact(long long ms) {
  char buf[64];
  if (ms < 1000) std::snprintf(buf, sizeof buf, "%lldms", ms);
  else if (ms < 60'000) std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000);
  else if (ms < 3'600'000) std::snprintf(buf, sizeof buf, "%lldm%02llds", ms / 60'000, ms / 1000 % 60);
  else std::snprintf(buf, sizeof buf, "%lldh%02lldm", ms / 3'600'000, ms / 60'000 % 60);
  return buf;
}

std::string seconds_tenths(long long ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f s", static_cast<double>(ms) / 1000.0);
  return buf;
}

std::string short_sha(std::string_view sha) { return std::string(sha.substr(0, 7)); }

std::string sha12(std::string_view hex) { return std::string(hex.substr(0, 12)); }

}  // namespace phoenix::util
