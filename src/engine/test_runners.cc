#include "engine/test_runners.h"

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "engine/output_text.h"
#include "util/text.h"

namespace phoenix::engine {
namespace {

using namespace output;

// One line of output, and the same line without the blanks around it.
struct Line {
  std::string_view raw;
  std::string_view trimmed;
};

class TestNameCollector {
 public:
  explicit TestNameCollector(std::string_view output) : lines_(terminal_lines(output)), text_(strip_ansi(output)) {}

  std::vector<std::string> run() {
    for (const auto& raw : lines_) {
      const std::string trimmed = util::trim(raw);  // a terminal line holds no '\r' nor '\n'
      const Line line{raw, trimmed};
      googletest(line);
      ctest(line);
      pytest(line);
      tap(line);
      node_spec(line);
      jest_vitest(line);
      go(line);
      cargo(line);
      maven(line);
    }
    junit_xml();

    names_.insert(pytest_ids_.empty() ? pytest_headers_.begin() : pytest_ids_.begin(),
                  pytest_ids_.empty() ? pytest_headers_.end() : pytest_ids_.end());
    if (!jest_named_) names_.insert(jest_marks_.begin(), jest_marks_.end());
    if (!node_spec_named_) names_.insert(node_spec_section_.begin(), node_spec_section_.end());
    // A Go test fails whenever one of its subtests does; the subtest is the news.
    for (const auto& g : go_) {
      auto child = go_.lower_bound(g + "/");
      if (!(child != go_.end() && util::starts_with(*child, g + "/"))) names_.insert(g);
    }
    return {names_.begin(), names_.end()};
  }

 private:
  void add(std::string_view name) {
    name = rtrim(ltrim(name));  // blanks only: a JUnit attribute's newline stays in the name
    if (!name.empty()) names_.emplace(name);
  }

  void googletest(const Line& line) {
    std::string_view t = ltrim(line.raw);
    static constexpr std::string_view kMark = "[  FAILED  ] ";
    if (!util::starts_with(t, kMark)) return;
    std::string_view rest = t.substr(kMark.size());
    if (rest.empty() || is_digit(rest[0])) return;  // "[  FAILED  ] 1 test, listed below:"
    add(rest.substr(0, rest.find_first_of(" ,")));
  }

  void ctest(const Line& line) {
    std::string_view t = line.trimmed;
    if (t == "The following tests FAILED:") {
      in_ctest_list_ = true;
      return;
    }
    if (in_ctest_list_) {  // "  1 - adds (Failed)"
      size_t d = count_digits(t, 0);
      std::string_view rest = ltrim(t.substr(d));
      if (d && util::starts_with(rest, "- ")) {
        rest = rest.substr(2);
        add(rest.substr(0, rest.find(" (")));
        return;
      }
      in_ctest_list_ = false;
    }
    // "1/3 Test #1: adds .......***Failed    0.00 sec"
    if (t.find("***") == std::string_view::npos) return;
    size_t p = t.find("Test ");
    if (p == std::string_view::npos) return;
    size_t j = p + 5;
    while (j < t.size() && t[j] == ' ') ++j;
    if (j >= t.size() || t[j] != '#') return;
    size_t d = count_digits(t, j + 1);
    j += 1 + d;
    if (!d || j + 1 >= t.size() || t[j] != ':' || t[j + 1] != ' ') return;
    // The name runs up to the dots that pad it ("flaky timing ....***Failed").
    std::string_view rest = ltrim(t.substr(j + 2));
    rest = rest.substr(0, rest.find("***"));
    while (!rest.empty() && (rest.back() == '.' || rest.back() == ' ')) rest.remove_suffix(1);
    add(rest);
  }

