// phoenix-loop beyond one machine: shards that push task branches to a
// remote, and the merge that takes them through the verified merge queue.
// The shipped templates' own scripts (the Kubernetes Indexed Job and merge
// Job, the GitHub Actions matrix and merge job) are run as the pods and
// runners would: each in a clone of its own, against a local bare remote,
// with the real phoenix-loop and the scripted agent.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <filesystem>
#include <map>
#include <memory>
#include <set>

#include "loop/shard.h"
#include "test_util.h"
#include "util/error.h"
#include "util/format.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

loop::Task task(int index, const std::string& name, std::vector<std::string> after = {}) {
  loop::Task t;
  t.index = index;
  t.name = name;
  t.title = name;
  t.after = std::move(after);
  return t;
}

TEST(Shards, GroupsJoinedByAfterAreNeverSplitAndGoRoundRobin) {
  // a b c d e f: c after a, e after c, f after d.
  std::vector<loop::Task> tasks = {task(0, "a"), task(1, "b"),        task(2, "c", {"a"}),
                                   task(3, "d"), task(4, "e", {"c"}), task(5, "f", {"d"})};
  // Groups in file order: {a,c,e} {b} {d,f}.
  EXPECT_EQ(loop::shard_tasks(tasks, {1, 2}), (std::set<int>{0, 2, 3, 4, 5}));
  EXPECT_EQ(loop::shard_tasks(tasks, {2, 2}), (std::set<int>{1}));
  EXPECT_EQ(loop::shard_tasks(tasks, {1, 3}), (std::set<int>{0, 2, 4}));
  EXPECT_EQ(loop::shard_tasks(tasks, {3, 3}), (std::set<int>{3, 5}));
  // More shards than groups: the extra shards have nothing to do.
  EXPECT_TRUE(loop::shard_tasks(tasks, {5, 5}).empty());
  // Every task in exactly one shard.
  for (int n = 1; n <= 7; ++n) {
    std::multiset<int> all;
    for (int i = 1; i <= n; ++i)
      for (int t : loop::shard_tasks(tasks, {i, n})) all.insert(t);
    EXPECT_EQ(all, (std::multiset<int>{0, 1, 2, 3, 4, 5})) << n;
  }
}

TEST(Shards, BadShardTextsAndEnvironmentsAreRefusedNamingThem) {
  EXPECT_EQ(loop::parse_shard("2/3").index, 2);
  EXPECT_EQ(loop::parse_shard("2/3").count, 3);
  for (const char* bad : {"", "3", "0/3", "4/3", "a/b", "1/0", "-1/3", "1/3/4", " 1/3"}) {
    try {
      loop::parse_shard(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
    }
  }
  auto env = [](std::map<std::string, std::string> m) {
    return [m = std::move(m)](const char* k) -> const char* {
      auto it = m.find(k);
      return it == m.end() ? nullptr : it->second.c_str();
    };
  };
  EXPECT_FALSE(loop::shard_from_env(env({})).has_value());
  auto s = loop::shard_from_env(env({{"JOB_COMPLETION_INDEX", "0"}, {"JOB_COMPLETION_COUNT", "3"}}));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->text(), "1/3");  // Kubernetes counts from 0
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> bad = {
      {{{"JOB_COMPLETION_INDEX", "0"}}, "JOB_COMPLETION_COUNT is not"},
      {{{"JOB_COMPLETION_INDEX", "3"}, {"JOB_COMPLETION_COUNT", "3"}}, "JOB_COMPLETION_INDEX '3'"},
      {{{"JOB_COMPLETION_INDEX", "x"}, {"JOB_COMPLETION_COUNT", "3"}}, "JOB_COMPLETION_INDEX 'x'"},
      {{{"JOB_COMPLETION_INDEX", "0"}, {"JOB_COMPLETION_COUNT", "0"}}, "JOB_COMPLETION_COUNT '0'"}};
  for (const auto& [vars, said] : bad) {
    try {
      loop::shard_from_env(env(vars));
      ADD_FAILURE() << "accepted " << said;
    } catch (const UsageError& e) { EXPECT_NE(std::string(e.what()).find(said), std::string::npos) << e.what(); }
  }
}

