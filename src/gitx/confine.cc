#include "gitx/confine.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>

#include "gitx/repo.h"
#include "gitx/shared_state.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/format.h"
#include "util/overlay.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace phoenix::gitx {

using namespace internal;

namespace {

std::string canonical(const std::string& p) {
  std::error_code ec;
  std::string out = fs::weakly_canonical(fs::absolute(p, ec), ec).string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

bool inside(const std::string& path, const std::string& dir) {
  return !dir.empty() && (path == dir || util::starts_with(path, dir + "/"));
}

// A folder a confined program sees through an overlay: the repository's
// common dir, or a checkout that is not the program's tree.
struct Root {
  std::string path;
  bool repository = false;
};

// The folder of every linked worktree registered in `common` but `own`
// (their <common>/worktrees/<name>/gitdir names their .git file), by
// admin name.
std::map<std::string, std::string> linked_checkouts(const std::string& common, const std::string& own_git_dir) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(common + "/worktrees", ec), end; !ec && it != end; it.increment(ec)) {
    if (canonical(it->path().string()) == own_git_dir) continue;
    std::optional<std::string> gitdir = util::read_file_if_exists(it->path().string() + "/gitdir");
    if (!gitdir) continue;
    const std::string dot_git = util::trim(*gitdir);
    if (dot_git.empty()) continue;
    const std::string folder = canonical(fs::path(dot_git).parent_path().string());
    std::error_code dec;
    if (fs::is_directory(folder, dec)) out[it->path().filename().string()] = folder;
  }
  return out;
}

// A ref file's value as the guard keeps it ("sym:<target>" or a sha); ""
// when it is not a ref.
std::string loose_value(const std::string& file) {
  std::optional<std::string> text = util::read_file_if_exists(file);
  if (!text) return "";
  const std::string v = util::trim(*text);
  if (util::starts_with(v, "ref: ")) return "sym:" + util::trim(v.substr(5));
  if ((v.size() == 40 || v.size() == 64) && v.find_first_not_of("0123456789abcdef") == std::string::npos) return v;
  return "";
}

bool is_regular(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool whiteout_at(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && util::is_whiteout(st);
}

std::map<std::string, std::string> parse_packed(const std::string& file) {
  std::map<std::string, std::string> out;
  std::optional<std::string> text = util::read_file_if_exists(file);
  if (!text) return out;
  for (const std::string& line : util::split_lines(*text)) {
    if (line.empty() || line[0] == '#' || line[0] == '^') continue;
    const size_t sp = line.find(' ');
    if (sp != std::string::npos) out[util::trim(line.substr(sp + 1))] = line.substr(0, sp);
  }
  return out;
}

// Entries of an upper layer, relative to it, sorted: files and links
// written, whiteouts (deleted), and folders that replaced a deleted one
// (opaque) or are new.
struct UpperEntry {
  std::string rel;
  enum class What { kWritten, kDeleted, kReplacedFolder, kNewFolder } what;
};

std::vector<UpperEntry> read_upper(const std::string& upper, const std::string& real) {
  std::vector<UpperEntry> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(upper, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const std::string path = it->path().string();
    const std::string rel = path.substr(upper.size() + 1);
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) continue;
    if (util::is_whiteout(st)) {
      out.push_back({rel, UpperEntry::What::kDeleted});
    } else if (S_ISDIR(st.st_mode)) {
      std::error_code dec;
      if (util::is_opaque(path)) out.push_back({rel, UpperEntry::What::kReplacedFolder});
      else if (!fs::exists(real + "/" + rel, dec) && fs::is_empty(path, dec))
        out.push_back({rel, UpperEntry::What::kNewFolder});
    } else {
      out.push_back({rel, UpperEntry::What::kWritten});
    }
  }
  std::sort(out.begin(), out.end(), [](const UpperEntry& a, const UpperEntry& b) { return a.rel < b.rel; });
  return out;
}

}  // namespace

struct TreeConfinement::Plan {
  std::string tree, git_dir, common, checkout;  // checkout: the main work tree ("" when bare)
  std::map<std::string, std::string> others;    // other linked checkouts, by admin name
  std::vector<Root> roots;                      // outer first
  std::vector<std::string> holes;               // real inside an overlay
  std::string tmp;

  // The innermost root holding `path` (not equal to it), or -1.
  int root_of(const std::string& path) const {
    int best = -1;
    for (size_t i = 0; i < roots.size(); ++i)
      if (path != roots[i].path && inside(path, roots[i].path) &&
          (best < 0 || roots[i].path.size() > roots[static_cast<size_t>(best)].path.size()))
        best = static_cast<int>(i);
    return best;
  }
};

