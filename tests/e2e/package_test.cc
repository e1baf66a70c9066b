// End-to-end: what a user installs. `cpack -G DEB` builds the .deb from the
// build tree; it is unpacked with `dpkg-deb -x` into a throwaway root and run
// from there (no root, nothing installed on the machine); its Depends are
// checked against the libraries the packaged binaries really link.
// `cmake --install --prefix` is tested the same way. The real
// `apt-get install ./phoenix_*.deb` runs only with PHOENIX_TEST_INSTALL_DEB=1
// (scripts/test.sh sets it when CI=true), because it changes the machine.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <regex>
#include <set>
#include <utility>

#include "test_util.h"
#include "util/json.h"
#include "util/text.h"

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;

std::string build_dir() { return fs::path(phoenix_bin()).parent_path().string(); }

// A repository with one green check, as a newcomer's first one.
std::string green_repo(const std::string& dir) {
  std::string repo = init_repo(dir);
  write(repo, "phoenix.json", R"({ "checks": [{ "id": "unit", "kind": "command_exit", "target": ["true"] }] })");
  write(repo, ".gitignore", ".phoenix/\n");
  commit_all(repo, "initial");
  return repo;
}

// The package owning a shared library the binary needs, by `dpkg -S`.
std::string owner_package(const std::string& soname) {
  auto ld = run({"sh", "-c", "ldconfig -p | awk -v l=\"$1\" '$1==l {print $NF; exit}'", "sh", soname});
  std::string path = util::trim(ld.output);
  if (path.empty()) return "";
  // dpkg knows a file by the path its package ships (/lib/... or /usr/lib/...
  // on a merged /usr): try the path ldconfig gives, its target, and both
  // with and without /usr.
  std::string real = util::trim(run({"readlink", "-f", path}).output);
  std::vector<std::string> tries{path, real};
  for (const std::string& p : std::vector<std::string>{path, real}) {
    if (util::starts_with(p, "/usr/")) tries.push_back(p.substr(4));
    else tries.push_back("/usr" + p);
  }
  for (const auto& t : tries) {
    auto s = run({"dpkg", "-S", t});
    if (s.exit_code == 0) return util::trim(s.output.substr(0, s.output.find(':')));
  }
  return "";
}

class PackageDeb : public ::testing::Test {
 protected:
  // One cpack run for the suite: it is the slow part.
  static void SetUpTestSuite() {
    out_ = new ScopedTempDir();
    if (util::find_executable("cpack").empty() || util::find_executable("dpkg-deb").empty()) return;
    // Under ctest the fixture PackageDebBuild made it (tests/CMakeLists.txt).
    const char* fixture = std::getenv("PHOENIX_TEST_DEB_DIR");
    std::string made = fixture ? fixture : "";
    if (made.empty()) {
      made = out_->path();
      cpack_ = run({"cpack", "-G", "DEB", "--config", build_dir() + "/CPackConfig.cmake", "-B", made}, build_dir(),
                   {}, 300);
    } else {
      cpack_.output = "the fixture PackageDebBuild wrote no .deb into " + made;
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(made, ec))
      if (e.path().extension() == ".deb") deb_ = e.path().string();
    if (!deb_.empty()) {
      root_ = out_->path() + "/root";
      fs::create_directories(root_);
      extract_ = run({"dpkg-deb", "-x", deb_, root_});
    }
  }
  static void TearDownTestSuite() {
    delete out_;
    out_ = nullptr;
  }
  void SetUp() override {
    if (util::find_executable("cpack").empty() || util::find_executable("dpkg-deb").empty())
      GTEST_SKIP() << "cpack or dpkg-deb is not installed (cmake, dpkg)";
    ASSERT_FALSE(deb_.empty()) << "cpack wrote no .deb:\n" << cpack_.output;
    ASSERT_EQ(extract_.exit_code, 0) << extract_.output;
  }
  static std::string field(const std::string& info, const std::string& name) {
    for (const auto& l : util::split_lines(info)) {
      std::string t = util::trim(l);
      if (util::starts_with(t, name + ":")) return util::trim(t.substr(name.size() + 1));
    }
    return "";
  }

  static inline ScopedTempDir* out_ = nullptr;
  static inline util::ProcessResult cpack_, extract_;
  static inline std::string deb_, root_;
  ScopedTempDir tmp;
};

TEST_F(PackageDeb, IsNamedAndDescribedLikeADebianPackage) {
  EXPECT_TRUE(
      std::regex_match(fs::path(deb_).filename().string(), std::regex(R"(phoenix_\d+\.\d+\.\d+_[a-z0-9]+\.deb)")))
      << deb_;
  auto info = run({"dpkg-deb", "-I", deb_});
  ASSERT_EQ(info.exit_code, 0) << info.output;
  EXPECT_EQ(field(info.output, "Package"), "phoenix");
  EXPECT_EQ(field(info.output, "Version"), PHOENIX_VERSION);
  EXPECT_FALSE(field(info.output, "Maintainer").empty());
  EXPECT_NE(field(info.output, "Recommends").find("git"), std::string::npos);
}

