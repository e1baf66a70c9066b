#include "fixers/harness.h"

#include <chrono>
#include <signal.h>
#include <sys/stat.h>
#include <string.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <utility>

#include "gitx/repo.h"
#include "layout/layout.h"
#include "sandbox/sandbox.h"
#include "setup/guard.h"
#include "setup/setup.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json.h"
#include "util/signals.h"
#include "util/subprocess.h"
#include "util/text.h"
#include "util/format.h"

namespace fs = std::filesystem;

namespace phoenix::fixers {
namespace {

using util::Json;

// Output kept from one run (Proposal.log): the start shows what the CLI
// understood, the end holds the result (claude's JSON object is its last
// line, and can be long), so the tail gets most of the room.
constexpr size_t kLogHeadBytes = 32 * 1024;
constexpr size_t kLogTailBytes = 224 * 1024;

// Bounds for the pieces an earlier attempt contributes to the prompt.
constexpr size_t kAttemptPatchBytes = 16 * 1024;
constexpr size_t kAttemptEvidenceBytes = 8 * 1024;
std::string head_bounded(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  const std::string_view head = util::utf8_head(s, n);
  return std::string(head) + "\n[... " + std::to_string(s.size() - head.size()) + " bytes omitted ...]\n";
}

std::string tail_bounded(std::string_view s, size_t n) {
  if (s.size() <= n) return std::string(s);
  const std::string_view tail = util::utf8_tail(s, n);
  return "[... " + std::to_string(s.size() - tail.size()) + " bytes omitted ...]\n" + std::string(tail);
}

std::string json_text(const Json& j) {
  if (j.is_string()) return j.get<std::string>();
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

using util::plural;

using agent::Classification;
using agent::Invocation;
using agent::PromptVia;
using agent::RunFacts;

}  // namespace
// ---------------------------------------------------------------------------
// Prompt.

namespace {

// A fenced block whose fence is longer than any run of backticks inside, so
// evidence that contains ``` cannot end it early.
std::string fenced(std::string_view text, std::string_view lang = "text") {
  size_t longest = 0, run = 0;
  for (char ch : text) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = fence + std::string(lang) + "\n" + std::string(text);
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out + fence;
}

std::string bullets(const std::vector<std::string>& items, const std::string& if_empty) {
  if (items.empty()) return if_empty;
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : "\n") + ("- `" + i + "`");
  return out;
}

// The failures the change brought, when a verdict named them (the others
// failed before it too, or pass when run again: not this fix's); else
// every failing test.
std::string failing_tests_text(const Failure& f) {
  std::string out = bullets(f.new_tests.empty() ? f.failing_tests : f.new_tests, "(none named in the output)");
  if (f.new_tests.empty() || f.new_tests.size() >= f.failing_tests.size()) return out;
  std::vector<std::string> others;
  for (const std::string& t : f.failing_tests)
    if (std::find(f.new_tests.begin(), f.new_tests.end(), t) == f.new_tests.end()) others.push_back(t);
  return out + "\n\nAlso failing, but not because of the change (failing before it, or flaky): leave them alone:\n" +
         bullets(others, "");
}

std::string check_target(const checks::CheckSpec& c) {
  if (c.kind == checks::Kind::kCommandExit) {
    std::string t = util::join_argv(c.argv) + " (expects exit " + std::to_string(c.expect_exit) + ")";
    return c.cwd.empty() ? t : t + " in " + c.cwd;
  }
  if (c.kind == checks::Kind::kFileSha256) return c.path + " (expects sha256 " + c.expect_sha256 + ")";
  if (c.kind == checks::Kind::kRegexInFile)
    return c.path + " (pattern /" + c.pattern + "/ must be " + (c.expect_present ? "present" : "absent") + ")";
  if (c.raw.is_object() && c.raw.contains("target")) return json_text(c.raw["target"]);
  return checks::kind_name(c.kind);
}

}  // namespace

std::string load_prompt_template(const Request& request) {
  if (request.config && !request.config->prompt_template.empty()) {
    fs::path p = request.config->prompt_template;
    if (p.is_relative()) p = fs::path(request.repo_root) / p;
    try {
      return util::read_file(p.string());
    } catch (const Error& e) { throw ConfigError(std::string("prompt_template: ") + e.what()); }
  }
  // The engine passes the shipped folder; an uninstalled build falls back to
  // the install prefix, then to the source tree.
  std::vector<std::string> dirs;
  if (!request.templates_dir.empty()) dirs.push_back(request.templates_dir);
  dirs.emplace_back(PHOENIX_TEMPLATES_DIR);
  dirs.emplace_back(PHOENIX_SOURCE_TEMPLATES_DIR);
  std::string tried;
  for (const std::string& d : dirs) {
    const std::string p = d + "/prompt.md";
    if (util::path_exists(p)) return util::read_file(p);
    tried += (tried.empty() ? "" : ", ") + p;
  }
  throw Error("the prompt template is missing (looked for " + tried + ")");
}

std::map<std::string, std::string> prompt_values(const Request& request) {
  const Failure& f = request.failure;
  const checks::CheckSpec& check = f.check;
  std::map<std::string, std::string> v;
  v["check_id"] = check.id.empty() ? std::string("(unnamed)") : check.id;
  v["check_kind"] = checks::kind_name(check.kind);
  v["check_target"] = check_target(check);
  v["failure_type"] = f.failure_type.empty() ? check.type : f.failure_type;
  v["signal"] = f.result.signal.empty() ? std::string("(none)") : f.result.signal;
  const std::string& evidence = f.result.evidence.empty() ? f.result.output : f.result.evidence;
  v["evidence"] = fenced(evidence.empty() ? "(the check printed nothing)" : evidence);
  v["failing_tests"] = failing_tests_text(f);
  v["editable"] = bullets(check.editable, "(any file that is not protected)");

  // Informational: the engine's guards decide, on the patch, what is
  // protected; this repeats the rule so the agent does not waste its turn.
  std::vector<std::string> prot{"phoenix.json", layout::kStateDirPrefix, ".git/", "git hooks"};
  if (request.config)
    for (const std::string& g : request.config->protected_globs) prot.push_back(g);
  if (check.protect_tests)
    for (const std::string& t : check.tests) prot.push_back(t);
  std::vector<std::string> unique;
  for (const std::string& p : prot)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
  v["protected"] = bullets(unique, "");

  if (request.earlier.empty()) {
    v["earlier_attempts"] = "(none: this is the first attempt)";
  } else {
    std::string out;
    for (size_t i = 0; i < request.earlier.size(); ++i) {
      const EarlierAttempt& a = request.earlier[i];
      out += "### Attempt " + std::to_string(i + 1) + " (" + (a.fixer.empty() ? "?" : a.fixer) +
             "): " + (a.outcome.empty() ? "did not heal" : a.outcome) + "\n\n";
      std::string files;
      for (const std::string& file : a.files) files += (files.empty() ? "" : ", ") + ("`" + file + "`");
      if (!files.empty()) out += "Files: " + files + "\n\n";
      if (!a.patch.empty()) out += "Patch:\n" + fenced(head_bounded(a.patch, kAttemptPatchBytes), "diff") + "\n\n";
      if (!a.evidence.empty())
        out += "What the re-run said:\n" + fenced(tail_bounded(a.evidence, kAttemptEvidenceBytes)) + "\n\n";
    }
    while (!out.empty() && out.back() == '\n') out.pop_back();
    v["earlier_attempts"] = out;
  }
  v["change"] = request.change.empty()
                    ? "(none named: the check is red on the commit as it is; find the cause in the code)"
                    : request.change;
  v["issue_signature"] = f.issue_signature;
  v["head"] = request.head;
  return v;
}

// ---------------------------------------------------------------------------
// The fixer.

namespace {

// argv for the log: a prompt passed as an argument is shown by its size.
std::string shown_argv(const std::vector<std::string>& argv) {
  std::vector<std::string> shown;
  for (const std::string& a : argv) shown.push_back(a.size() > 200 ? "<" + std::to_string(a.size()) + " bytes>" : a);
  return util::join_argv(shown);
}

const char* via_name(PromptVia via) {
  switch (via) {
    case PromptVia::kStdin: return "stdin";
    case PromptVia::kFile: return "file";
    case PromptVia::kArgument: return "argument";
  }
  return "?";
}

std::string first_files(const std::vector<std::string>& files, size_t n = 3) {
  std::string out;
  for (size_t i = 0; i < files.size() && i < n; ++i) out += (i ? ", " : "") + files[i];
  if (files.size() > n) out += ", …";
  return out;
}

// The project's environment in the sandbox, so the agent can build and
// run the tests there too. A setup that fails is noted, not held against
// the agent: its patch is measured in the real tree either way. Returns the
// note for the log; *interrupted when a signal came.
std::string sandbox_setup(const Request& request, sandbox::Sandbox& sb, bool* interrupted) {
  if (request.config->setup.empty()) return "";
  // The steps run in the sandbox; one that reaches the real repository by
  // absolute path (its config, hooks, refs) is put back all the same.
  const setup::Guard real(request.repo_root, {}, sb.path());
  struct PutBack {
    const setup::Guard& g;
    ~PutBack() { g.restore("setup"); }
  } put_back{real};
  setup::Result su = setup::ensure(request.config->setup, sb.path(), "", [&](util::ProcessOptions& po) {
    po.unset_env = agent::git_location_env();
    po.env["GIT_CEILING_DIRECTORIES"] = sb.dir();
    sb.confine(po);
  });
  *interrupted = su.interrupted || util::interrupted_signal() != 0;
  return su.ok ? "# sandbox setup: " + std::to_string(su.duration_ms) + " ms\n"
               : "# sandbox " + su.signal + " (the agent works without the environment)\n" + su.evidence + "\n";
}

// How the agent CLI runs: in the sandbox, confined, its whole process
// group (and any daemon it starts) killed at the timeout.
util::ProcessOptions agent_process(const Request& request, const config::Harness& h, const Invocation& inv,
                                   sandbox::Sandbox& sb) {
  util::ProcessOptions o;
  o.argv = inv.argv;
  o.cwd = sb.path();
  o.env = inv.env;
  o.env["PHOENIX_SANDBOX"] = "1";
  o.unset_env = agent::git_location_env();
  // An agent that deletes the sandbox's .git must not find the user's
  // repository (the sandboxes live inside it) by searching upwards.
  o.env["GIT_CEILING_DIRECTORIES"] = sb.dir();
  o.stdin_data = inv.stdin_data;
  o.timeout_s = request.timeout_s > 0 ? request.timeout_s : h.timeout_s;
  o.head_bytes = kLogHeadBytes;
  o.tail_bytes = kLogTailBytes;
  // A daemon the agent started (setsid, double fork) dies with the run too.
  o.kill_strays = true;
  sb.confine(o);  // an overlay sandbox exists only inside its own mount namespace
  return o;
}

// The real repository, watched while the agent runs (invariant 12).
struct RepoWatch {
  std::string root;
  std::vector<std::string> ignore;
  sandbox::RepoFingerprint before;
  // git's config, hooks and refs, put back after the run (setup/guard.h).
  setup::Guard guard;