TreeConfinement::TreeConfinement(std::unique_ptr<Plan> p) : plan_(std::move(p)) {}
TreeConfinement::TreeConfinement(TreeConfinement&&) noexcept = default;
TreeConfinement& TreeConfinement::operator=(TreeConfinement&&) noexcept = default;
TreeConfinement::~TreeConfinement() = default;

const std::string& TreeConfinement::tree() const { return plan_->tree; }

std::vector<std::string> TreeConfinement::overlaid() const {
  std::vector<std::string> out;
  for (const Root& r : plan_->roots) out.push_back(r.path);
  return out;
}

TreeConfinement TreeConfinement::plan(const std::string& tree, const std::string& runs_in) {
  auto p = std::make_unique<Plan>();
  {
    const Repo r = Repo::open(tree);
    p->git_dir = canonical(r.git_dir());
    p->common = canonical(r.common_dir());
    p->tree = r.workdir().empty() ? "" : canonical(r.workdir());
  }
  if (!runs_in.empty()) {
    // Not the repository's: a folder of its own whose files alone are the programs'.
    p->tree = canonical(runs_in);
    p->git_dir.clear();
  } else if (p->tree.empty() || p->git_dir == p->common) {
    throw Error(tree + " is not a linked worktree");
  }
  try {
    const std::string main = Repo::open(p->common).workdir();
    if (!main.empty()) p->checkout = canonical(main);
  } catch (const Error&) {}
  p->others = linked_checkouts(p->common, p->git_dir.empty() ? p->tree : p->git_dir);
  std::vector<Root> roots{{p->common, true}};
  if (!p->checkout.empty() && p->checkout != p->tree) roots.push_back({p->checkout, false});
  for (const auto& kv : p->others)
    if (kv.second != p->tree && !inside(kv.second, p->tree)) roots.push_back({kv.second, false});
  std::sort(roots.begin(), roots.end(), [](const Root& a, const Root& b) {
    return a.path.size() != b.path.size() ? a.path.size() < b.path.size() : a.path < b.path;
  });
  roots.erase(std::unique(roots.begin(), roots.end(), [](const Root& a, const Root& b) { return a.path == b.path; }),
              roots.end());
  p->roots = std::move(roots);
  p->holes = {p->tree};
  if (!p->git_dir.empty()) p->holes.insert(p->holes.begin(), {p->git_dir, p->common + "/objects"});
  // git-lfs keeps its objects beside git's, content-addressed like them.
  std::error_code lfs_ec;
  if (!p->git_dir.empty() && fs::is_directory(p->common + "/lfs", lfs_ec)) p->holes.push_back(p->common + "/lfs");

  if (std::string why = util::overlay_unavailable_reason(); !why.empty()) throw Error(why);
  std::error_code ec;
  p->tmp = canonical(fs::temp_directory_path(ec).string());
  if (ec) throw Error("no temporary folder for the overlays' layers: " + ec.message());
  for (const Root& r : p->roots) {
    if (inside(p->tmp, r.path)) throw Error("the temporary folder " + p->tmp + " is inside " + r.path);
    if (std::string why = util::unmountable_path(r.path); !why.empty()) throw Error(why);
  }
  for (const std::string& h : p->holes)
    if (std::string why = util::unmountable_path(h); !why.empty()) throw Error(why);
  if (std::string why = util::unmountable_path(p->tmp); !why.empty()) throw Error(why);
  return TreeConfinement(std::move(p));
}

util::ChildNamespace TreeConfinement::child(std::string& layers) const {
  const Plan& p = *plan_;
  std::string tmpl = p.tmp + "/phoenix-confine-XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw_errno("cannot create a folder in " + p.tmp);
  layers = tmpl;
  util::ChildNamespace ns;
  auto layer = [&](size_t i, char kind) { return layers + "/" + kind + std::to_string(i); };
  for (size_t i = 0; i < p.roots.size(); ++i) {
    for (char kind : {'s', 'u', 'w'}) {
      std::error_code ec;
      fs::create_directory(layer(i, kind), ec);
      if (ec) throw Error("cannot create " + layer(i, kind) + ": " + ec.message());
    }
    // The real folder, kept reachable once the overlay covers its path.
    ns.mounts.push_back({p.roots[i].path, layer(i, 's'), "", "", false});
  }
  for (size_t i = 0; i < p.roots.size(); ++i)
    ns.mounts.push_back({"overlay", p.roots[i].path, "overlay",
                         util::overlay_options(layer(i, 's'), layer(i, 'u'), layer(i, 'w')), false});
  for (const std::string& hole : p.holes) {
    const int i = p.root_of(hole);
    if (i < 0) continue;
    const Root& r = p.roots[static_cast<size_t>(i)];
    ns.mounts.push_back({layer(static_cast<size_t>(i), 's') + hole.substr(r.path.size()), hole, "", "", false});
  }
  return ns;
}

