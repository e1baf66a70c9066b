// Tests that bite: the change's tests measured without its code (engine/bite.h).
#include "engine/bite.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>

#include "checks/check.h"
#include "engine/guards.h"
#include "engine/test_runners.h"
#include "gitx/repo.h"
#include "gitx/worktree.h"
#include "layout/layout.h"
#include "layout/trees.h"
#include "setup/guard.h"
#include "setup/setup.h"
#include "util/error.h"
#include "util/format.h"
#include "util/glob.h"
#include "util/signals.h"
#include "util/text.h"

namespace phoenix::engine {

namespace fs = std::filesystem;
using util::Json;

namespace {

constexpr size_t kMaxBiteTrees = 4;

std::string bite_tree_name(size_t i) { return layout::numbered_tree("bite", i); }

layout::TreeFamily bite_trees() { return {"bite", kMaxBiteTrees, bite_tree_name}; }

bool is_own(const std::string& p, const std::vector<std::string>& own) {
  for (const std::string& o : own)
    if (p == o || (!o.empty() && o.back() == '/' && util::starts_with(p, o))) return true;
  return false;
}

std::string joined(const std::vector<std::string>& v, size_t most = 5) {
  std::string out;
  for (size_t i = 0; i < v.size() && i < most; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > most) out += " and " + std::to_string(v.size() - most) + " more";
  return out;
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Whether `word` occurs in `text` with no identifier character on either side.
bool has_word(const std::string& text, const std::string& word) {
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    const bool left = at == 0 || !word_char(text[at - 1]);
    const bool right = at + word.size() >= text.size() || !word_char(text[at + word.size()]);
    if (left && right) return true;
  }
  return false;
}

// The test's own name in a runner's id: the last identifier of at least
// three characters ("tests/test_calc.py::test_adds[2]" -> "test_adds",
// "Calc.Adds" -> "Adds", a CTest name "calc_adds" -> itself).
std::string own_name(std::string id) {
  if (auto bracket = id.find('['); bracket != std::string::npos) id = id.substr(0, bracket);
  std::string last, cur;
  for (char c : id + " ") {
    if (word_char(c)) {
      cur += c;
    } else {
      if (cur.size() >= 3) last = cur;
      cur.clear();
    }
  }
  return last;
}

// A failing test is the change's when its id names a test file the change
// touched ("tests/test_calc.py::test_adds"), or its own name is in one of
// those files as the change left them (a test function, a CTest add_test).
bool names_touched(const std::string& id, const std::vector<std::string>& tests,
                   const std::vector<std::string>& contents) {
  for (const std::string& t : tests) {
    if (id.find(t) != std::string::npos) return true;
    const std::string base = fs::path(t).filename().string();
    if (base.size() >= 3 && has_word(id, base)) return true;
  }
  const std::string name = own_name(id);
  if (name.empty()) return false;
  return std::any_of(contents.begin(), contents.end(), [&](const std::string& c) { return has_word(c, name); });
}

// The tests and code of the change, by the concerned checks' test globs.
struct Split {
  std::vector<std::string> tests, code, deleted_tests, own;
  std::vector<const checks::CheckSpec*> concerned;
};

Split split_change(const gitx::Repo& repo, const config::Config& cfg, const BiteRequest& req) {
  Split s;
  std::vector<const checks::CheckSpec*> candidates;
  for (const auto& c : cfg.checks)
    if (must_bite(c, req.default_on) && !req.skip.count(c.id)) candidates.push_back(&c);
  std::set<const checks::CheckSpec*> concerned;
  for (const std::string& p : repo.changed_paths(req.base, req.change)) {
    if (is_own(p, req.own)) {
      s.own.push_back(p);
      continue;
    }
    bool test = false;
    for (const checks::CheckSpec* c : candidates)
      if (util::glob_match_any(test_globs(*c), p)) {
        test = true;
        concerned.insert(c);
      }
    if (!test) s.code.push_back(p);
    else if (repo.read_blob_at(req.change, p)) s.tests.push_back(p);
    else s.deleted_tests.push_back(p);  // a test taken away cannot bite
  }
  for (const checks::CheckSpec* c : candidates)
    if (concerned.count(c)) s.concerned.push_back(c);
  return s;
}

}  // namespace

const char* bite_name(Bite b) {
  switch (b) {
    case Bite::kNoTests: return "no-tests";
    case Bite::kExempt: return "exempt";
    case Bite::kBites: return "bites";
    case Bite::kToothless: return "toothless";
    case Bite::kUnmeasured: return "unmeasured";
  }
  return "?";
}

Json BiteResult::to_json() const {
  return Json{{"verdict", bite_name(verdict)},
              {"tests", tests},
              {"code", code},
              {"checks", checks},
              {"bit", bit},
              {"failing", failing},
              {"tree", tree},
              {"why", why},
              {"duration_ms", duration_ms}};
}

std::vector<std::string> test_globs(const checks::CheckSpec& check) {
  return check.tests.empty() ? default_test_globs() : check.tests;
}

bool must_bite(const checks::CheckSpec& check, bool default_on) {
  return check.kind == checks::Kind::kCommandExit && check.tests_must_bite.value_or(default_on);
}

namespace {

// One check measured in the scratch tree: whether it bites, and on what.
bool bites(const checks::CheckSpec& c, const checks::SenseResult& r, const BiteRequest& req, const Split& s,
           const std::vector<std::string>& contents, BiteResult& out) {
  if (r.ok) return false;
  const std::vector<std::string> failing = extract_failing_tests(r.output);
  auto before = req.red_before.find(c.id);
  if (failing.empty()) {
    // The runner names no tests: red is all there is to go by.
    out.bit = c.id;
    return true;
  }
  for (const std::string& f : failing) {
    const bool new_failure = before == req.red_before.end() ||
                             std::find(before->second.begin(), before->second.end(), f) == before->second.end();
    if (new_failure || names_touched(f, s.tests, contents)) out.failing.push_back(f);
  }
  if (out.failing.empty()) return false;
  out.bit = c.id;
  return true;
}

// The scratch tree: a free "bite" tree at `scratch`, with the setup steps.
// Its name in `tree`; throws Error when none is free in time or git fails.
layout::HeldTree take_scratch_tree(gitx::Repo& repo, const BiteRequest& req,
                                   const std::function<void(const std::string&)>& say) {
  auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(req.tree_wait_s * 1000));
  layout::TakenTrees got = layout::take_trees(repo, bite_trees(), 1, until, say, [] {
    if (util::interrupted_signal()) throw Error("interrupted", kExitInterrupted);
  });
  if (got.held.empty())
    throw Error("no scratch tree of this repository was free within " + std::to_string(got.wait_s) + " s (" +
                got.holders + ")");
  return std::move(got.held.front());
}

}  // namespace

