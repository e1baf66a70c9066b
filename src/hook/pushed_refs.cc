#include "hook/pushed_refs.h"

#include <algorithm>
#include <cstdio>

#include "util/error.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::hook {

namespace {

bool is_hex_digit(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool is_sha(std::string_view s) {
  return (s.size() == 40 || s.size() == 64) && std::all_of(s.begin(), s.end(), is_hex_digit);
}

bool all_zeros(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c == '0'; });
}

bool has_control(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 || u == 0x7f;
  });
}

using util::lower;

// A line as it can be shown in one line of an error: control bytes and
// non-ASCII escaped, cut to 80 bytes of input.
std::string shown(std::string_view line) {
  std::string out;
  size_t n = std::min<size_t>(line.size(), 80);
  for (size_t i = 0; i < n; ++i) {
    auto u = static_cast<unsigned char>(line[i]);
    if (u == '"' || u == '\\') {
      out += '\\';
      out += static_cast<char>(u);
    } else if (u < 0x20 || u >= 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else {
      out += static_cast<char>(u);
    }
  }
  return "\"" + out + "\"" + (line.size() > n ? " (cut; " + std::to_string(line.size()) + " bytes)" : "");
}

}  // namespace

bool PushedRef::deletion() const { return all_zeros(local_sha); }
bool PushedRef::creation() const { return all_zeros(remote_sha); }

std::vector<PushedRef> parse_pre_push(std::string_view input) {
  std::vector<PushedRef> out;
  size_t pos = 0;
  size_t number = 0;
  while (pos < input.size()) {
    size_t nl = input.find('\n', pos);
    std::string_view line = input.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? input.size() : nl + 1;
    ++number;
    auto fail = [&](const std::string& why) -> UsageError {
      return UsageError("pre-push: stdin line " + std::to_string(number) + ": " + why + ": " + shown(line) +
                        " (git writes \"<local ref> <local sha> <remote ref> <remote sha>\")");
    };
    std::vector<std::string_view> fields;
    size_t start = 0;
    for (;;) {
      size_t sp = line.find(' ', start);
      fields.push_back(line.substr(start, sp == std::string_view::npos ? std::string_view::npos : sp - start));
      if (sp == std::string_view::npos) break;
      start = sp + 1;
    }
    if (fields.size() != 4)
      throw fail(std::to_string(fields.size()) + (fields.size() == 1 ? " field" : " fields") + ", not 4");
    if (fields[0].empty() || fields[2].empty()) throw fail("an empty ref");
    if (has_control(fields[0]) || has_control(fields[2])) throw fail("a control character in a ref");
    if (!is_sha(fields[1])) throw fail("the local sha is not 40 or 64 hex digits");
    if (!is_sha(fields[3])) throw fail("the remote sha is not 40 or 64 hex digits");
    if (fields[1].size() != fields[3].size()) throw fail("the two shas differ in length");
    out.push_back({std::string(fields[0]), lower(fields[1]), std::string(fields[2]), lower(fields[3])});
  }
  return out;
}

std::vector<std::string> commits_to_measure(const std::vector<PushedRef>& refs) {
  std::vector<std::string> out;
  for (const auto& r : refs)
    if (!r.deletion() && std::find(out.begin(), out.end(), r.local_sha) == out.end()) out.push_back(r.local_sha);
  return out;
}

namespace {

// "refs/heads/main" -> "main", "refs/tags/v1" -> "v1"; others as they are.
std::string short_ref(const std::string& ref) {
  for (const char* p : {"refs/heads/", "refs/tags/"})
    if (util::starts_with(ref, p)) return ref.substr(std::string(p).size());
  return ref;
}

}  // namespace

std::string push_label(const std::vector<const PushedRef*>& refs, const std::string& commit) {
  std::string names;
  for (const auto* r : refs)
    if (!is_sha(r->local_ref)) names += (names.empty() ? "" : ",") + short_ref(r->local_ref);
  // `git push origin <sha>:main` names no local ref: the short sha alone.
  return names.empty() ? util::sha12(commit) : names + "@" + util::sha12(commit);
}

}  // namespace phoenix::hook