// A program linked fully statically (-DPHOENIX_STATIC_GLIBC=ON) has no
// dynamic section and needs no package; every library a dynamically linked
// one needs (by default glibc's, and with -DPHOENIX_STATIC_DEPS=OFF the
// others too) must come from a package in Depends.
TEST_F(PackageDeb, DependsOnThePackageOfEveryLibraryTheBinariesLink) {
  std::string depends = field(run({"dpkg-deb", "-I", deb_}).output, "Depends");
  std::set<std::string> needed;
  int checked = 0;
  for (std::string bin : {"phoenix", "phoenix-loop", "phoenix-hook"}) {
    std::string path = root_ + "/usr/bin/" + bin;
    if (!fs::exists(path)) continue;
    auto od = run({"objdump", "-p", path});
    ASSERT_EQ(od.exit_code, 0) << od.output;
    ++checked;
    std::string text = od.output;
    std::regex re(R"(NEEDED\s+(\S+))");
    int own = 0;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it, ++own)
      needed.insert((*it)[1].str());
    bool dynamic = text.find("Dynamic Section") != std::string::npos;
    if (dynamic) EXPECT_GT(own, 0) << bin << " is linked dynamically, but no NEEDED entry was read:\n" << text;
    if (bin == "phoenix" && dynamic && text.find("libgit2") != std::string::npos)
      for (const char* must : {"libgit2-1.5", "libboost-program-options1.74.0", "libsqlite3-0", "libssl3"})
        EXPECT_NE(depends.find(must), std::string::npos) << must << " not in " << depends;
  }
  ASSERT_EQ(checked, 3) << "the package lacks one of the programs";
  if (!needed.empty()) ASSERT_FALSE(depends.empty());
  for (const auto& lib : needed) {
    std::string pkg = owner_package(lib);
    ASSERT_FALSE(pkg.empty()) << "no Debian package owns " << lib;
    // libc6 provides libc/libm; the others by name (e.g. libgit2-1.5).
    EXPECT_TRUE(std::regex_search(
        depends, std::regex("(^|, )" + std::regex_replace(pkg, std::regex(R"([.+])"), R"(\$&)") + R"(( \(|,|$))")))
        << lib << " comes from " << pkg << ", missing from Depends: " << depends;
  }
}

// "GLIBC_2.34" -> {2, 34}; a version that is not two numbers -> {0, 0}.
std::pair<int, int> glibc_version(const std::string& text) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(R"((\d+)\.(\d+))"))) return {0, 0};
  return {std::stoi(m[1].str()), std::stoi(m[2].str())};
}

// The packaged programs link the C library as the build was configured:
// fully statically with PHOENIX_STATIC_GLIBC=ON; by default dynamically,
// with libstdc++ and libgcc linked in, and (where the static archives of
// the other libraries were linked: phoenix does not need libgit2) no shared
// library but glibc's. phoenix-hook, which calls no NSS function, is fully
// static by default too (PHOENIX_HOOK_STATIC), where a static program links
// and the build has no sanitizers.
TEST_F(PackageDeb, ProgramsLinkTheCLibraryAsConfigured) {
  std::string cache = read(build_dir() + "/CMakeCache.txt");
  const auto set = [&](const std::string& entry) { return cache.find(entry) != std::string::npos; };
  const bool static_glibc = set("PHOENIX_STATIC_GLIBC:BOOL=ON");
  const bool static_hook = set("PHOENIX_HOOK_STATIC:BOOL=ON") && set("PHOENIX_HOOK_CAN_LINK_STATIC:INTERNAL=1") &&
                           !set("PHOENIX_SANITIZE:BOOL=ON") && !set("PHOENIX_FUZZ:BOOL=ON");
  for (std::string bin : {"phoenix", "phoenix-loop", "phoenix-hook"}) {
    auto od = run({"objdump", "-p", root_ + "/usr/bin/" + bin});
    ASSERT_EQ(od.exit_code, 0) << od.output;
    std::set<std::string> needed;
    std::regex re(R"(NEEDED\s+(\S+))");
    for (auto it = std::sregex_iterator(od.output.begin(), od.output.end(), re); it != std::sregex_iterator(); ++it)
      needed.insert((*it)[1].str());
    if (static_glibc || (bin == "phoenix-hook" && static_hook)) {
      if (bin == "phoenix-hook" || !needed.count("libgit2.so.1.5"))
        EXPECT_TRUE(needed.empty()) << bin << " is to be linked fully statically but needs " << od.output;
      continue;
    }
    EXPECT_TRUE(needed.count("libc.so.6")) << bin << " does not link glibc dynamically:\n" << od.output;
    EXPECT_FALSE(needed.count("libstdc++.so.6")) << bin << " loads libstdc++ instead of linking it in";
    EXPECT_FALSE(needed.count("libgcc_s.so.1")) << bin << " loads libgcc_s instead of linking it in";
    if (bin == "phoenix-hook" || !needed.count("libgit2.so.1.5"))
      for (const auto& lib : needed) EXPECT_EQ(owner_package(lib), "libc6") << bin << " needs " << lib;
  }
}

