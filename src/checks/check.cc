#include "checks/check.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>

#include "checks/contract.h"
#include "checks/http.h"
#include "checks/visual.h"
#include "gitx/repo.h"
#include "layout/layout.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/redact.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::checks {

using util::Json;
namespace fs = std::filesystem;

// Parsing a check (parse_check, failure_types) is in check_spec.cc, a
// command_exit check's run in check_command.cc: both link without
// libgit2 or OpenSSL, for the pre-push hook's thin binary (phoenix-hook).

namespace {

SenseResult sense_sha256(const CheckSpec& c, const std::string& root) {
  SenseResult r;
  std::string p = resolve_in(root, c.path);
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) {
    r.signal = "missing: " + c.path;
    r.evidence = p + " does not exist or is not a regular file";
    return r;
  }
  std::string actual = util::sha256_file(p);
  r.ok = actual == c.expect_sha256;
  r.signal = r.ok ? "sha256 matches" : "sha256 mismatch";
  r.evidence = "expected " + c.expect_sha256 + "\nactual   " + actual + "\nfile     " + c.path;
  return r;
}

SenseResult sense_regex(const CheckSpec& c, const std::string& root) {
  SenseResult r;
  std::string p = resolve_in(root, c.path);
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    r.signal = "missing: " + c.path;
    r.evidence = p + " cannot be read";
    return r;
  }
  std::regex re(c.pattern);
  std::string line;
  size_t lineno = 0, matches = 0;
  std::string shown;
  while (std::getline(in, line)) {
    ++lineno;
    if (std::regex_search(line, re)) {
      ++matches;
      if (matches <= 5)
        shown += c.path + ":" + std::to_string(lineno) + ": " + util::to_valid_utf8(util::utf8_head(line, 200)) + "\n";
    }
  }
  bool present = matches > 0;
  r.ok = present == c.expect_present;
  r.signal = present ? "present: " + std::to_string(matches) + (matches == 1 ? " match" : " matches") : "absent";
  r.evidence = present ? shown + (matches > 5 ? "(" + std::to_string(matches - 5) + " more)\n" : "")
                       : "/" + c.pattern + "/ does not occur in " + c.path;
  return r;
}

}  // namespace

SenseResult sense(const CheckSpec& spec, const std::string& root) {
  if (spec.kind == Kind::kCommandExit) return sense_command_exit(spec, root);
  auto start = std::chrono::steady_clock::now();
  SenseResult r;
  switch (spec.kind) {
    case Kind::kFileSha256: r = sense_sha256(spec, root); break;
    case Kind::kRegexInFile: r = sense_regex(spec, root); break;
    case Kind::kContract: r = sense_contract(spec, root); break;
    case Kind::kVisual: r = sense_visual(spec, root); break;
    case Kind::kCommandExit: break;  // above
  }
  return finish_sense(std::move(r), spec, start);
}

}  // namespace phoenix::checks

namespace phoenix::checks {

bool boot_server(const CheckSpec& spec, const std::string& root, std::unique_ptr<Server>& server, SenseResult& r) {
  if (!spec.has_server) return true;
  server = std::make_unique<Server>(spec.server, root);
  if (server->ready()) return true;
  r.signal = server->signal();
  r.evidence = server->evidence();
  r.interrupted = server->interrupted();
  server.reset();
  return false;
}

Missing missing_recording(const CheckSpec& spec, const std::string& root, const std::string& rel,
                          std::string* where_known) {
  if (!spec.record) return Missing::kRecordNever;
  try {
    gitx::Repo repo = gitx::Repo::open(root);
    if (!repo.head_sha().empty() && repo.read_blob_at("HEAD", rel)) {
      if (where_known) *where_known = "HEAD";
      return Missing::kDeleted;
    }
    // known-good of HEAD's branch, or an earlier version's one known-good.
    for (const std::string& ref :
         {layout::known_good_ref_of(repo.head_branch()), std::string(layout::kLegacyKnownGoodRef)})
      if (auto kg = repo.read_ref(ref); kg && repo.read_blob_at(*kg, rel)) {
        if (where_known) *where_known = ref;
        return Missing::kDeleted;
      }
  } catch (const Error&) {
    // Not a git repository (or an unborn one): nothing can have been deleted.
  }
  return Missing::kRecordNow;
}

}  // namespace phoenix::checks
