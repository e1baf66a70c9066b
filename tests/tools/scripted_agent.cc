// scripted_agent: stands in for an agent CLI in tests. Tests link it into a
// temporary bin folder under the names of the presets (claude, codex, aider,
// opencode, gemini) or run it as a custom harness command.
//
// It takes the prompt the way the CLI it impersonates would (its name is
// argv[0]'s basename): stdin for claude and codex, `--message-file FILE` for
// aider, the last argument of `run` for opencode, the value of `-p` for
// gemini; for any name, `--prompt-file FILE` or `--prompt TEXT`; otherwise
// stdin. Every other flag is accepted and ignored.
//
// It appends one JSON line to $PHOENIX_AGENT_LOG (when set):
//   {"name", "args" (argv[1..]), "stdin", "prompt", "prompt_file", "cwd",
//    "env": {PHOENIX_SANDBOX, OPENCODE_PERMISSION, GIT_CEILING_DIRECTORIES, GIT_DIR, HARNESS_TEST_VAR}}
// then performs $PHOENIX_AGENT_SCRIPT: actions separated by ';', each split
// into words like a shell would (quotes allowed, no expansion); "\n" in a
// text argument is a newline, "\xHH" the byte HH. Paths are relative to the
// working directory.
//   nothing                      do nothing
//   write FILE TEXT              create/overwrite (folders made)
//   append FILE TEXT
//   copy FROM TO                 a file's bytes (a picture, say); exit 6 when FROM cannot be read
//   write-binary FILE N          N bytes including NULs
//   write-named FILE TEXT        write, with "\n" and "\xHH" escapes in FILE too
//   many-files DIR N             N empty files DIR/f0 .. DIR/f<N-1>
//   replace FILE OLD NEW         every occurrence; exit 3 when OLD is absent
//   delete PATH                  file, symlink or folder
//   rename OLD NEW
//   chmod PATH OCTAL
//   symlink TARGET LINK          LINK -> TARGET (as given)
//   symlink-out LINK ABSPATH     a link leading out of the sandbox
//   write-outside ABSPATH TEXT   write by absolute path (the real repository, say)
//   rm-git                       delete ./.git
//   git ARGS...                  run git (same process group); exit 4 on failure
//   git-commit                   git add -A && git commit -m "agent commit"
//   git-reset [REV]              git reset --hard REV (default HEAD~0)
//   print TEXT / eprint TEXT     to stdout / stderr
//   echo-prompt                  the prompt, to stdout
//   cat FILE                     a file, to stdout; exit 6 when it cannot be read
//   print-json-cost USD [TURNS]  claude's result object, is_error false, with cost
//   print-json-nocost            the same without cost and turns
//   print-json-error TEXT        claude's result object with is_error true
//   rate-limit [SECONDS]         an API 429 on stderr (with "retry after" when given), exit 1
//   quota                        "Claude AI usage limit reached|<now+1h>", exit 1
//   huge-output BYTES            that many bytes of output
//   huge-line BYTES              that many bytes of output without a newline
//   sleep SECONDS
//   spawn-sleeper SECONDS FILE   start `sleep` in our process group, its pid to FILE
//                                (pid files appear with the pid in them)
//   fork-tree WIDTH DEPTH        forks WIDTH children that each fork WIDTH more,
//                                DEPTH levels (a bounded fork bomb); they all
//                                sleep 300 s, in our process group
//   daemon SECONDS               double fork + setsid: a daemon out of our process
//                                group that keeps our stdout/stderr and sleeps
//   write-pid FILE               our pid (also our process group's id) to FILE
//   kill-self SIGNUM             raise the signal
//   exit CODE                    stop here with CODE
// Guards, in front of an action (they chain):
//   if-prompt TEXT ACTION...     runs ACTION only when the prompt contains TEXT
//   unless-prompt TEXT ACTION... runs ACTION only when it does not
//   first N FILE ACTION...       bumps the counter in FILE (absolute path);
//                                runs ACTION only the first N times
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "util/atomic_file.h"
#include "util/text.h"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string slurp(std::istream& in) {
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return slurp(in);
}