  RepoWatch(const std::string& repo_root, const std::string& sandboxes, const std::string& runs_in)
      : root(repo_root), guard(repo_root, {}, runs_in) {
    // Phoenix's own writes during the run land in the sandboxes folder;
    // leave it out of the fingerprint wherever it is inside the repository.
    std::error_code ec;
    const std::string r = fs::weakly_canonical(repo_root, ec).string();
    const std::string base = fs::weakly_canonical(sandboxes, ec).string();
    if (util::starts_with(base, r + "/")) ignore.push_back(fs::relative(base, r).generic_string() + "/");
    if (!guard.confined()) before = fingerprint();
  }

  // Phoenix's own refs (layout::own_ref_prefixes) are left out, as the
  // guard leaves them: while this heal runs, phoenix-loop's other workers
  // and its merge queue write attempts, queued commits, the loop branch and
  // known-good in the same repository.
  sandbox::RepoFingerprint fingerprint() const {
    sandbox::RepoFingerprint fp = sandbox::fingerprint_repo(root, ignore);
    for (auto it = fp.items.begin(); it != fp.items.end();) {
      bool own = false;
      for (const std::string& prefix : layout::own_ref_prefixes())
        own = own || util::starts_with(it->first, "ref " + prefix);
      it = own ? fp.items.erase(it) : std::next(it);
    }
    return fp;
  }