// A program linked against glibc needs libc6 at least as new as the newest
// GLIBC_x.y symbol version it uses, and no newer than the glibc it was
// built with.
TEST_F(PackageDeb, DependsOnALibc6AsNewAsTheGlibcSymbolsTheProgramsUse) {
  std::pair<int, int> newest{0, 0};
  for (std::string bin : {"phoenix", "phoenix-loop", "phoenix-hook"}) {
    auto od = run({"objdump", "-T", root_ + "/usr/bin/" + bin});
    if (od.exit_code != 0) continue;  // no dynamic symbol table: linked statically
    std::regex re(R"(\bGLIBC_(\d+\.\d+))");
    for (auto it = std::sregex_iterator(od.output.begin(), od.output.end(), re); it != std::sregex_iterator(); ++it)
      newest = std::max(newest, glibc_version((*it)[1].str()));
  }
  std::string depends = field(run({"dpkg-deb", "-I", deb_}).output, "Depends");
  if (newest == std::pair<int, int>{0, 0}) {
    EXPECT_EQ(depends.find("libc6"), std::string::npos) << "nothing links glibc dynamically, yet: " << depends;
    return;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(depends, m, std::regex(R"((^|, )libc6 \(>= ([0-9.]+)\))")))
      << "Depends names no libc6 with a version: " << depends;
  auto bound = glibc_version(m[2].str());
  EXPECT_GE(bound, newest) << depends << " but the programs use GLIBC_" << newest.first << "." << newest.second;
  auto built = glibc_version(run({"getconf", "GNU_LIBC_VERSION"}).output);
  if (built != std::pair<int, int>{0, 0}) EXPECT_LE(bound, built) << depends;
}

TEST_F(PackageDeb, CarriesBinariesTemplatesHooksManPagesAndCompletions) {
  for (const char* f :
       {"usr/bin/phoenix", "usr/bin/phoenix-loop", "usr/bin/phoenix-hook", "usr/share/phoenix/templates/prompt.md",
        "usr/share/phoenix/templates/phoenix.schema.json", "usr/share/phoenix/hooks/pre-push.in",
        "usr/share/man/man1/phoenix.1", "usr/share/man/man1/phoenix-loop.1", "usr/share/man/man5/phoenix.json.5",
        "usr/share/bash-completion/completions/phoenix", "usr/share/bash-completion/completions/phoenix-loop",
        "usr/share/zsh/vendor-completions/_phoenix", "usr/share/doc/phoenix/README.md"})
    EXPECT_TRUE(fs::exists(root_ + "/" + f)) << f;
  EXPECT_TRUE((fs::status(root_ + "/usr/bin/phoenix").permissions() & fs::perms::others_exec) != fs::perms::none);
}

TEST_F(PackageDeb, UnpackedBinaryRunsAGreenSenseAndInstallsTheHookFromItsOwnShare) {
  std::string bin = root_ + "/usr/bin/phoenix";
  auto v = run({bin, "--version"});
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_EQ(util::trim(v.output), std::string("phoenix ") + PHOENIX_VERSION);
  std::string repo = green_repo(tmp / "repo");
  auto s = run({bin, "sense"}, repo);
  EXPECT_EQ(s.exit_code, 0) << s.output;
  auto h = run({bin, "hook", "install"}, repo);
  EXPECT_EQ(h.exit_code, 0) << h.output;
  std::string shim = read(repo + "/.git/hooks/pre-push");
  EXPECT_NE(shim.find(fs::canonical(bin).string()), std::string::npos) << shim;
  auto d = run({bin, "doctor", "--json"}, repo);
  auto j = util::Json::parse(d.output.substr(d.output.find('{')));
  EXPECT_EQ(j["items"][0]["data"]["templates"], fs::canonical(root_ + "/usr/share/phoenix/templates").string())
      << d.output;
  if (fs::exists(root_ + "/usr/bin/phoenix-loop")) {
    auto lv = run({root_ + "/usr/bin/phoenix-loop", "--version"});
    EXPECT_EQ(util::trim(lv.output), std::string("phoenix-loop ") + PHOENIX_VERSION);
  }
}

