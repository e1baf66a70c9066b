#include "test_util.h"
#include "util/text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace fs = std::filesystem;

namespace phoenix::test {

ScopedTempDir::ScopedTempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/phoenix-test-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  path_ = fs::canonical(buf.data()).string();
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  // Make everything writable first (a test may chmod files away).
  for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_symlink()) fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

util::ProcessResult run(const std::vector<std::string>& argv, const std::string& cwd,
                        const std::vector<std::pair<std::string, std::string>>& env, double timeout_s) {
  util::ProcessOptions o;
  o.argv = argv;
  o.cwd = cwd;
  o.timeout_s = timeout_s;
  o.tail_bytes = 1 << 20;
  for (const auto& [k, v] : env) o.env[k] = v;
  return util::run_process(o);
}

std::string git(const std::string& repo, const std::vector<std::string>& args) {
  std::vector<std::string> argv{"git", "-C", repo};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = run(argv, "", {{"GIT_AUTHOR_DATE", ""}});
  if (r.exit_code != 0) ADD_FAILURE() << "git " << args[0] << " failed (" << r.exit_code << "): " << r.output;
  return r.output;
}

std::string init_repo(const std::string& dir) {
  fs::create_directories(dir);
  git(dir, {"init", "-q", "-b", "main"});
  git(dir, {"config", "user.name", "Test User"});
  git(dir, {"config", "user.email", "test@example.com"});
  git(dir, {"config", "commit.gpgsign", "false"});
  return dir;
}

std::string repo_control_state(const std::string& repo) {
  const std::string common = trim(git(repo, {"rev-parse", "--path-format=absolute", "--git-common-dir"}));
  std::string s = "config:\n" + read(common + "/config") + "hooks:\n";
  std::error_code ec;
  std::vector<std::string> hooks;
  for (const auto& e : fs::directory_iterator(common + "/hooks", ec)) hooks.push_back(e.path().string());
  std::sort(hooks.begin(), hooks.end());
  for (const std::string& h : hooks) s += h + "\n" + read(h) + "\n";
  s += "refs:\n";
  for (const std::string& line : util::split_lines(git(repo, {"for-each-ref", "--format=%(refname) %(objectname)"})))
    if (!util::starts_with(line, "refs/phoenix/") && !util::starts_with(line, "refs/heads/phoenix/")) s += line + "\n";
  s += "HEAD: " + read(common + "/HEAD") + "index:\n" + git(repo, {"ls-files", "-s"});
  return s;
}

std::string hostile_git_script(const std::string& git_cmd) {
  return "set -e; G() { " + git_cmd + " \"$@\"; }; G config core.hooksPath /tmp/x; G config user.email x; " +
         "hooks=$(G rev-parse --path-format=absolute --git-common-dir)/hooks; mkdir -p \"$hooks\"; " +
         "printf '#!/bin/sh\\nexit 0\\n' > \"$hooks/pre-push\"; chmod +x \"$hooks/pre-push\"; " +
         "G update-ref refs/heads/main HEAD~1; G update-ref refs/phoenix/mine HEAD";
}

std::vector<std::string> hostile_git_put_back_lines(const std::string& who) {
  return {who + " changed core.hooksPath to /tmp/x; put back", who + " changed user.email to x; put back",
          "/hooks/pre-push; removed", who + " moved refs/heads/main from "};
}

void write(const std::string& dir, const std::string& rel, const std::string& content) {
  fs::path p = fs::path(dir) / rel;
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << content;
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string commit_all(const std::string& repo, const std::string& msg) {
  git(repo, {"add", "-A"});
  git(repo, {"commit", "-q", "--allow-empty", "-m", msg});
  std::string sha = git(repo, {"rev-parse", "HEAD"});
  while (!sha.empty() && (sha.back() == '\n' || sha.back() == '\r')) sha.pop_back();
  return sha;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string rev_parse(const std::string& repo, const std::string& rev) { return trim(git(repo, {"rev-parse", rev})); }

std::string porcelain(const std::string& repo) { return git(repo, {"status", "--porcelain", "-uall"}); }

CliRun run_phoenix(const std::string& cwd, std::vector<std::string> args, double timeout_s,
                   const std::vector<std::pair<std::string, std::string>>& env) {
  args.insert(args.begin(), phoenix_bin());
  auto r = run(args, cwd, env, timeout_s);
  return {r.exit_code, r.output};
}

std::string phoenix_bin() { return PHOENIX_BIN; }
std::string phoenix_loop_bin() { return PHOENIX_LOOP_BIN; }
std::string test_tool(const std::string& name) { return std::string(PHOENIX_TEST_TOOLS_DIR) + "/" + name; }
std::string fixtures_dir() { return PHOENIX_TEST_FIXTURES_DIR; }

std::string init_loop_repo(const std::string& dir, const std::string& tasks_md) {
  init_repo(dir);
  write(dir, "src.txt", "fine\n");
  write(dir, ".gitignore", ".phoenix/\nincidents/\n");
  write(dir, "TASKS.md", tasks_md);
  return dir;
}

util::Json broken_check(const std::string& id, const std::string& target, bool editable) {
  util::Json c = {
      {"id", id}, {"kind", "regex_in_file"}, {"target", target}, {"pattern", "BROKEN"}, {"expect", "absent"}};
  if (editable) c["editable"] = util::Json::array({target});
  return c;
}

util::Json scripted_harness(const std::string& script) {
  return {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
          {"timeout_s", 60},
          {"env", {{"PHOENIX_AGENT_SCRIPT", script}}}};
}

util::Json loop_section(int no_progress_limit, const util::Json& extra) {
  util::Json loop = {{"tasks", "TASKS.md"}, {"heartbeat_s", 0.05}, {"no_progress_limit", no_progress_limit}};
  for (const auto& [k, v] : extra.items()) loop[k] = v;
  return loop;
}

CliRun run_loop(const std::string& repo, std::vector<std::string> args, double timeout_s) {
  args.insert(args.begin(), phoenix_loop_bin());
  auto r = run(args, repo, {}, timeout_s);
  return {r.exit_code, r.output};
}

util::Json loop_state(const std::string& repo) { return util::Json::parse(read(repo + "/.phoenix/loop-state.json")); }

}  // namespace phoenix::test