  // What changed. git's config, hooks and refs are put back here (the
  // engine's restore puts back the work tree), and named first: they are
  // the worst of it, and once put back the fingerprint no longer sees them.
  //
  // Confined, the agent's writes outside its sandbox are in its layers,
  // read back by the guard: a change the guard left as it is, and what
  // the fingerprint sees of the real repository, are someone else's (the
  // user's commit, another Phoenix run's heal) and void nothing.
  std::vector<std::string> changes() const {
    std::vector<std::string> out;
    for (std::string& l : guard.restore("the agent"))
      if (!guard.confined() || !setup::left_as_it_is(l)) out.push_back(std::move(l));
    if (guard.confined()) return out;
    try {
      std::vector<std::string> rest = sandbox::fingerprint_changes(before, fingerprint());
      out.insert(out.end(), rest.begin(), rest.end());
    } catch (const Error& e) { out.push_back(std::string("the repository can no longer be read (") + e.what() + ")"); }
    return out;
  }
};

std::string changes_text(const std::vector<std::string>& changes) {
  std::string what;
  for (size_t i = 0; i < changes.size() && i < 10; ++i) what += (i ? "; " : "") + changes[i];
  if (changes.size() > 10) what += "; and " + std::to_string(changes.size() - 10) + " more";
  return what;
}

std::string summary_of(const std::string& program, const Classification& c, const std::vector<std::string>& files) {
  std::string summary = "harness " + program + ": ";
  switch (c.status) {
    case Status::kProposed: return summary + "changed " + first_files(files);
    case Status::kRateLimited:
    case Status::kUnreachable:
      return summary + agent::status_name(c.status) +
             (c.retry_after_ms > 0 ? ", retry in " + std::to_string((c.retry_after_ms + 999) / 1000) + " s" : "");
    case Status::kNothing: return summary + "changed nothing";
    default: return summary + status_name(c.status);
  }
}

// What the agent's run tells the proposal whatever its outcome (the trace
// keeps the detail): its exit, time, log (the argv, what the sandbox left
// out, the setup, the output), cost, turns and model calls. Returns the
// note on stray processes Phoenix killed ("; ..."), or "".
std::string record_run(Proposal& p, const util::ProcessResult& r, const Invocation& inv, size_t prompt_bytes,
                       const sandbox::Sandbox& sb, bool explain, const std::string& setup_note) {
  p.exit_code = r.exit_code;
  p.duration_ms = r.duration_ms;
  p.log = "$ " + shown_argv(inv.argv) + "   # in the sandbox; prompt via " + via_name(inv.via) +
          (inv.long_prompt_in_file ? " (too long for an argument: in a file)" : "") + ", " +
          std::to_string(prompt_bytes) + " bytes\n";
  if (explain) {
    // What the agent could not see, and why (secrets, ignored links...).
    p.log += "# sandbox: " + plural(sb.files().size(), "file", "files") + " copied";
    for (const sandbox::Skipped& s : sb.skipped()) p.log += "; not " + s.path + " (" + s.reason + ")";
    p.log += "\n";
  }
  p.log += setup_note;
  p.log += r.output;
  const std::string strays = r.strays_killed
                                 ? "; Phoenix killed " + plural(r.strays_killed, "stray process", "stray processes") +
                                       " the agent left running"
                                 : "";
  if (!strays.empty()) p.log += "\n# " + strays.substr(2) + "\n";
  const agent::AgentReport report = agent::parse_agent_report(r.output);
  p.cost_usd = report.cost_usd;
  p.turns = report.turns;
  // The CLI's own count where it reports one; a program that never started
  // asked nothing.
  if (r.not_found || r.not_executable) p.model_calls = 0;
  else p.model_calls = report.model_calls;
  return strays;
}

// The agent's command line: phoenix.json's command, else its preset's.
const std::vector<std::string>* harness_argv(const config::Harness& h) {
  const agent::HarnessPreset* preset = h.preset.empty() ? nullptr : agent::find_preset(h.preset);
  return !h.command.empty() ? &h.command : preset ? &preset->argv : nullptr;
}

// Not installed: said before the repository is copied for nothing. A path
// with '/' is resolved in the sandbox, so only the run can tell.
bool not_on_path(const config::Harness& h, const std::vector<std::string>& argv) {
  if (argv[0].find('/') != std::string::npos) return false;
  auto path_it = h.env.find("PATH");
  return util::find_executable(argv[0], path_it != h.env.end() ? path_it->second : "").empty();
}

}  // namespace

Proposal HarnessFixer::propose(const Request& request) {
  Proposal p;
  p.fixer = name();
  const auto started = std::chrono::steady_clock::now();
  auto done = [&](Status s, std::string detail, std::string summary) {
    p.status = s;
    p.detail = std::move(detail);
    p.summary = std::move(summary);
    if (p.duration_ms == 0)
      p.duration_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
    return p;
  };

  if (!request.config) return done(Status::kUnavailable, "no configuration was given", "harness: not configured");
  const config::Harness& h = request.config->harness;
  const std::vector<std::string>* base_argv = harness_argv(h);
  if (!base_argv || base_argv->empty())
    return done(Status::kUnavailable, "no harness configured: set \"harness\" in phoenix.json to a preset or a command",
                "harness: not configured");
  const std::string program = agent::program_name(*base_argv);
  if (not_on_path(h, *base_argv))
    return done(Status::kUnavailable, program + " is not installed (not found on PATH)",
                "harness: " + program + " not found");

  const std::string prompt = agent::render_prompt(load_prompt_template(request), prompt_values(request));
  // Sandboxes live outside the work tree (layout/layout.h), where no test
  // runner of the project finds their copies of the code.
  const std::string sandboxes = layout::sandboxes_dir(gitx::Repo::open(request.repo_root));
  sandbox::Sandbox sb = sandbox::Sandbox::create(request.repo_root, sandboxes, request.config->sandbox_carry,
                                                 sandbox::parse_kind(request.config->sandbox_kind, "sandbox.kind"));
  bool interrupted = false;
  const std::string setup_note = sandbox_setup(request, sb, &interrupted);
  if (interrupted)
    return done(Status::kCrashed, "interrupted during the sandbox's setup", "harness " + program + ": interrupted");
  Invocation inv = agent::plan_invocation(
      h, prompt, [&](const std::string& content) { return sb.write_scratch_file("prompt.md", content); });
  const util::ProcessOptions o = agent_process(request, h, inv, sb);

  const RepoWatch watch(request.repo_root, sandboxes, sb.path());
  const util::ProcessResult r = util::run_process(o);
  const std::vector<std::string> changes = watch.changes();

  const std::string strays = record_run(p, r, inv, prompt.size(), sb, request.explain, setup_note);

  // Confined (a copying sandbox where the kernel allows it), what it wrote
  // outside never landed; otherwise the repository did change.
  if (!changes.empty())
    return done(Status::kAborted,
                (watch.guard.confined() ? program + " wrote outside its sandbox: "
                                        : "the real repository changed while " + program + " ran: ") +
                    changes_text(changes) + strays,
                "harness " + program + ": aborted, it changed the real repository");

  std::string patch;
  std::vector<std::string> files;
  try {
    patch = sb.read_patch();
    files = gitx::Repo::patch_files(patch);
  } catch (const Error& e) {
    return done(Status::kCrashed, std::string("cannot read the sandbox's changes: ") + e.what() + strays,
                "harness " + program + ": sandbox unreadable");
  }

  Classification c =
      agent::classify_run(agent::run_facts(program, r, o.timeout_s, prompt, files.size()), util::now_ms());
  p.retry_after_ms = c.retry_after_ms;
  p.first_error = c.first_error;
  if (!(r.not_found || r.not_executable)) p.model_calls = c.model_calls;  // 0 for a model never reached
  if (c.status == Status::kProposed) {
    p.patch = std::move(patch);
    p.files = std::move(files);
  }
  return done(c.status, c.detail + strays, summary_of(program, c, p.files));
}

}  // namespace phoenix::fixers