#ifdef PHOENIX_LOOP_BIN

// The block scalar ("key: |" or "- |") after the first line of `yaml`
// holding `key_line` at or after line `from`, dedented; the shell script a
// pod or a step runs.
std::string yaml_block(const std::string& yaml, const std::string& key_line, const std::string& containing) {
  std::vector<std::string> lines = util::split_lines(yaml);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string l = util::trim(lines[i]);
    if (l != key_line) continue;
    size_t key_indent = lines[i].find_first_not_of(' ');
    std::string block;
    size_t indent = std::string::npos;
    for (size_t j = i + 1; j < lines.size(); ++j) {
      const std::string& b = lines[j];
      size_t at = b.find_first_not_of(' ');
      if (at == std::string::npos) {
        block += "\n";
        continue;
      }
      if (at <= key_indent) break;
      if (indent == std::string::npos) indent = at;
      block += b.substr(std::min(indent, at)) + "\n";
    }
    if (block.find(containing) != std::string::npos) return block;
  }
  ADD_FAILURE() << "no '" << key_line << "' block holding '" << containing << "'";
  return "";
}

// The value given to environment variable `name` in a Kubernetes manifest.
std::string yaml_env_value(const std::string& yaml, const std::string& name) {
  std::vector<std::string> lines = util::split_lines(yaml);
  for (size_t i = 0; i + 1 < lines.size(); ++i)
    if (util::trim(lines[i]) == "- name: " + name) {
      std::string v = util::trim(lines[i + 1]);
      if (util::starts_with(v, "value:")) {
        v = util::trim(v.substr(6));
        if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);
        return v;
      }
    }
  return "";
}

// An integer field ("completions: 3") of a manifest.
int yaml_int(const std::string& yaml, const std::string& key) {
  for (const auto& l : util::split_lines(yaml)) {
    std::string t = util::trim(l);
    if (util::starts_with(t, key + ": ")) return std::stoi(t.substr(key.size() + 2));
  }
  return -1;
}

class LoopShards : public ::testing::Test {
 protected:
  ScopedTempDir tmp;
  std::string seed, remote, head, agent_log;

  // Seven tasks: two that must go in order (csv after schema, written the
  // other way round in the file, csv with an acceptance check that needs
  // schema's file), two that write the same file differently (A and B, in
  // different shards: the second to merge conflicts and is redone), and
  // three on their own.
  void SetUp() override {
    seed = init_repo(tmp / "seed");
    agent_log = tmp / "agent.jsonl";
    write(seed, "src.txt", "fine\n");
    write(seed, ".gitignore", ".phoenix/\nincidents/\n");
    write(seed, "TASKS.md",
          "# Tasks\n\n"
          "- [ ] task 1\n"
          "- [ ] export — id: csv — after: schema — check: test -f schema.txt\n"
          "- [ ] task A\n"
          "- [ ] schema — id: schema\n"
          "- [ ] task B\n"
          "- [ ] task 2\n"
          "- [ ] task 3\n");
    std::string script = "sleep 0.1";
    for (const auto& [title, action] :
         std::vector<std::pair<std::string, std::string>>{{"task 1", "write f1.txt '1\\n'"},
                                                          {"export", "write csv.txt 'id,name\\n'"},
                                                          {"task A", "write shared.txt 'A\\n'"},
                                                          {"schema", "write schema.txt 'id name\\n'"},
                                                          {"task B", "write shared.txt 'B\\n'"},
                                                          {"task 2", "write f2.txt '2\\n'"},
                                                          {"task 3", "write f3.txt '3\\n'"}})
      script += "; if-prompt '" + kTaskIs + title + "\\n' " + action;
    Json harness = scripted_harness(script);
    harness["env"]["PHOENIX_AGENT_LOG"] = agent_log;
    Json cfg = {{"checks",
                 {broken_check("nobreak", "src.txt"),
                  {{"id", "no-bad"}, {"kind", "command_exit"}, {"target", {"sh", "-c", "test ! -e bad.txt"}}}}},
                {"fixers", {"noop"}},
                {"harness", harness},
                {"loop", loop_section(3, {{"on_escalate", "skip"}})}};
    write(seed, "phoenix.json", cfg.dump(2));
    head = commit_all(seed, "initial");
    remote = tmp / "remote.git";
    git(tmp.path(), {"clone", "--quiet", "--bare", seed, remote});
  }