void write_file(const fs::path& path, const std::string& content, bool append = false) {
  if (path.has_parent_path()) fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | (append ? std::ios::app : std::ios::trunc));
  out << content;
}

// Whole or not at all (renamed into place): tests poll for a pid file and
// read it the moment it appears.
void write_pid_file(const std::string& path, pid_t pid) { phoenix::util::write_file_atomic(path, std::to_string(pid)); }

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && s[i + 1] == 'n') {
      out += '\n';
      ++i;
    } else if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x' &&
               std::isxdigit(static_cast<unsigned char>(s[i + 2])) &&
               std::isxdigit(static_cast<unsigned char>(s[i + 3]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 2, 2), nullptr, 16));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Runs a program in our own process group (as a real agent's tools do) and
// returns its exit status.
int spawn_wait(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid;
  if (posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ) != 0) return 127;
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A child of the fork tree: forks its own children, then sleeps. Never
// returns (a forked copy must not go on with the script).
[[noreturn]] void fork_tree_node(int width, int depth) {
  for (int i = 0; depth > 0 && i < width; ++i) {
    pid_t pid = ::fork();
    if (pid == 0) fork_tree_node(width, depth - 1);
  }
  ::sleep(300);
  ::_exit(0);
}

int fail(const std::string& why, int code) {
  std::cerr << "scripted_agent: " << why << "\n";
  return code;
}

}  // namespace