namespace {

// What a program changed of the repository's shared state, from the upper
// layer over its common dir.
class RepositoryReader {
 public:
  RepositoryReader(const TreeConfinement::Plan& p, const std::string& upper, const std::string& who,
                   const std::vector<std::string>& exempt)
      : p_(p), upper_(upper), who_(who), exempt_(exempt) {}

  std::vector<std::string> lines() {
    config();
    hooks();
    heads_and_indexes();
    refs();
    return std::move(out_);
  }

 private:
  const TreeConfinement::Plan& p_;
  const std::string upper_, who_;
  const std::vector<std::string>& exempt_;
  std::vector<std::string> out_;

  void config() {
    const std::string real = p_.common + "/config";
    if (whiteout_at(upper_ + "/config")) out_.push_back(who_ + " deleted " + real + "; put back");
    if (!is_regular(upper_ + "/config")) return;
    if (util::read_file_if_exists(upper_ + "/config") == util::read_file_if_exists(real)) return;
    for (const std::string& l :
         config_changes(read_config_entries(real), read_config_entries(upper_ + "/config"), who_, real))
      out_.push_back(l + "; put back");
  }

  void hooks() {
    const std::string dir = upper_ + "/hooks";
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0) return;
    std::set<std::string> names;
    std::error_code ec;
    const bool replaced = util::is_whiteout(st) || (S_ISDIR(st.st_mode) && util::is_opaque(dir));
    for (fs::directory_iterator it(p_.common + "/hooks", ec), end; replaced && !ec && it != end; it.increment(ec))
      names.insert(it->path().filename().string());
    for (fs::directory_iterator it(dir, ec), end; S_ISDIR(st.st_mode) && !ec && it != end; it.increment(ec))
      names.insert(it->path().filename().string());
    for (const std::string& n : names) {
      const std::string real = p_.common + "/hooks/" + n;
      const FileSnap was = snap(real);
      const bool deleted = whiteout_at(dir + "/" + n) || (replaced && !snap(dir + "/" + n).exists);
      const FileSnap is = deleted ? FileSnap{} : snap(dir + "/" + n);
      if (!deleted && !is.exists) continue;  // a folder
      if (was == is) continue;
      out_.push_back(!was.exists  ? who_ + " wrote hook " + real + "; removed"
                     : !is.exists ? who_ + " deleted hook " + real + "; put back"
                                  : who_ + " changed hook " + real + "; put back");
    }
  }

  void index_of(const std::string& upper_index, const std::string& real_index, const std::string& checkout) {
    if (!is_regular(upper_index)) return;
    const size_t n = entries_differing(read_index_entries(real_index), read_index_entries(upper_index));
    if (n != 0)
      out_.push_back(who_ + " changed the index of " + checkout + " (" + util::plural(n, "entry", "entries") +
                     "); put back");
  }

  void heads_and_indexes() {
    if (is_regular(upper_ + "/HEAD") &&
        util::read_file_if_exists(upper_ + "/HEAD") != util::read_file_if_exists(p_.common + "/HEAD"))
      out_.push_back(who_ + " changed the checkout's HEAD to " +
                     util::trim(util::read_file_if_exists(upper_ + "/HEAD").value_or("")) + "; put back");
    if (!p_.checkout.empty()) index_of(upper_ + "/index", p_.common + "/index", p_.checkout);
    for (const auto& [name, folder] : p_.others) {
      const std::string up = upper_ + "/worktrees/" + name, real = p_.common + "/worktrees/" + name;
      if (is_regular(up + "/HEAD") &&
          util::read_file_if_exists(up + "/HEAD") != util::read_file_if_exists(real + "/HEAD"))
        out_.push_back(who_ + " changed the HEAD of the checkout " + folder + " to " +
                       util::trim(util::read_file_if_exists(up + "/HEAD").value_or("")) + "; put back");
      index_of(up + "/index", real + "/index", folder);
    }
  }