BiteResult tests_bite(gitx::Repo& repo, const config::Config& cfg, const BiteRequest& req,
                      const std::function<void(const std::string&)>& say_in) {
  const auto t0 = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (say_in) say_in(line);
  };
  BiteResult out;
  auto done = [&](Bite v, std::string why) {
    out.verdict = v;
    out.why = std::move(why);
    out.duration_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count();
    return out;
  };
  Split s;
  try {
    s = split_change(repo, cfg, req);
  } catch (const Error& e) { return done(Bite::kUnmeasured, std::string("the change could not be read: ") + e.what()); }
  out.tests = s.tests;
  out.code = s.code;
  std::vector<std::string> red_elsewhere;  // red there, but on tests the change did not touch
  if (s.tests.empty()) return done(Bite::kNoTests, "the change adds or changes no test");
  if (s.code.empty())
    return done(Bite::kExempt, "the change is tests only (" + joined(s.tests) + "): no code to take away");
  try {
    // The change's tree with its code (and Phoenix's paths) as before it.
    std::vector<std::string> back = s.code;
    back.insert(back.end(), s.own.begin(), s.own.end());
    const std::string scratch = repo.squash(req.base, req.change, back, "phoenix: the change's tests without its code");
    layout::HeldTree held = take_scratch_tree(repo, req, say);
    out.tree = held.name;
    const std::string path = layout::worktree_path(repo, held.name);
    gitx::prepare_worktree(repo, layout::worktree_git_name(held.name), path, scratch, layout::state_prefixes());
    std::vector<std::string> contents;
    for (const std::string& t : s.tests)
      if (auto text = repo.read_blob_at(req.change, t)) contents.push_back(*text);
    setup::Result su = setup::ensure(cfg.setup, path, layout::setup_stamp(repo, held.name));
    if (su.interrupted) throw Error("interrupted", kExitInterrupted);
    if (!su.ok) {
      // The tests cannot even be set up without the code: they depend on it.
      out.bit = "setup";
      return done(Bite::kBites, "the setup fails without the change's code (" + su.signal + ")");
    }
    for (const checks::CheckSpec* c : s.concerned) {
      say("tests bite: measuring " + c->id + " in " + held.name + " without the change's code (" + joined(s.code, 3) +
          ")");
      out.checks.push_back(c->id);
      const setup::Guard guard(path);
      checks::SenseResult r = checks::sense(*c, path);
      guard.restore("the check " + c->id);
      if (r.interrupted) throw Error("interrupted", kExitInterrupted);
      if (bites(*c, r, req, s, contents, out)) {
        return done(Bite::kBites, c->id + " is red without the change's code (" + r.signal + ")" +
                                      (out.failing.empty() ? "" : ": " + joined(out.failing, 3)));
      }
      if (!r.ok) red_elsewhere.push_back(c->id);
    }
  } catch (const Error& e) {
    if (e.exit_code() == kExitInterrupted) throw;
    return done(Bite::kUnmeasured, std::string("the scratch tree could not be measured: ") + e.what());
  }
  std::string how = red_elsewhere.empty()
                        ? joined(out.checks) + " green with the code as it was before the change"
                        : joined(out.checks) + " failing there only on tests the change did not touch";
  return done(Bite::kToothless,
              joined(s.tests, 3) + " pass without the change's code (" + joined(s.code, 3) + "): " + how);
}

}  // namespace phoenix::engine