  void pytest(const Line& line) {
    for (std::string_view p : {std::string_view("FAILED "), std::string_view("ERROR ")}) {
      if (!util::starts_with(line.raw, p)) continue;
      std::string_view rest = line.raw.substr(p.size());
      const std::string id = util::trim(rest.substr(0, rest.find(" - ")));
      std::string_view first = std::string_view(id).substr(0, id.find(' '));
      if (first.find("::") != std::string_view::npos || util::ends_with(first, ".py")) pytest_ids_.emplace(id);
      return;
    }
    // -v: "test_calc.py::test_adds FAILED    [ 33%]"
    std::string_view t = line.trimmed;
    size_t sp = t.find(' ');
    if (sp != std::string_view::npos && t.substr(0, sp).find("::") != std::string_view::npos) {
      std::string_view status = ltrim(t.substr(sp));
      if (util::starts_with(status, "FAILED") || util::starts_with(status, "ERROR"))
        pytest_ids_.emplace(t.substr(0, sp));
      return;
    }
    // "______ test_adds ______" section headers.
    if (!util::starts_with(t, "___ ") && !util::starts_with(t, "____")) return;
    if (!util::ends_with(t, " ___") && !util::ends_with(t, "____")) return;
    size_t a = t.find_first_not_of('_'), b = t.find_last_not_of('_');
    if (a == std::string_view::npos || a < 3 || t.size() - 1 - b < 3) return;
    const std::string inner_trimmed = util::trim(t.substr(a, b - a + 1));
    std::string_view inner = inner_trimmed;
    for (std::string_view p : {std::string_view("ERROR at setup of "), std::string_view("ERROR at teardown of "),
                               std::string_view("ERROR collecting ")})
      if (util::starts_with(inner, p)) inner = inner.substr(p.size());
    if (!inner.empty() && inner.find(' ') == std::string_view::npos) pytest_headers_.emplace(inner);
  }

  // TAP as node --test prints it: "# Subtest: name" opens a level, nested
  // levels are indented four spaces, and a parent's "not ok" follows its
  // children's.
  void tap(const Line& line) {
    size_t ind = indent_of(line.raw);
    std::string_view t = line.trimmed;
    size_t depth = ind / 4;
    if (util::starts_with(t, "# Subtest: ")) {
      subtests_.resize(depth);
      subtests_.push_back(util::trim(t.substr(11)));
      return;
    }
    if (!util::starts_with(t, "not ok") || (t.size() > 6 && t[6] != ' ')) return;
    std::string_view rest = ltrim(t.substr(6));
    rest = ltrim(rest.substr(count_digits(rest, 0)));
    if (util::starts_with(rest, "- ")) rest = rest.substr(2);
    long previous = last_not_ok_indent_;
    last_not_ok_indent_ = static_cast<long>(ind);
    size_t hash = rest.find(" # ");
    if (hash != std::string_view::npos) {
      std::string dir(ltrim(rest.substr(hash + 3)).substr(0, 4));
      std::transform(dir.begin(), dir.end(), dir.begin(), lower);
      if (dir == "todo" || dir == "skip") return;  // expected not to pass
      rest = rest.substr(0, hash);
    }
    if (previous > static_cast<long>(ind)) return;  // failed because a child did
    std::string name;
    for (size_t k = 0; k < depth && k < subtests_.size(); ++k)
      if (!subtests_[k].empty()) name += subtests_[k] + " > ";
    std::string leaf = util::trim(rest);
    for (size_t p = leaf.find("\\#"); p != std::string::npos; p = leaf.find("\\#", p)) leaf.erase(p, 1);
    add(name + leaf);
  }

  // node --test's spec reporter: "▶ suite" opens a suite, "✖ name (1ms)"
  // is a failed test, and a suite closes with its own "✖ suite" when a child
  // failed. After "✖ failing tests:" the failures are repeated without their
  // suites; that copy is used only when the tree was not seen.
  void node_spec(const Line& line) {
    static constexpr std::string_view kSuite = "\xe2\x96\xb6 ", kFail = "\xe2\x9c\x96 ";
    size_t ind = indent_of(line.raw);
    std::string_view t = line.trimmed;
    bool suite = util::starts_with(t, kSuite), fail = util::starts_with(t, kFail);
    if (!suite && !fail) return;
    std::string name = strip_trailing_duration(t.substr(suite ? kSuite.size() : kFail.size()));
    if (suite) {
      while (!suites_.empty() && suites_.back().indent >= ind) suites_.pop_back();
      suites_.push_back({ind, name, false});
      return;
    }
    if (name == "failing tests:") {
      in_failing_section_ = true;
      return;
    }
    if (name.find(" # TODO") != std::string::npos || name.find(" # SKIP") != std::string::npos) return;
    if (!name.empty() && is_digit(name[0]) && name.find("problem") != std::string::npos) return;  // eslint's tally
    if (in_failing_section_) {
      node_spec_section_.insert(name);
      return;
    }
    while (!suites_.empty() && suites_.back().indent > ind) suites_.pop_back();
    if (!suites_.empty() && suites_.back().indent == ind && suites_.back().name == name) {
      bool child_failed = suites_.back().child_failed;
      if (!child_failed) {  // the suite itself failed (a hook), not a test in it
        std::string full;
        for (const auto& s : suites_) full += (full.empty() ? "" : " > ") + s.name;
        add(full);
        node_spec_named_ = true;
      }
      suites_.pop_back();
      return;
    }
    while (!suites_.empty() && suites_.back().indent >= ind) suites_.pop_back();
    std::string full;
    for (auto& s : suites_) {
      full += s.name + " > ";
      s.child_failed = true;
    }
    add(full + name);
    node_spec_named_ = true;
  }

