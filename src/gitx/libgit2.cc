#include "gitx/libgit2.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <random>
#include <sstream>
#include <thread>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/lock.h"

namespace phoenix::gitx::lg2 {

void ensure_init() {
  static const int once = [] {
    int rc = git_libgit2_init();
    if (rc < 0) throw Error("libgit2: init failed");
    return rc;
  }();
  (void)once;
}

std::string last_error_message(int rc) {
  const git_error* e = git_error_last();
  if (e && e->message && *e->message) return e->message;
  return "error " + std::to_string(rc);
}

void check(int rc, const std::string& what) {
  if (rc == GIT_ELOCKED) throw Locked("libgit2: " + what + ": " + last_error_message(rc));
  if (rc < 0) throw Error("libgit2: " + what + ": " + last_error_message(rc));
}

namespace {

std::atomic<double> g_lock_wait_s{5.0};

// The lock file a Locked error is about: libgit2 names it for refs and
// config ("failed to lock file '/r/.git/refs/x.lock' for writing"), not for
// the index ("the index is locked"); then the first of `locks` that exists.
std::string lock_in_question(const std::string& message, const std::vector<std::string>& locks) {
  size_t end = message.find(".lock'");
  if (end != std::string::npos) {
    size_t start = message.rfind('\'', end);
    if (start != std::string::npos) return message.substr(start + 1, end + 5 - start - 1);
  }
  for (const auto& l : locks)
    if (util::path_exists(l)) return l;
  return locks.empty() ? std::string() : locks.front();
}

[[noreturn]] void still_locked(const std::string& lock, const std::string& fallback_message) {
  std::ostringstream waited;
  waited << g_lock_wait_s.load();
  if (lock.empty()) throw Error(fallback_message + " (waited " + waited.str() + " s, git.lock_wait_s)");
  std::string holder = util::FileLock::open_by(lock);
  throw Error(lock + " is held " +
              (holder.empty() ? std::string("(no running process has it open: a crashed git may have left it; "
                                            "remove it once no git command runs)")
                              : "by " + holder) +
              "; waited " + waited.str() + " s (git.lock_wait_s); Phoenix never removes a lock it did not take");
}

}  // namespace

void with_lock_wait(const std::vector<std::string>& locks, bool repeatable, const std::function<void()>& op) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(static_cast<long long>(g_lock_wait_s.load() * 1000));
  std::mt19937 rng(std::random_device{}());
  int backoff_ms = 20;
  auto nap = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms + static_cast<int>(rng() % (backoff_ms + 1))));
    backoff_ms = std::min(backoff_ms * 2, 250);
  };
  for (;;) {
    std::string taken;
    for (const auto& l : locks)
      if (util::path_exists(l)) taken = l;
    if (!taken.empty()) {
      if (Clock::now() >= deadline) still_locked(taken, "");
      nap();
      continue;
    }
    try {
      op();
      return;
    } catch (const Locked& e) {
      if (!repeatable || Clock::now() >= deadline) still_locked(lock_in_question(e.what(), locks), e.what());
    }
    nap();
  }
}

std::string oid_hex(const git_oid& oid) {
  char hex[GIT_OID_HEXSZ + 1];
  git_oid_tostr(hex, sizeof hex, &oid);
  return hex;
}

SignaturePtr signature_now(const Author& author) {
  git_signature* raw = nullptr;
  check(git_signature_now(&raw, author.name, author.email), "author signature");
  return SignaturePtr(raw);
}

IndexPtr fresh_index(git_repository* repo, bool reread) {
  git_index* raw = nullptr;
  check(git_repository_index(&raw, repo), "open index");
  IndexPtr index(raw);
  check(git_index_read(index.get(), reread ? 1 : 0), "read index");
  return index;
}

}  // namespace phoenix::gitx::lg2

namespace phoenix::gitx {

void set_lock_wait_s(double seconds) { lg2::g_lock_wait_s = seconds < 0 ? 0 : seconds; }

}  // namespace phoenix::gitx