  std::map<std::string, std::string> env_with_path(std::map<std::string, std::string> env) {
    const char* path = std::getenv("PATH");
    env["PATH"] = fs::path(PHOENIX_LOOP_BIN).parent_path().string() + ":" + (path ? path : "/usr/bin:/bin");
    return env;
  }

  // `script` run by `shell` in a fresh folder, as a pod or a runner would,
  // one process per entry of `envs`, all at once. Returns their results.
  std::vector<util::ProcessResult> run_all(const std::string& name, const std::vector<std::string>& shell,
                                           const std::string& script,
                                           const std::vector<std::map<std::string, std::string>>& envs,
                                           const std::function<std::string(const std::string&)>& prepare = {}) {
    std::vector<std::unique_ptr<util::Subprocess>> procs;
    for (size_t i = 0; i < envs.size(); ++i) {
      util::ProcessOptions o;
      o.argv = shell;
      o.argv.push_back(script);
      o.cwd = tmp / (name + std::to_string(i));
      fs::create_directories(o.cwd);
      if (prepare) o.cwd = prepare(o.cwd);
      for (const auto& [k, v] : env_with_path(envs[i])) o.env[k] = v;
      o.timeout_s = 300;
      o.tail_bytes = 1 << 20;
      procs.push_back(std::make_unique<util::Subprocess>(o));
    }
    std::vector<util::ProcessResult> out;
    for (auto& p : procs) out.push_back(p->wait());
    return out;
  }

  // The remote's branches under `prefix`, name -> sha.
  std::map<std::string, std::string> remote_branches(const std::string& prefix) {
    std::map<std::string, std::string> out;
    // for-each-ref matches whole path components: list them all, keep the prefix.
    for (const auto& l :
         util::split_lines(git(remote, {"for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/"})))
      if (util::starts_with(l, prefix)) out[l.substr(0, l.find(' '))] = l.substr(l.find(' ') + 1);
    return out;
  }

  // What the shards pushed: one branch per task, each one commit whose
  // change leaves the tasks file alone and names its task.
  void expect_task_branches() {
    std::map<std::string, std::string> b = remote_branches("phoenix/task-");
    std::set<std::string> names;
    for (const auto& [name, sha] : b) {
      names.insert(name);
      std::string files = git(remote, {"diff", "--name-only", sha + "^", sha});
      EXPECT_EQ(files.find("TASKS.md"), std::string::npos) << name << ": " << files;
      EXPECT_FALSE(trim(files).empty()) << name;
      std::string id = name.substr(std::string("phoenix/task-").size());
      EXPECT_NE(git(remote, {"log", "-1", "--format=%B", sha}).find("Phoenix-Task: " + id), std::string::npos);
    }
    EXPECT_EQ(names,
              (std::set<std::string>{"phoenix/task-csv", "phoenix/task-schema", "phoenix/task-t1", "phoenix/task-t3",
                                     "phoenix/task-t5", "phoenix/task-t6", "phoenix/task-t7"}));
  }