  void refs() {
    const std::map<std::string, std::string> real_packed = parse_packed(p_.common + "/packed-refs");
    const std::map<std::string, std::string> child_packed =
        is_regular(upper_ + "/packed-refs")    ? parse_packed(upper_ + "/packed-refs")
        : whiteout_at(upper_ + "/packed-refs") ? std::map<std::string, std::string>{}
                                               : real_packed;
    std::map<std::string, std::string> loose;  // written by the program
    std::set<std::string> gone;                // loose refs it deleted (or hid under a replaced folder)
    for (const UpperEntry& e : read_upper(upper_ + "/refs", p_.common + "/refs")) {
      const std::string name = "refs/" + e.rel;
      if (e.what == UpperEntry::What::kWritten) loose[name] = loose_value(upper_ + "/" + name);
      else if (e.what == UpperEntry::What::kDeleted) gone.insert(name);
      else if (e.what == UpperEntry::What::kReplacedFolder) hidden_below(name, gone);
    }
    std::set<std::string> touched(gone);
    for (const auto& kv : loose) touched.insert(kv.first);
    for (const auto& kv : real_packed)
      if (child_packed.count(kv.first) == 0 || child_packed.at(kv.first) != kv.second) touched.insert(kv.first);
    for (const auto& kv : child_packed)
      if (real_packed.count(kv.first) == 0) touched.insert(kv.first);
    auto packed = [](const std::map<std::string, std::string>& m, const std::string& n) {
      auto it = m.find(n);
      return it == m.end() ? std::string() : it->second;
    };
    for (const std::string& n : touched) {
      if (has_prefix(n, exempt_)) continue;
      const std::string real_loose = loose_value(p_.common + "/" + n);
      const std::string was = !real_loose.empty() ? real_loose : packed(real_packed, n);
      const std::string is = loose.count(n)                        ? loose.at(n)
                             : gone.count(n) || real_loose.empty() ? packed(child_packed, n)
                                                                   : real_loose;
      if (was == is) continue;
      out_.push_back(ref_change(who_, n, was, is) + (was.empty() ? "; removed" : "; put back"));
    }
  }

  // Every real loose ref below `folder` (a folder the program replaced).
  void hidden_below(const std::string& folder, std::set<std::string>& gone) const {
    std::error_code ec;
    const std::string real = p_.common + "/" + folder;
    for (auto it = fs::recursive_directory_iterator(real, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec))
      if (it->is_regular_file(ec)) gone.insert(folder + "/" + it->path().string().substr(real.size() + 1));
  }
};

// The files a program wrote in a checkout not its own, as one line.
std::string checkout_line(const std::vector<UpperEntry>& entries, const std::string& who, const std::string& folder) {
  std::vector<std::string> names;
  for (const UpperEntry& e : entries) {
    if (e.what == UpperEntry::What::kDeleted && !fs::exists(fs::symlink_status(folder + "/" + e.rel))) continue;
    names.push_back(e.rel + (e.what == UpperEntry::What::kDeleted ? " (deleted)" : ""));
  }
  if (names.empty()) return "";
  std::string shown;
  for (size_t i = 0; i < names.size() && i < 3; ++i) shown += (i ? ", " : "") + names[i];
  if (names.size() > 3) shown += " and " + std::to_string(names.size() - 3) + " more";
  return who + " wrote " + shown + " in the checkout " + folder + ", not its own tree; kept out";
}

}  // namespace

TreeConfinement::Found TreeConfinement::read_back(const std::string& layers, const std::string& who,
                                                  const std::vector<std::string>& exempt_ref_prefixes) const {
  Found found;
  const Plan& p = *plan_;
  for (size_t i = 0; i < p.roots.size(); ++i) {
    const std::string upper = layers + "/u" + std::to_string(i);
    try {
      if (p.roots[i].repository) {
        for (std::string& l : RepositoryReader(p, upper, who, exempt_ref_prefixes).lines())
          found.repository.push_back(std::move(l));
      } else if (std::string l = checkout_line(read_upper(upper, p.roots[i].path), who, p.roots[i].path); !l.empty()) {
        found.checkouts.push_back(std::move(l));
      }
    } catch (const std::exception& e) {
      found.repository.push_back(who + ": what it wrote in " + p.roots[i].path + " could not be read: " + e.what());
    }
  }
  util::make_tree_writable(layers);
  std::error_code ec;
  fs::remove_all(layers, ec);
  return found;
}

}  // namespace phoenix::gitx
