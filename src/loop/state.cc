#include "loop/state.h"

#include <unistd.h>

#include <chrono>

#include "engine/phase.h"
#include "util/atomic_file.h"
#include "util/fault.h"
#include "util/text.h"

namespace phoenix::loop {

using util::Json;

Json empty_state() {
  return Json{{"schema_version", kStateSchemaVersion},
              {"pid", static_cast<long>(::getpid())},
              {"phase", engine::Phase::kStarting},
              {"task", nullptr},
              {"iteration", 0},
              {"max_iterations", 0},
              {"retry_count", 0},
              {"task_signatures", Json::array()},
              {"session_retries", 0},
              {"last_failure_type", nullptr},
              {"last_signature", nullptr},
              {"last_incident", nullptr},
              {"known_good", nullptr},
              {"head", nullptr},
              {"started_at", util::now_iso8601()},
              {"updated_at", util::now_iso8601()},
              {"deadline", nullptr},
              {"waiting_until", nullptr},
              {"waiting_for", nullptr},
              {"workers", Json::array()},
              {"queue", Json::array()},
              {"known_red", Json::object()},  // loop/known_red.cc fills it in once the baseline is measured
              // loop/caps.h fills it in at the first transition.
              {"caps",
               {{"max_cost_usd", nullptr},
                {"max_hours", nullptr},
                {"cost_usd", 0.0},
                {"unknown_cost_runs", 0},
                {"elapsed_s", 0.0}}},
              {"exit_code", nullptr},
              {"error", nullptr}};
}

StateFile::StateFile(std::string path) : path_(std::move(path)), state_(empty_state()) {}

StateFile::~StateFile() { stop_heartbeat(); }

void StateFile::write_locked(util::Sync sync) {
  state_["updated_at"] = util::now_iso8601();
  std::string text = state_.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  PHOENIX_FAULT_TORN("state-write", path_ + ".tmp.fault", text);
  PHOENIX_FAULT_IO("state-write", path_);
  util::write_file_atomic(path_, text, 0644, sync);
}

void StateFile::update(const std::function<void(Json&)>& change, util::Sync sync) {
  std::lock_guard<std::mutex> lock(mu_);
  change(state_);
  write_locked(sync);
}

Json StateFile::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

void StateFile::start_heartbeat(double seconds) {
  if (beat_.joinable() || seconds <= 0) return;
  auto period = std::chrono::microseconds(static_cast<long long>(seconds * 1e6));
  beat_ = std::thread([this, period] {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stopping_) {
      if (cv_.wait_for(lock, period, [this] { return stopping_; })) break;
      try {
        write_locked(util::Sync::kAtomic);  // only updated_at moves
      } catch (...) {
        // A full disk must not kill the loop from this thread; the next
        // transition's write reports it on the loop's own thread.
      }
    }
  });
}

void StateFile::stop_heartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (beat_.joinable()) beat_.join();
}

}  // namespace phoenix::loop