int run(int argc, char** argv) {
  const std::string name = fs::path(argv[0]).filename().string();
  std::vector<std::string> args(argv + 1, argv + argc);
  const std::string stdin_data = slurp(std::cin);

  std::string prompt, prompt_file;
  bool from_args = false;
  for (size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] == "--message-file" || args[i] == "--prompt-file") {
      prompt_file = args[i + 1];
      prompt = read_file(prompt_file);
      from_args = true;
    } else if (args[i] == "--prompt" || (name == "gemini" && args[i] == "-p")) {
      prompt = args[i + 1];
      from_args = true;
    }
  }
  if (!from_args && name == "opencode" && args.size() >= 2 && args[0] == "run") {
    prompt = args.back();
    from_args = true;
  }
  if (!from_args) prompt = stdin_data;

  if (const char* log = std::getenv("PHOENIX_AGENT_LOG")) {
    json env = json::object();
    for (const char* k :
         {"PHOENIX_SANDBOX", "OPENCODE_PERMISSION", "GIT_CEILING_DIRECTORIES", "GIT_DIR", "HARNESS_TEST_VAR"}) {
      if (const char* v = std::getenv(k)) env[k] = v;
    }
    json rec = {{"name", name},
                {"args", args},
                {"stdin", stdin_data},
                {"prompt", prompt},
                {"prompt_file", prompt_file},
                {"cwd", fs::current_path().string()},
                {"env", env}};
    std::ofstream out(log, std::ios::app);
    out << rec.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  }

  const std::string script = env_or_empty("PHOENIX_AGENT_SCRIPT");
  size_t start = 0;
  while (start <= script.size()) {
    size_t semi = script.find(';', start);
    if (semi == std::string::npos) semi = script.size();
    std::vector<std::string> w = phoenix::util::split_words(script.substr(start, semi - start));
    start = semi + 1;
    // Guards in front of an action decide whether it runs.
    bool skip = false;
    while (!w.empty() && (w[0] == "if-prompt" || w[0] == "unless-prompt" || w[0] == "first")) {
      if (w.size() < (w[0] == "first" ? 4u : 3u)) return fail(w[0] + ": needs its arguments and an action", 64);
      if (w[0] == "first") {
        long n = 0;
        try {
          n = std::stol(read_file(w[2]));
        } catch (const std::exception&) {}
        write_file(w[2], std::to_string(++n));
        if (n > std::stol(w[1])) skip = true;
        w.erase(w.begin(), w.begin() + 3);
      } else {
        bool has = prompt.find(unescape(w[1])) != std::string::npos;
        if (has != (w[0] == "if-prompt")) skip = true;
        w.erase(w.begin(), w.begin() + 2);
      }
    }
    if (w.empty() || skip) continue;
    const std::string& op = w[0];
    auto need = [&](size_t n) {
      if (w.size() < n + 1) {
        std::cerr << "scripted_agent: " << op << " needs " << n << " arguments\n";
        std::exit(64);
      }
    };
    if (op == "nothing") {
    } else if (op == "write") {
      need(2);
      write_file(w[1], unescape(w[2]));
    } else if (op == "append") {
      need(2);
      write_file(w[1], unescape(w[2]), true);
    } else if (op == "copy") {
      need(2);
      std::ifstream in(w[1], std::ios::binary);
      if (!in) {
        std::cerr << "scripted_agent: cannot read " << w[1] << "\n";
        std::exit(6);
      }
      write_file(w[2], std::string(std::istreambuf_iterator<char>(in), {}));
    } else if (op == "write-binary") {
      need(2);
      std::string bytes;
      for (long i = 0, n = std::stol(w[2]); i < n; ++i) bytes.push_back(static_cast<char>((i * 37 + 11) % 256));
      if (!bytes.empty()) bytes[0] = '\0';
      write_file(w[1], bytes);
    } else if (op == "write-named") {
      need(2);
      write_file(unescape(w[1]), unescape(w[2]));
    } else if (op == "many-files") {
      need(2);
      fs::create_directories(w[1]);
      for (long i = 0, n = std::stol(w[2]); i < n; ++i) std::ofstream(w[1] + "/f" + std::to_string(i));
    } else if (op == "replace") {
      need(3);
      std::string text = read_file(w[1]);
      const std::string from = unescape(w[2]), to = unescape(w[3]);
      size_t pos = text.find(from);
      if (from.empty() || pos == std::string::npos) return fail("replace: text not found in " + w[1], 3);
      for (; pos != std::string::npos; pos = text.find(from, pos + to.size())) text.replace(pos, from.size(), to);
      write_file(w[1], text);
    } else if (op == "delete") {
      need(1);
      fs::remove_all(w[1]);
    } else if (op == "rename") {
      need(2);
      if (fs::path(w[2]).has_parent_path()) fs::create_directories(fs::path(w[2]).parent_path());
      fs::rename(w[1], w[2]);
    } else if (op == "chmod") {
      need(2);
      fs::permissions(w[1], static_cast<fs::perms>(std::stoul(w[2], nullptr, 8)), fs::perm_options::replace);
    } else if (op == "symlink" || op == "symlink-out") {
      need(2);
      // symlink TARGET LINK; symlink-out LINK ABSPATH
      const std::string target = op == "symlink" ? w[1] : w[2];
      const std::string link = op == "symlink" ? w[2] : w[1];
      fs::create_symlink(target, link);
    } else if (op == "write-outside") {
      need(2);
      write_file(w[1], unescape(w[2]));
    } else if (op == "rm-git") {
      fs::remove_all(".git");
    } else if (op == "git") {
      std::vector<std::string> cmd(w.begin(), w.end());
      if (spawn_wait(cmd) != 0) return fail("git failed", 4);
    } else if (op == "git-commit") {
      if (spawn_wait({"git", "add", "-A"}) != 0) return fail("git add failed", 4);
      if (spawn_wait({"git", "commit", "-q", "-m", "agent commit"}) != 0) return fail("git commit failed", 4);
    } else if (op == "git-reset") {
      if (spawn_wait({"git", "reset", "-q", "--hard", w.size() > 1 ? w[1] : "HEAD~0"}) != 0)
        return fail("git reset failed", 4);
    } else if (op == "print") {
      need(1);
      std::cout << unescape(w[1]) << "\n" << std::flush;
    } else if (op == "eprint") {
      need(1);
      std::cerr << unescape(w[1]) << "\n" << std::flush;
    } else if (op == "cat") {
      need(1);
      std::ifstream in(w[1], std::ios::binary);
      if (!in) return fail("cat: cannot read " + w[1], 6);
      std::cout << slurp(in) << std::flush;
    } else if (op == "echo-prompt") {
      std::cout << prompt << std::flush;
    } else if (op == "print-json-cost") {
      need(1);
      json r = {{"type", "result"},
                {"subtype", "success"},
                {"is_error", false},
                {"num_turns", w.size() > 2 ? std::stoi(w[2]) : 3},
                {"total_cost_usd", std::stod(w[1])},
                {"result", "Fixed the error handling in the parser."}};
      std::cout << r.dump() << "\n" << std::flush;
    } else if (op == "print-json-nocost") {
      json r = {{"type", "result"}, {"subtype", "success"}, {"is_error", false}, {"result", "Done."}};
      std::cout << r.dump() << "\n" << std::flush;
    } else if (op == "print-json-error") {
      need(1);
      json r = {{"type", "result"}, {"subtype", "success"},   {"is_error", true},
                {"num_turns", 1},   {"total_cost_usd", 0.01}, {"result", unescape(w[1])}};
      std::cout << r.dump() << "\n" << std::flush;
    } else if (op == "rate-limit") {
      std::cerr << "API Error: 429 {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"This "
                   "request would exceed your account's rate limit. Please try again later.\"}}\n";
      if (w.size() > 1) std::cerr << "Retry after " << w[1] << " seconds\n";
      return 1;
    } else if (op == "quota") {
      long long reset = static_cast<long long>(std::time(nullptr)) + 3600;
      std::cout << "Claude AI usage limit reached|" << reset << "\n" << std::flush;
      return 1;
    } else if (op == "huge-output") {
      need(1);
      const std::string line(1023, 'x');
      for (long long left = std::stoll(w[1]); left > 0; left -= 1024) std::cout << line << "\n";
      std::cout << std::flush;
    } else if (op == "huge-line") {
      need(1);
      const std::string chunk(65536, 'y');
      for (long long left = std::stoll(w[1]); left > 0; left -= static_cast<long long>(chunk.size()))
        std::cout.write(chunk.data(), static_cast<std::streamsize>(std::min<long long>(left, chunk.size())));
      std::cout << std::flush;
    } else if (op == "fork-tree") {
      need(2);
      std::cout << std::flush;
      const int width = std::stoi(w[1]), depth = std::stoi(w[2]);
      for (int i = 0; i < width; ++i) {
        pid_t pid = ::fork();
        if (pid == 0) fork_tree_node(width, depth - 1);
      }
    } else if (op == "daemon") {
      need(1);
      std::cout << std::flush;
      const unsigned secs = static_cast<unsigned>(std::stoul(w[1]));
      pid_t pid = ::fork();
      if (pid == 0) {
        ::setsid();
        if (::fork() == 0) {
          ::sleep(secs);  // stdout and stderr stay open: Phoenix's pipe
          ::_exit(0);
        }
        ::_exit(0);
      }
      int status = 0;
      if (pid > 0) ::waitpid(pid, &status, 0);
    } else if (op == "sleep") {
      need(1);
      std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<long>(std::stod(w[1]) * 1000)));
    } else if (op == "spawn-sleeper") {
      need(2);
      std::string secs = w[1];
      char* sargs[] = {const_cast<char*>("sleep"), secs.data(), nullptr};
      pid_t pid;
      if (posix_spawnp(&pid, "sleep", nullptr, nullptr, sargs, environ) != 0) return fail("cannot start sleep", 5);
      write_pid_file(w[2], pid);
    } else if (op == "write-pid") {
      need(1);
      write_pid_file(w[1], ::getpid());
    } else if (op == "kill-self") {
      need(1);
      std::cout << std::flush;
      ::raise(std::stoi(w[1]));
    } else if (op == "exit") {
      need(1);
      std::cout << std::flush;
      return std::stoi(w[1]);
    } else {
      return fail("unknown action '" + op + "'", 64);
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  // A bad script is the test's mistake: say so and exit, never abort (a
  // core file in the sandbox would count as a change).
  try {
    return run(argc, argv);
  } catch (const std::exception& e) { return fail(std::string("error: ") + e.what(), 70); }
}