  void jest_vitest(const Line& line) {
    static constexpr std::string_view kDot = "\xe2\x97\x8f ", kCross = "\xe2\x9c\x95 ", kTimes = "\xc3\x97 ";
    std::string_view t = line.trimmed;
    if (util::starts_with(t, kDot)) {
      const std::string name = util::trim(t.substr(kDot.size()));
      if (name == "Test suite failed to run") {
        if (!jest_file_.empty()) add(jest_file_);
        jest_named_ = true;
      } else if (name != "Console") {
        add(name);
        jest_named_ = true;
      }
      return;
    }
    if (util::starts_with(t, "FAIL ")) {
      const std::string rest_trimmed = util::trim(t.substr(5));
      std::string_view rest = rest_trimmed;
      if (rest.find(" > ") != std::string_view::npos) {  // vitest: "file > suite > test"
        add(rest);
        jest_named_ = true;
      } else if (util::ends_with(rest, " ]") &&
                 rest.find(" [ ") != std::string_view::npos) {  // vitest: file failed to load
        add(rest.substr(0, rest.find(" [ ")));
        jest_named_ = true;
      } else {
        jest_file_ = strip_trailing_duration(rest);
      }
      return;
    }
    for (std::string_view mark : {kCross, kTimes})
      if (util::starts_with(t, mark)) jest_marks_.insert(strip_trailing_duration(t.substr(mark.size())));
  }

  void go(const Line& line) {
    std::string_view t = ltrim(line.raw);
    if (!util::starts_with(t, "--- FAIL: ")) return;
    std::string_view rest = t.substr(10);
    std::string name = util::trim(rest.substr(0, rest.find(" (")));
    if (!name.empty()) go_.insert(name);
  }

  void cargo(const Line& line) {
    std::string_view t = rtrim(line.raw);
    if (util::starts_with(t, "test ") && util::ends_with(t, " ... FAILED")) {
      std::string_view name = t.substr(5, t.size() - 5 - 11);
      if (util::ends_with(name, " - should panic")) name.remove_suffix(15);
      add(name);
      return;
    }
    if (util::starts_with(t, "---- ") && (util::ends_with(t, " stdout ----") || util::ends_with(t, " stderr ----"))) {
      add(t.substr(5, t.size() - 5 - 12));
      return;
    }
    if (t == "failures:") {
      in_cargo_failures_ = true;
      return;
    }
    if (in_cargo_failures_) {
      if (util::starts_with(t, "    ") && !is_blank(t)) add(t);
      else in_cargo_failures_ = false;
    }
  }

  void maven(const Line& line) {
    if (line.raw.find("<<< FAILURE!") == std::string_view::npos &&
        line.raw.find("<<< ERROR!") == std::string_view::npos)
      return;
    std::string_view t = line.trimmed;
    if (util::starts_with(t, "[ERROR]")) t = ltrim(t.substr(7));
    if (util::starts_with(t, "Tests run:")) return;  // the per-class tally
    std::string_view token = t.substr(0, t.find(' '));
    size_t open = token.find('(');
    if (open != std::string_view::npos && util::ends_with(token, ")") && open + 2 < token.size()) {
      // Surefire 2: "method(package.Class)"
      add(std::string(token.substr(open + 1, token.size() - open - 2)) + "." + std::string(token.substr(0, open)));
    } else {
      add(token);
    }
  }

