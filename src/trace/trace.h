// The trace: an append-only, hash-chained JSON-lines log of every event.
//
// Each line is one object {seq, ts, event, data, prev, hash} where
//   hash = sha256(prev + "\n" + canonical({seq, ts, event, data, prev}))
// and prev is the previous line's hash ("" for the first). Appends are
// serialised by a lock file, so concurrent writers never interleave, and
// fsynced. A line torn by a crash (no final newline) is reported as torn,
// distinct from tampering; the next append (or `phoenix recover`) moves it
// aside into a `trace.torn_repaired` event rather than building on it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "util/json.h"

namespace phoenix::trace {

constexpr int kTraceVersion = 1;

class Trace {
 public:
  explicit Trace(std::string path);
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;
  // Appends one event; returns its seq. fsynced unless `durable` is false
  // (or a Batch is open): a line a power cut may lose, for what stands
  // without it (a measurement of `phoenix sense`, which changes nothing).
  uint64_t append(const std::string& event, const util::Json& data, bool durable = true);
  const std::string& path() const { return path_; }

  // While a Batch is open, this Trace's appends are written but not
  // fsynced; end() (or the destructor, best effort) fsyncs the file once
  // for all of them. A crash of the process loses none of them (they are
  // in the kernel's page cache); a power cut may lose the batch's lines,
  // which are the file's last: the chain before them stays whole.
  // phoenix-loop opens one around an iteration's agent run, measurement
  // and commit (three events, one fsync). Batches nest; the outermost
  // one's end fsyncs.
  class Batch {
   public:
    explicit Batch(Trace& trace);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;
    void end();  // fsyncs now; throws Error when that fails

   private:
    Trace* trace_;
  };

 private:
  std::string path_;
  std::mutex mu_;
  int batches_ = 0;        // open Batches
  bool unsynced_ = false;  // lines appended in them, not fsynced yet
};

struct VerifyResult {
  bool ok = true;
  uint64_t entries = 0;   // valid entries before the first problem
  uint64_t bad_seq = 0;   // the seq expected where the problem is
  uint64_t bad_line = 0;  // 1-based line number of the problem
  std::string kind;       // "", "edited", "deleted", "reordered", "inserted", "torn"
  std::string why;        // one line for people
  uint64_t bytes = 0;
};

// One entry line (with its final newline), chained to `prev`; the new
// hash is stored in *hash. For tools that build traces in bulk.
std::string format_entry(uint64_t seq, const std::string& event, const util::Json& data, const std::string& prev,
                         std::string* hash);

// Walks the whole file; stops at the first problem.
VerifyResult verify(const std::string& path);

// Removes a torn last line (keeping its bytes in a trace.torn_repaired
// event). Returns true if anything was repaired.
bool repair_torn_tail(const std::string& path);

}  // namespace phoenix::trace