  // The merged branch on the remote: every task ticked, every file there,
  // and every commit green when checked out on its own and measured.
  void expect_merged(const std::string& branch) {
    std::string tasks = git(remote, {"show", branch + ":TASKS.md"});
    EXPECT_EQ(tasks.find("- [ ]"), std::string::npos) << tasks;
    size_t ticked = 0;
    for (size_t at = tasks.find("- [x]"); at != std::string::npos; at = tasks.find("- [x]", at + 1)) ++ticked;
    EXPECT_EQ(ticked, 7u) << tasks;
    EXPECT_EQ(git(remote, {"show", branch + ":shared.txt"}), "B\n");
    for (const char* f : {"f1.txt", "f2.txt", "f3.txt", "csv.txt", "schema.txt"})
      EXPECT_FALSE(git(remote, {"show", branch + ":" + f}).empty()) << f;
    std::string check = tmp / "check";
    if (!fs::exists(check)) git(tmp.path(), {"clone", "--quiet", remote, check});
    git(check, {"fetch", "--quiet", "origin", "+refs/heads/*:refs/remotes/origin/*"});
    auto shas = util::split_lines(git(check, {"rev-list", head + "..origin/" + branch}));
    EXPECT_EQ(shas.size(), 7u);
    for (size_t i = 0; i < shas.size(); ++i) {
      std::string dir = tmp / ("commit-" + branch.substr(branch.rfind('/') + 1) + "-" + std::to_string(i));
      git(check, {"worktree", "add", "-q", "--detach", dir, shas[i]});
      CliRun s = run_phoenix(dir, {"sense"});
      EXPECT_EQ(s.code, 0) << shas[i] << "\n" << s.out;
    }
  }

  static std::vector<Json> events(const std::string& trace_file, const std::string& event) {
    std::vector<Json> out;
    for (const auto& l : util::split_lines(read(trace_file)))
      if (!l.empty() && Json::parse(l).value("event", "") == event) out.push_back(Json::parse(l)["data"]);
    return out;
  }
};

