#include "engine/signature.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "engine/output_text.h"
#include "util/hash.h"
#include "util/text.h"

namespace phoenix::engine {
namespace {

using namespace output;

bool contains_word(std::string_view lowered, std::string_view w) {
  for (size_t p = lowered.find(w); p != std::string_view::npos; p = lowered.find(w, p + 1)) {
    bool left = p == 0 || !is_word(lowered[p - 1]);
    bool right = p + w.size() >= lowered.size() || !is_word(lowered[p + w.size()]);
    if (left && right) return true;
  }
  return false;
}

// `lowered` is a line in lower case with its tallies removed.
bool is_evidence_line(std::string_view lowered) {
  static const std::string_view substrings[] = {"fail",
                                                "error",
                                                "assert",
                                                "expect",
                                                "panic",
                                                "exception",
                                                "traceback",
                                                "not ok",
                                                "abort",
                                                "segfault",
                                                "segmentation fault",
                                                "timeout",
                                                "timed out",
                                                "mismatch",
                                                "!=",
                                                "but was",
                                                "\xe2\x9c\x96" /* ✖ */,
                                                "\xe2\x9c\x95" /* ✕ */,
                                                "\xc3\x97" /* × */,
                                                "\xe2\x97\x8f" /* ● */,
                                                "\xe2\x89\xa0" /* ≠ */};
  for (std::string_view k : substrings)
    if (lowered.find(k) != std::string_view::npos) return true;
  static const std::string_view words[] = {"want", "got", "actual", "received"};
  for (std::string_view w : words)
    if (contains_word(lowered, w)) return true;
  return false;
}

// Words that, next to a number, make a tally ("2 passed", "Tests run: 3",
// failures="1", "# fail 1"): how many tests ran or failed, never which.
bool tally_word_at(std::string_view lowered, size_t i, size_t* end) {
  static const std::string_view words[] = {"tests",    "test",      "passed",  "passing",    "pass",     "failed",
                                           "failing",  "failures",  "failure", "fail",       "errors",   "error",
                                           "skipped",  "skip",      "ignored", "measured",   "filtered", "total",
                                           "todo",     "cancelled", "suites",  "suite",      "run",      "pending",
                                           "disabled", "xfailed",   "xpassed", "deselected", "warnings", "snapshots"};
  for (std::string_view w : words) {
    if (lowered.substr(i, w.size()) != w) continue;
    if (i + w.size() < lowered.size() && is_word(lowered[i + w.size()])) continue;
    *end = i + w.size();
    return true;
  }
  return false;
}

// End of the tally words that follow `k` ("1 tests failed"), or `k`.
size_t more_tally_words(std::string_view lowered, size_t k) {
  size_t w = 0;
  while (true) {
    size_t m = k;
    while (m < lowered.size() && lowered[m] == ' ') ++m;
    if (m == k || !tally_word_at(lowered, m, &w)) return k;
    k = w;
  }
}

std::vector<std::pair<size_t, size_t>> tally_spans(std::string_view lowered) {
  std::vector<std::pair<size_t, size_t>> spans;
  size_t i = 0;
  while (i < lowered.size()) {
    bool boundary = i == 0 || !is_word(lowered[i - 1]);
    if (boundary && is_digit(lowered[i])) {  // "2 passed", "67% tests passed", "1 FAILED TEST"
      size_t k = i + count_digits(lowered, i);
      if (k < lowered.size() && lowered[k] == '%') ++k;
      size_t end = more_tally_words(lowered, k);
      if (end > k) {
        spans.emplace_back(i, end);
        i = end;
        continue;
      }
    }
    size_t w = 0;
    if (boundary && is_alpha(lowered[i]) && tally_word_at(lowered, i, &w)) {  // "Failures: 1", tests="3"
      size_t k = w;
      if (k < lowered.size() && (lowered[k] == ':' || lowered[k] == '=')) ++k;
      char quote = k < lowered.size() && (lowered[k] == '"' || lowered[k] == '\'') ? lowered[k++] : 0;
      while (k < lowered.size() && lowered[k] == ' ') ++k;
      size_t d = count_digits(lowered, k);
      if (d && !(k + d < lowered.size() && is_word(lowered[k + d]))) {
        k += d;
        if (quote && k < lowered.size() && lowered[k] == quote) ++k;
        else k = more_tally_words(lowered, k);  // "Tests: 1 failed"
        spans.emplace_back(i, k);
        i = k;
        continue;
      }
      i = w;
      continue;
    }
    ++i;
  }
  return spans;
}

// Digit runs in s[from, to) become "<n>".
void replace_numbers(std::string_view s, size_t from, size_t to, std::string& out) {
  for (size_t k = from; k < to;) {
    size_t d = count_digits(s, k);
    if (d) {
      out += "<n>";
      k += d;
    } else {
      out += s[k++];
    }
  }
}

// A passing test's line: never evidence, and skipped among details so that
// adding or renaming a passing test leaves the failure's signature alone.
bool is_pass_line(std::string_view line) {
  const std::string trimmed = util::trim(line);  // a normalized line holds no '\r' nor '\n'
  std::string_view t = trimmed;
  if (t.find("\xe2\x9c\x93") != std::string_view::npos || t.find("\xe2\x9c\x94") != std::string_view::npos) return true;
  if (util::starts_with(t, "[       OK ]") || util::starts_with(t, "[  PASSED  ]")) return true;
  if (util::starts_with(t, "ok ") && t.size() > 3 && is_digit(t[3])) return true;  // TAP
  if (util::ends_with(t, " ... ok")) return true;                                  // cargo
  size_t sp = t.find(' ');
  return sp != std::string_view::npos && t.substr(0, sp).find("::") != std::string_view::npos &&
         util::starts_with(ltrim(t.substr(sp)), "PASSED");  // pytest -v
}

struct Classified {
  bool pass = false;
  bool evidence = false;
  std::string text;  // what goes into the signature
};

Classified classify(std::string_view line) {
  Classified c;
  if (is_pass_line(line)) {
    c.pass = true;
    return c;
  }
  // pytest's "FAILED id - message": the message is cut to the terminal width.
  for (std::string_view p : {std::string_view("FAILED "), std::string_view("ERROR ")}) {
    if (!util::starts_with(line, p)) continue;
    size_t dash = line.find(" - ", p.size());
    if (dash == std::string_view::npos) continue;
    std::string_view id = line.substr(p.size(), dash - p.size());
    if (id.find("::") != std::string_view::npos || util::ends_with(id, ".py")) line = line.substr(0, dash);
  }
  std::string lowered(line);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), lower);
  std::string without_tallies;
  size_t at = 0;
  for (auto [from, to] : tally_spans(lowered)) {
    without_tallies += lowered.substr(at, from - at);
    c.text += line.substr(at, from - at);
    replace_numbers(line, from, to, c.text);
    at = to;
  }
  without_tallies += lowered.substr(at);
  c.text += line.substr(at);
  // pytest's "E   " lines explain the failure whatever words they use.
  c.evidence = util::starts_with(line, "E ") || is_evidence_line(without_tallies);
  // A test's position in the run ("not ok 3 - x", CTest's "1/3 Test #1: x"
  // and "  1 - x (Failed)") moves when tests are added before it.
  std::string_view t = ltrim(c.text);
  std::string head = c.text.substr(0, c.text.size() - t.size());
  size_t d = count_digits(t, 0);
  size_t colon = t.find(": ");
  if (util::starts_with(t, "not ok ") && count_digits(t, 7)) {
    c.text = head + "not ok <n>" + std::string(t.substr(7 + count_digits(t, 7)));
  } else if (d && util::starts_with(t.substr(d), " - ")) {
    c.text = head + "<n>" + std::string(t.substr(d));
  } else if (d && t.substr(d, 1) == "/" && colon != std::string_view::npos &&
             t.substr(0, colon).find(" Test ") != std::string_view::npos) {
    replace_numbers(t, 0, colon, head);
    c.text = head + std::string(t.substr(colon));
  }
  return c;
}

}  // namespace