  static std::string xml_unescape(std::string_view v) {
    std::string out;
    for (size_t i = 0; i < v.size(); ++i) {
      if (v[i] != '&') {
        out += v[i];
        continue;
      }
      size_t semi = v.find(';', i);
      if (semi == std::string_view::npos || semi - i > 10) {
        out += v[i];
        continue;
      }
      std::string_view ent = v.substr(i + 1, semi - i - 1);
      if (ent == "lt") out += '<';
      else if (ent == "gt") out += '>';
      else if (ent == "amp") out += '&';
      else if (ent == "quot") out += '"';
      else if (ent == "apos") out += '\'';
      else if (util::starts_with(ent, "#")) {
        bool hex = ent.size() > 1 && (ent[1] == 'x' || ent[1] == 'X');
        unsigned long cp = std::strtoul(std::string(ent.substr(hex ? 2 : 1)).c_str(), nullptr, hex ? 16 : 10);
        if (cp < 0x80) out += static_cast<char>(cp);
        else if (cp < 0x800) {
          out += static_cast<char>(0xc0 | (cp >> 6));
          out += static_cast<char>(0x80 | (cp & 0x3f));
        } else if (cp < 0x10000) {
          out += static_cast<char>(0xe0 | (cp >> 12));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
          out += static_cast<char>(0x80 | (cp & 0x3f));
        } else {
          out += static_cast<char>(0xf0 | (cp >> 18));
          out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
          out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
          out += static_cast<char>(0x80 | (cp & 0x3f));
        }
      } else {
        out += v.substr(i, semi - i + 1);
      }
      i = semi;
    }
    return out;
  }

  static bool has_tag(std::string_view body, std::string_view tag) {
    for (size_t p = body.find(tag); p != std::string_view::npos; p = body.find(tag, p + 1)) {
      size_t e = p + tag.size();
      if (e < body.size() && (body[e] == ' ' || body[e] == '>' || body[e] == '/' || body[e] == '\n' || body[e] == '\t'))
        return true;
    }
    return false;
  }

  void junit_xml() {
    std::string_view x = text_;
    for (size_t p = x.find("<testcase"); p != std::string_view::npos; p = x.find("<testcase", p + 1)) {
      size_t j = p + 9;
      if (j >= x.size() || !(x[j] == ' ' || x[j] == '\n' || x[j] == '\t' || x[j] == '\r')) continue;
      std::string name, classname;
      // Attributes up to the end of the tag, honouring quotes.
      while (j < x.size() && x[j] != '>' && x[j] != '/') {
        while (j < x.size() && (x[j] == ' ' || x[j] == '\n' || x[j] == '\t' || x[j] == '\r')) ++j;
        size_t k = j;
        while (k < x.size() && x[k] != '=' && x[k] != '>' && x[k] != '/' && x[k] != ' ') ++k;
        std::string_view key = x.substr(j, k - j);
        if (k >= x.size() || x[k] != '=' || k + 1 >= x.size() || (x[k + 1] != '"' && x[k + 1] != '\'')) {
          j = k;
          break;
        }
        char q = x[k + 1];
        size_t end = x.find(q, k + 2);
        if (end == std::string_view::npos) return;
        std::string value = xml_unescape(x.substr(k + 2, end - k - 2));
        if (key == "name") name = value;
        else if (key == "classname") classname = value;
        j = end + 1;
      }
      if (j >= x.size() || x[j] == '/') continue;  // <testcase .../> passed
      size_t close = x.find("</testcase>", j);
      std::string_view body = x.substr(j, close == std::string_view::npos ? std::string_view::npos : close - j);
      if (!has_tag(body, "<failure") && !has_tag(body, "<error")) continue;
      add(classname.empty() || classname == name ? name : classname + "." + name);
    }
  }

  struct Suite {
    size_t indent;
    std::string name;
    bool child_failed;
  };

  std::vector<std::string> lines_;
  std::string text_;
  std::set<std::string> names_;
  bool in_ctest_list_ = false;
  std::set<std::string> pytest_ids_, pytest_headers_;
  std::vector<std::string> subtests_;
  long last_not_ok_indent_ = -1;
  std::vector<Suite> suites_;
  bool in_failing_section_ = false, node_spec_named_ = false;
  std::set<std::string> node_spec_section_;
  std::string jest_file_;
  bool jest_named_ = false;
  std::set<std::string> jest_marks_;
  std::set<std::string> go_;
  bool in_cargo_failures_ = false;
};

}  // namespace

std::vector<std::string> extract_failing_tests(std::string_view output) { return TestNameCollector(output).run(); }

}  // namespace phoenix::engine
