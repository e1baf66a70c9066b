#include "engine/guards.h"

#include <sys/stat.h>

#include <filesystem>
#include <regex>
#include <set>

#include "layout/paths.h"
#include "util/glob.h"
#include "util/text.h"

namespace phoenix::engine {

namespace fs = std::filesystem;

namespace {

// Paths every check protects, whatever phoenix.json says.
const std::vector<std::string>& always_protected() {
  static const std::vector<std::string> p{"phoenix.json", layout::kStateDirGlob, ".git/**",      ".git",
                                          ".githooks/**", ".husky/**",   "lefthook.yml", ".pre-commit-config.yaml"};
  return p;
}

}  // namespace

// Test files a check protects when protect_tests is on and it names none:
// these globs plus any repository path in its argv.
const std::vector<std::string>& default_test_globs() {
  static const std::vector<std::string> g{"tests/**", "test/**",  "__tests__/**", "spec/**",    "*_test.*", "*_tests.*",
                                          "test_*.*", "*.test.*", "*.spec.*",     "*Test.java", "*_spec.rb"};
  return g;
}

std::vector<std::string> protected_globs(const checks::CheckSpec& check, const config::Config& cfg,
                                         const std::string& root) {
  std::vector<std::string> out = always_protected();
  out.insert(out.end(), cfg.protected_globs.begin(), cfg.protected_globs.end());
  if (check.protect_tests) {
    if (!check.tests.empty()) {
      out.insert(out.end(), check.tests.begin(), check.tests.end());
    } else {
      out.insert(out.end(), default_test_globs().begin(), default_test_globs().end());
      // A script the check runs is its test too ("./tests/run.sh", "scripts/check").
      for (size_t i = 0; i < check.argv.size(); ++i) {
        std::string a = check.argv[i];
        if (util::starts_with(a, "./")) a = a.substr(2);
        if (a.empty() || a[0] == '/' || a[0] == '-' || a.find("..") != std::string::npos) continue;
        std::error_code ec;
        if (fs::is_regular_file(fs::path(root) / a, ec)) out.push_back(a);
      }
    }
  }
  return out;
}

namespace {

std::string unquote_path(std::string p) {
  // git quotes unusual names: "a\tb" with C escapes.
  if (p.size() >= 2 && p.front() == '"' && p.back() == '"') {
    std::string out;
    for (size_t i = 1; i + 1 < p.size(); ++i) {
      if (p[i] == '\\' && i + 2 < p.size()) {
        char c = p[++i];
        if (c >= '0' && c <= '7' && i + 2 < p.size()) {
          int v = (c - '0') * 64 + (p[i + 1] - '0') * 8 + (p[i + 2] - '0');
          out.push_back(static_cast<char>(v));
          i += 2;
        } else {
          out.push_back(c == 'n' ? '\n' : c == 't' ? '\t' : c);
        }
      } else {
        out.push_back(p[i]);
      }
    }
    return out;
  }
  return p;
}

// A path as messages show it: as is when it is printable UTF-8, otherwise
// quoted with C escapes the way git quotes it ("src/a\nb", "src/\377").
std::string shown(const std::string& path) {
  const bool valid = util::to_valid_utf8(path) == path;
  bool plain = valid;
  for (unsigned char c : path)
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') plain = false;
  if (plain) return path;
  std::string out = "\"";
  for (unsigned char c : path) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '"' || c == '\\') out += std::string("\\") + static_cast<char>(c);
    else if (c < 0x20 || c == 0x7f || (c >= 0x80 && !valid)) {
      const char oct[] = {'\\', static_cast<char>('0' + (c >> 6)), static_cast<char>('0' + ((c >> 3) & 7)),
                          static_cast<char>('0' + (c & 7)), '\0'};
      out += oct;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string strip_prefix(std::string p) {
  p = unquote_path(p);
  if (util::starts_with(p, "a/") || util::starts_with(p, "b/")) return p.substr(2);
  return p;
}

}  // namespace

PatchFacts patch_facts(const std::string& patch) {
  PatchFacts f;
  f.patch = patch;
  std::set<std::string> files;
  for (const auto& line : util::split_lines(patch)) {
    if (util::starts_with(line, "--- ") || util::starts_with(line, "+++ ")) {
      std::string p = line.substr(4);
      size_t tab = p.find('\t');
      if (tab != std::string::npos) p = p.substr(0, tab);
      if (p != "/dev/null") files.insert(strip_prefix(p));
    } else if (util::starts_with(line, "rename from ") || util::starts_with(line, "copy from ")) {
      files.insert(unquote_path(line.substr(line.find(" from ") + 6)));
    } else if (util::starts_with(line, "rename to ") || util::starts_with(line, "copy to ")) {
      files.insert(unquote_path(line.substr(line.find(" to ") + 4)));
    } else if (util::starts_with(line, "diff --git ")) {
      // "diff --git a/x b/x": covers mode-only and binary changes with no ---/+++ lines.
      std::string rest = line.substr(11);
      size_t sp = rest.find(" b/");
      if (util::starts_with(rest, "a/") && sp != std::string::npos) {
        files.insert(rest.substr(2, sp - 2));
        files.insert(rest.substr(sp + 3));
      }
    } else if (util::starts_with(line, "+") && !util::starts_with(line, "+++")) {
      ++f.insertions;
    } else if (util::starts_with(line, "-") && !util::starts_with(line, "---")) {
      ++f.deletions;
    }
  }
  f.files.assign(files.begin(), files.end());
  return f;
}

std::vector<std::string> destructive_lines(const std::string& patch) {
  static const std::regex re(
      R"((\bDROP\s+(TABLE|DATABASE|SCHEMA|INDEX|VIEW|COLUMN)\b)|(\bTRUNCATE\s+(TABLE\s+)?\w)|(\bALTER\s+TABLE\b.*\bDROP\b)|(\bDELETE\s+FROM\s+\w+\s*;)|(\brm\s+-[a-zA-Z]*r[a-zA-Z]*f?\s+/(\s|$))|(\bterraform\s+destroy\b)|(\bkubectl\s+delete\b)|(\bdropdb\b))",
      std::regex::icase);
  std::vector<std::string> out;
  for (const auto& line : util::split_lines(patch)) {
    if (!util::starts_with(line, "+") || util::starts_with(line, "+++")) continue;
    if (std::regex_search(line, re)) out.push_back(line.substr(1));
  }
  return out;
}

GuardVerdict check_patch(const PatchFacts& facts, const checks::CheckSpec& check, const config::Config& cfg,
                         const std::string& root) {
  auto reject = [](const std::string& guard, const std::string& reason) { return GuardVerdict{false, guard, reason}; };
  if (facts.files.empty()) return reject("empty", "the patch changes nothing");
  // Size first: a patch this large is not looked at file by file.
  if (cfg.patch_files_cap > 0 && facts.files.size() > static_cast<size_t>(cfg.patch_files_cap))
    return reject("patch_cap", "the patch touches " + std::to_string(facts.files.size()) +
                                   " files, more than the limit of " + std::to_string(cfg.patch_files_cap) +
                                   " (patch_files_cap)");
  if (cfg.patch_bytes_cap > 0 && facts.patch.size() > static_cast<size_t>(cfg.patch_bytes_cap))
    return reject("patch_cap", "the patch is " + std::to_string(facts.patch.size()) +
                                   " bytes, more than the limit of " + std::to_string(cfg.patch_bytes_cap) +
                                   " (patch_bytes_cap)");
  std::vector<std::string> prot = protected_globs(check, cfg, root);
  for (const auto& f : facts.files) {
    bool escapes = f.empty() || f[0] == '/' || f == ".." || util::starts_with(f, "../") ||
                   f.find("/../") != std::string::npos || util::ends_with(f, "/..");
    if (escapes) return reject("escape", "the patch names a path outside the repository: " + shown(f));
    if (f.find('\n') != std::string::npos || f.find('\r') != std::string::npos)
      return reject("escape", "the patch names a path with a line break in it: " + shown(f));
    // A component named .git anywhere (a nested repository's internals).
    if (f == ".git" || util::starts_with(f, ".git/") || f.find("/.git/") != std::string::npos)
      return reject("protected", "the patch edits git's own files: " + shown(f));
    for (const auto& g : prot)
      if (util::glob_match(g, f))
        return reject("protected", "the patch edits " + shown(f) + ", protected by '" + g + "'");
    if (!check.editable.empty() && !util::glob_match_any(check.editable, f)) {
      std::string globs;
      for (const auto& e : check.editable) globs += (globs.empty() ? "" : ", ") + e;
      return reject("editable", "the patch edits " + shown(f) + ", outside the editable globs of check " + check.id +
                                    " (" + globs + ")");
    }
    // Writing through a symbolic link that already exists in the work tree.
    struct stat st;
    std::string full = root + "/" + f;
    for (size_t pos = full.find('/', root.size() + 1);; pos = full.find('/', pos + 1)) {
      std::string prefix = pos == std::string::npos ? full : full.substr(0, pos);
      if (::lstat(prefix.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
        return reject("symlink", "the patch writes through the symbolic link " + shown(prefix.substr(root.size() + 1)));
      if (pos == std::string::npos) break;
    }
  }
  for (const auto& line : util::split_lines(facts.patch)) {
    if (util::starts_with(line, "new file mode 120000") || util::starts_with(line, "new mode 120000"))
      return reject("symlink", "the patch creates a symbolic link");
  }
  size_t changed = facts.insertions + facts.deletions;
  if (cfg.diff_cap > 0 && changed > static_cast<size_t>(cfg.diff_cap))
    return reject("diff_cap", "the patch changes " + std::to_string(changed) + " lines, over the diff cap of " +
                                  std::to_string(cfg.diff_cap));
  auto destructive = destructive_lines(facts.patch);
  if (!destructive.empty())
    return reject("destructive", "the patch adds a destructive statement, which needs a person: " +
                                     std::string(util::utf8_head(util::trim(destructive[0]), 120)));
  return {};
}

}  // namespace phoenix::engine