std::string failure_evidence(std::string_view normalized) {
  std::vector<std::string> lines = util::split_lines(normalized);
  std::set<std::string> kept;
  for (size_t i = 0; i < lines.size(); ++i) {
    Classified c = classify(lines[i]);
    if (!c.evidence) continue;
    kept.insert(c.text);
    size_t base = indent_of(lines[i]);
    int details = 0;
    for (size_t j = i + 1; j < lines.size() && details < 10; ++j) {
      if (is_blank(lines[j])) continue;
      if (indent_of(lines[j]) <= base) break;
      Classified d = classify(lines[j]);
      if (d.pass) continue;
      kept.insert(d.text);
      ++details;
    }
  }
  std::string out;
  for (const auto& k : kept) out += k + "\n";
  return out;
}

std::string issue_signature(const std::string& check_id, std::string_view output) {
  return issue_signature_for(check_id, output, extract_failing_tests(output));
}

std::string issue_signature_for(const std::string& check_id, std::string_view output,
                                const std::vector<std::string>& tests) {
  std::string normalized = normalize(output);
  std::string material = "phoenix-issue-v1\n" + check_id + "\n" + std::to_string(tests.size()) + "\n";
  for (const auto& t : tests) material += t + "\n";
  material += tests.empty() ? normalized : failure_evidence(normalized);
  return util::sha256_hex(material);
}

std::string attempt_signature(const std::string& issue_sig, std::vector<std::string> changed_files) {
  for (auto& f : changed_files)
    while (f.size() > 2 && f[0] == '.' && f[1] == '/') f.erase(0, 2);
  std::sort(changed_files.begin(), changed_files.end());
  changed_files.erase(std::unique(changed_files.begin(), changed_files.end()), changed_files.end());
  std::string material = "phoenix-attempt-v1\n" + issue_sig + "\n" + std::to_string(changed_files.size()) + "\n";
  for (const auto& f : changed_files) material += f + "\n";
  return util::sha256_hex(material);
}

}  // namespace phoenix::engine