// The Kubernetes templates as the cluster would run them: three pods of the
// Indexed Job at once (JOB_COMPLETION_INDEX 0..2), then the merge Job. The
// result matches one loop on one machine.
TEST_F(LoopShards, KubernetesIndexedJobThenMergeJobMatchOneMachine) {
  const std::string t = std::string(PHOENIX_SOURCE_DIR) + "/templates/k8s/";
  const std::string shards_yaml = read(t + "phoenix-loop-shards.yaml"),
                    merge_yaml = read(t + "phoenix-loop-merge.yaml");
  EXPECT_NE(shards_yaml.find("completionMode: Indexed"), std::string::npos);
  const int n = yaml_int(shards_yaml, "completions");
  ASSERT_EQ(n, 3);
  ASSERT_EQ(yaml_env_value(shards_yaml, "JOB_COMPLETION_COUNT"), std::to_string(n))
      << "JOB_COMPLETION_COUNT must equal completions";
  EXPECT_EQ(yaml_int(shards_yaml, "parallelism"), n);

  std::vector<std::map<std::string, std::string>> pods;
  for (int i = 0; i < n; ++i)
    pods.push_back({{"JOB_COMPLETION_INDEX", std::to_string(i)},
                    {"JOB_COMPLETION_COUNT", std::to_string(n)},
                    {"REPO_URL", remote},
                    {"REVISION", head}});
  auto shards = run_all("pod-", {"/bin/sh", "-c"}, yaml_block(shards_yaml, "- |", "phoenix-loop"), pods);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(shards[i].exit_code, 0) << shards[i].output;
    EXPECT_NE(shards[i].output.find("shard " + std::to_string(i + 1) + "/3 exited 0"), std::string::npos)
        << shards[i].output;
  }
  expect_task_branches();
  // Each pod worked only on its own tasks.
  std::set<std::string> done;
  for (int i = 0; i < n; ++i)
    for (const auto& e :
         events(tmp / ("pod-" + std::to_string(i)) + "/repo/.phoenix/trace.jsonl", "loop.task_pushed")) {
      EXPECT_TRUE(e["ok"].get<bool>()) << e.dump();
      EXPECT_TRUE(done.insert(e["task"].get<std::string>()).second) << "pushed twice: " << e.dump();
    }
  EXPECT_EQ(done.size(), 7u);

  auto merge = run_all("merge-pod-", {"/bin/sh", "-c"}, yaml_block(merge_yaml, "- |", "phoenix-loop"),
                       {{{"REPO_URL", remote}, {"REVISION", head}}});
  ASSERT_EQ(merge[0].exit_code, 0) << merge[0].output;
  std::map<std::string, std::string> loops = remote_branches("phoenix/loop-");
  ASSERT_EQ(loops.size(), 1u);
  const std::string branch = loops.begin()->first;
  expect_merged(branch);
  // The queue took schema before csv (csv comes first in the file), and the
  // second of A and B conflicted, was redone on the new tip and merged.
  std::vector<Json> merges = events(tmp / "merge-pod-0/repo/.phoenix/trace.jsonl", "loop.merge");
  std::vector<std::string> order;
  for (const auto& m : merges) order.push_back(m["task"].get<std::string>() + ":" + m["result"].get<std::string>());
  EXPECT_EQ(order, (std::vector<std::string>{"t1:merged", "t3:merged", "schema:merged", "csv:merged", "t5:conflict",
                                             "t6:merged", "t7:merged", "t5:merged"}))
      << util::join_argv(order);

  // One machine, one loop, the same tasks file: the same ticks and files.
  std::string one = tmp / "one";
  git(tmp.path(), {"clone", "--quiet", remote, one});
  git(one, {"checkout", "--quiet", "--detach", head});
  auto r = run({PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-one"}, one, {}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(git(one, {"show", "phoenix/loop-one:TASKS.md"}), git(remote, {"show", branch + ":TASKS.md"}));
  auto files = [](const std::string& listing) {
    std::set<std::string> s;
    for (const auto& l : util::split_lines(listing))
      if (!l.empty()) s.insert(l);
    return s;
  };
  EXPECT_EQ(files(git(one, {"ls-tree", "-r", "phoenix/loop-one"})), files(git(remote, {"ls-tree", "-r", branch})));
}

// The GitHub Actions template: the matrix's shard step for shards 1..3,
// each on a runner of its own (a clone checked out at the pushed commit, as
// actions/checkout leaves it), then the merge job's step.
TEST_F(LoopShards, GitHubActionsMatrixThenMergeJob) {
  const std::string yml = read(std::string(PHOENIX_SOURCE_DIR) + "/templates/github/phoenix-loop-shards.yml");
  std::string shard_step = yaml_block(yml, "run: |", "--shard");
  std::string merge_step = yaml_block(yml, "run: |", "--merge");
  ASSERT_NE(yml.find("needs: shard"), std::string::npos);
  ASSERT_NE(yml.find("shard: [1, 2, 3]"), std::string::npos);
  auto checkout = [&](const std::string& dir) {
    std::string repo = dir + "/repo";
    git(dir, {"clone", "--quiet", remote, repo});
    git(repo, {"checkout", "--quiet", "--detach", head});
    return repo;
  };
  std::vector<util::ProcessResult> shards;
  for (int i = 1; i <= 3; ++i) {
    std::string step = util::replace_all(util::replace_all(shard_step, "${{ matrix.shard }}", std::to_string(i)),
                                         "${{ strategy.job-total }}", "3");
    ASSERT_EQ(step.find("${{"), std::string::npos) << step;
    auto r = run_all("runner-" + std::to_string(i) + "-", {"/bin/bash", "-e", "-c"}, step, {{}}, checkout);
    EXPECT_EQ(r[0].exit_code, 0) << r[0].output;
    EXPECT_NE(r[0].output.find("shard " + std::to_string(i) + " exited 0"), std::string::npos) << r[0].output;
  }
  expect_task_branches();
  ASSERT_EQ(merge_step.find("${{"), std::string::npos) << merge_step;
  auto merge = run_all("runner-merge-", {"/bin/bash", "-e", "-c"}, merge_step, {{{"GITHUB_RUN_ID", "4242"}}}, checkout);
  ASSERT_EQ(merge[0].exit_code, 0) << merge[0].output;
  expect_merged("phoenix/loop-4242");
}

// What a merge cannot do it says: a task no shard pushed is named, and the
// rest is merged and pushed all the same (exit 1).
TEST_F(LoopShards, MergeNamesTheTasksNoShardPushed) {
  std::vector<std::map<std::string, std::string>> one_pod = {
      {{"JOB_COMPLETION_INDEX", "0"}, {"JOB_COMPLETION_COUNT", "3"}, {"REPO_URL", remote}, {"REVISION", head}}};
  const std::string t = std::string(PHOENIX_SOURCE_DIR) + "/templates/k8s/";
  auto shard = run_all("pod-", {"/bin/sh", "-c"},
                       yaml_block(read(t + "phoenix-loop-shards.yaml"), "- |", "phoenix-loop"), one_pod);
  ASSERT_EQ(shard[0].exit_code, 0) << shard[0].output;
  // Shard 1 of 3 holds t1 and t5 (groups in file order: t1, {csv, schema}, t3, t5, t6, t7).
  EXPECT_EQ(remote_branches("phoenix/task-").size(), 2u);
  std::string m = tmp / "merge";
  git(tmp.path(), {"clone", "--quiet", remote, m});
  auto r = run({PHOENIX_LOOP_BIN, "--merge", "origin", "--branch", "phoenix/loop-part"}, m, {}, 300);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("5 task(s) not merged"), std::string::npos) << r.output;
  for (const char* id : {"csv", "t3", "schema", "t6", "t7"}) EXPECT_NE(r.output.find(id), std::string::npos) << id;
  std::string tasks = git(remote, {"show", "phoenix/loop-part:TASKS.md"});
  EXPECT_NE(tasks.find("- [x] task 1"), std::string::npos) << tasks;
  EXPECT_NE(tasks.find("- [x] task B"), std::string::npos) << tasks;
  EXPECT_NE(tasks.find("- [ ] task A"), std::string::npos) << tasks;
}

