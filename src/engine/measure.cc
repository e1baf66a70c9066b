// Measuring through the store: see engine/measure.h.
#include "engine/measure.h"

#include <algorithm>
#include <filesystem>

#include "gitx/repo.h"
#include "layout/paths.h"
#include "setup/setup.h"
#include "engine/verdict.h"
#include "trace/trace.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::engine {

namespace fs = std::filesystem;

bool no_cache(bool flag) { return flag || checks::cache_disabled_by_env(); }

std::string store_dir(const gitx::Repo& repo, const std::string& root) {
  const fs::path common = fs::path(repo.common_dir()).lexically_normal();
  const fs::path main = (common.filename().empty() ? common.parent_path() : common);
  if (main.filename() == ".git" && fs::is_directory(main.parent_path() / layout::kStateDirName))
    return layout::measured_dir(main.parent_path().string());
  return layout::measured_dir(root);
}

StoreUse::StoreUse(const gitx::Repo& repo, const std::string& root, const config::Config& cfg, std::string where,
                   bool enabled, trace::Trace* trace)
    : root_(root), dir_(store_dir(repo, root)), cfg_(cfg), where_(std::move(where)), trace_(trace) {
  if (!enabled) return;
  try {
    const std::string head = repo.head_sha();
    if (head.empty() || !repo.tracked_clean(layout::keep_prefixes()) ||
        !repo.untracked_files(layout::keep_prefixes()).empty())
      return;
    tree_ = repo.tree_of(head);
    checks::remember_tree(dir_, head, tree_);  // a later push of this commit keys it without git
  } catch (const std::exception&) {
    tree_.clear();  // what git cannot say is not keyed
  }
}

StoreUse::StoreUse(const gitx::Repo& repo, const std::string& root, const config::Config& cfg, std::string where,
                   bool enabled, trace::Trace* trace, std::string tree)
    : root_(root), dir_(store_dir(repo, root)), cfg_(cfg), where_(std::move(where)), trace_(trace) {
  if (enabled) tree_ = std::move(tree);
}

const std::string& StoreUse::setup_fingerprint() {
  if (!setup_) setup_ = cfg_.setup.empty() ? std::string() : setup::fingerprint(cfg_.setup, root_);
  return *setup_;
}

long long StoreUse::traced(const std::string& event, const util::Json& data) {
  if (!trace_) return -1;
  try {
    return static_cast<long long>(trace_->append(event, data, false));
  } catch (const Error&) {
    // Like the store itself, best effort: a read-only state folder or a full
    // disk leaves the measurement standing without its trace line.
    return -1;
  }
}

checks::SenseResult StoreUse::sense(const checks::CheckSpec& spec, const std::function<checks::SenseResult()>& fresh) {
  if (!keyed() || !checks::cache_wanted(spec)) return fresh();
  const checks::MeasureKey key = checks::measure_key(spec, tree_, setup_fingerprint());
  if (auto m = checks::find_measurement(dir_, key, spec.cache_max_age_h)) {
    checks::SenseResult r = checks::served(*m);
    r.id = spec.id;
    traced("measured.cached", {{"check", spec.id}, {"tree", tree_}, {"measured_seq", m->trace_seq}});
    return r;
  }
  checks::SenseResult r = fresh();
  record(spec, r);
  return r;
}

void StoreUse::record(const checks::CheckSpec& spec, const checks::SenseResult& r) {
  if (!keyed() || !checks::cache_wanted(spec) || r.interrupted || !r.cached.empty()) return;
  const checks::MeasureKey key = checks::measure_key(spec, tree_, setup_fingerprint());
  checks::Measurement m{key, r, util::now_ms(), where_, -1, "", {}, ""};
  if (!r.ok) {
    // Kept as the tree's failing set, never served (checks/measured.h).
    const FailingSet f = FailingSet::of(spec.id, r);
    m.failing = f.tests;
    m.signature = f.signature;
  }
  m.trace_seq = traced("measured",
                       {{"check", spec.id}, {"tree", tree_}, {"signal", r.signal}, {"ok", r.ok}, {"where", where_}});
  checks::record_measurement(dir_, m);
}

void StoreUse::judged(const checks::CheckSpec& spec, const Verdict& v) {
  if (!keyed() || !checks::cache_wanted(spec) || !v.red || v.flaky.empty()) return;
  const checks::MeasureKey key = checks::measure_key(spec, tree_, setup_fingerprint());
  std::optional<checks::Measurement> m = checks::find_reference(dir_, tree_, key.check);
  if (!m || m->result.ok || !(m->key == key)) return;
  std::vector<std::string> left;
  for (const std::string& t : m->failing)
    if (std::find(v.flaky.begin(), v.flaky.end(), t) == v.flaky.end()) left.push_back(t);
  if (left.size() == m->failing.size()) return;
  m->failing = left;
  checks::record_measurement(dir_, *m);
}

std::optional<FailingSet> StoreUse::reference(const checks::CheckSpec& spec, const std::string& tree) const {
  const std::optional<checks::Measurement> m = checks::find_reference(dir_, tree, spec.raw.dump());
  if (!m) return std::nullopt;
  FailingSet f;
  f.ok = m->result.ok;
  f.tests = m->failing;
  f.signature = m->signature;
  return f;
}

}  // namespace phoenix::engine