TEST_F(PackageDeb, ManPagesRenderWithoutWarnings) {
  if (util::find_executable("groff").empty()) GTEST_SKIP() << "groff is not installed";
  for (const char* page : {"man1/phoenix.1", "man1/phoenix-loop.1", "man5/phoenix.json.5"}) {
    auto g = run({"groff", "-man", "-Tutf8", "-ww", "-z", root_ + "/usr/share/man/" + page});
    EXPECT_EQ(g.exit_code, 0) << page << g.output;
    EXPECT_EQ(g.output, "") << page;
  }
}

// The real thing, on this machine: apt resolves Depends from the installed
// packages, /usr/bin/phoenix runs, and the package is removed again.
TEST_F(PackageDeb, AptGetInstallsItWhenAsked) {
  const char* on = std::getenv("PHOENIX_TEST_INSTALL_DEB");
  if (!on || std::string(on) != "1")
    GTEST_SKIP() << "installs into the machine: set PHOENIX_TEST_INSTALL_DEB=1 (scripts/test.sh does when CI=true)";
  if (run({"dpkg-query", "-W", "phoenix"}).exit_code == 0)
    GTEST_SKIP() << "a phoenix package is already installed; not replacing it";
  std::vector<std::string> sudo;
  if (::geteuid() != 0) sudo = {"sudo", "-n"};
  auto cmd = [&](std::vector<std::string> argv) {
    argv.insert(argv.begin(), sudo.begin(), sudo.end());
    return run(argv, "", {{"DEBIAN_FRONTEND", "noninteractive"}}, 300);
  };
  std::string local = tmp / fs::path(deb_).filename().string();
  fs::copy_file(deb_, local);
  fs::permissions(tmp.path(), fs::perms::others_exec | fs::perms::others_read, fs::perm_options::add);
  auto inst = cmd({"apt-get", "install", "-y", "--no-install-recommends", local});
  ASSERT_EQ(inst.exit_code, 0) << inst.output;
  auto v = run({"/usr/bin/phoenix", "--version"});
  std::string repo = green_repo(tmp / "repo");
  auto s = run({"/usr/bin/phoenix", "sense"}, repo);
  auto m = run({"man", "-w", "phoenix"});
  auto rm = cmd({"apt-get", "remove", "-y", "phoenix"});
  EXPECT_EQ(util::trim(v.output), std::string("phoenix ") + PHOENIX_VERSION);
  EXPECT_EQ(s.exit_code, 0) << s.output;
  EXPECT_EQ(m.exit_code, 0) << m.output;
  EXPECT_EQ(rm.exit_code, 0) << rm.output;
  EXPECT_FALSE(fs::exists("/usr/bin/phoenix"));
}

TEST(PackageInstall, CmakeInstallPrefixGivesAWorkingTree) {
  ScopedTempDir tmp;
  std::string prefix = tmp / "prefix";
  auto inst = run({"cmake", "--install", build_dir(), "--prefix", prefix}, "", {}, 300);
  ASSERT_EQ(inst.exit_code, 0) << inst.output;
  for (const char* f : {"bin/phoenix", "share/phoenix/templates/prompt.md", "share/phoenix/hooks/pre-push.in",
                        "share/man/man1/phoenix.1", "share/man/man5/phoenix.json.5",
                        "share/bash-completion/completions/phoenix", "share/zsh/vendor-completions/_phoenix"})
    EXPECT_TRUE(fs::exists(prefix + "/" + f)) << f;
  std::string bin = prefix + "/bin/phoenix";
  EXPECT_EQ(util::trim(run({bin, "--version"}).output), std::string("phoenix ") + PHOENIX_VERSION);
  std::string repo = green_repo(tmp / "repo");
  auto s = run({bin, "sense"}, repo);
  EXPECT_EQ(s.exit_code, 0) << s.output;
  auto d = run({bin, "doctor", "--json"}, repo);
  auto j = util::Json::parse(d.output.substr(d.output.find('{')));
  EXPECT_EQ(j["items"][0]["data"]["templates"], fs::canonical(prefix + "/share/phoenix/templates").string());
  // The installed bash completion works with the installed binary.
  auto c = run({"bash", "--norc", "--noprofile", "-c",
                "source \"$1\"; COMP_WORDS=(phoenix doc); COMP_CWORD=1; _phoenix; echo \"${COMPREPLY[*]}\"", "bash",
                prefix + "/share/bash-completion/completions/phoenix"},
               repo, {{"PATH", prefix + "/bin:" + std::string(std::getenv("PATH"))}});
  EXPECT_EQ(util::trim(c.output), "doctor");
}

}  // namespace
}  // namespace phoenix::test