// Bad shard and merge arguments are refused before any branch is made.
TEST_F(LoopShards, BadArgumentsAreRefusedBeforeAnything) {
  struct Case {
    std::vector<std::string> args;
    std::vector<std::pair<std::string, std::string>> env;
    int code;
    std::string said;
  };
  const std::vector<Case> cases = {
      {{"--shard", "4/3"}, {}, 64, "--shard '4/3'"},
      {{"--shard", "two"}, {}, 64, "--shard 'two'"},
      {{"--shard", "1/2", "--workers", "2"}, {}, 64, "one task at a time"},
      {{"--shard", "1/2", "--merge", "origin"}, {}, 64, "exclude each other"},
      {{"--remote", "origin"}, {}, 64, "--remote is where a shard pushes"},
      {{"--shard", "1/2", "--prompt", "TASKS.md"}, {}, 64, "needs a tasks file"},
      {{"--shard", "1/2", "--remote", "nowhere"}, {}, 1, "cannot reach remote 'nowhere'"},
      {{"--merge", "nowhere"}, {}, 1, "cannot reach remote 'nowhere'"},
      {{}, {{"JOB_COMPLETION_INDEX", "1"}}, 64, "JOB_COMPLETION_COUNT is not:"},
      {{}, {{"JOB_COMPLETION_INDEX", "7"}, {"JOB_COMPLETION_COUNT", "3"}}, 64, "JOB_COMPLETION_INDEX '7'"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv{PHOENIX_LOOP_BIN};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    auto r = run(argv, seed, c.env, 60);
    EXPECT_EQ(r.exit_code, c.code) << util::join_argv(argv) << "\n" << r.output;
    EXPECT_NE(r.output.find(c.said), std::string::npos) << util::join_argv(argv) << "\n" << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << "one line: " << r.output;
    EXPECT_TRUE(trim(git(seed, {"branch", "--list", "phoenix/*"})).empty()) << util::join_argv(argv);
  }
}

#endif  // PHOENIX_LOOP_BIN

}  // namespace
}  // namespace phoenix::test
