#include "trace/trace.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>
#include <vector>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/fault.h"
#include "util/hash.h"
#include "util/lock.h"
#include "util/redact.h"
#include "util/text.h"

namespace phoenix::trace {

using util::Json;

namespace {

std::string entry_hash(const std::string& prev, const Json& body) {
  return util::sha256_hex(prev + "\n" + util::canonical(body));
}

// The last complete line of the file and whether the file ends torn.
struct Tail {
  std::string last_line;
  bool torn = false;
  off_t torn_offset = 0;  // where the torn fragment starts
};

Tail read_tail(const std::string& path) {
  Tail t;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return t;
  struct stat st;
  if (::fstat(fd, &st) != 0 || st.st_size == 0) {
    ::close(fd);
    return t;
  }
  // Read backwards in blocks until two newlines (or the start) are found.
  off_t size = st.st_size;
  std::string buf;
  off_t pos = size;
  const off_t block = 8192;
  for (;;) {
    off_t start = pos > block ? pos - block : 0;
    std::string chunk(static_cast<size_t>(pos - start), '\0');
    ssize_t n = ::pread(fd, chunk.data(), chunk.size(), start);
    if (n < 0) break;
    buf.insert(0, chunk);
    pos = start;
    size_t newlines = 0;
    for (char c : buf) newlines += c == '\n';
    if (newlines >= 2 || pos == 0) break;
  }
  ::close(fd);
  if (buf.back() != '\n') {
    t.torn = true;
    size_t nl = buf.rfind('\n');
    t.torn_offset = nl == std::string::npos ? pos : pos + static_cast<off_t>(nl + 1);
    buf = nl == std::string::npos ? std::string() : buf.substr(0, nl + 1);
  }
  if (buf.empty()) return t;
  buf.pop_back();  // the final '\n'
  size_t nl = buf.rfind('\n');
  t.last_line = nl == std::string::npos ? buf : buf.substr(nl + 1);
  return t;
}

std::string make_line(uint64_t seq, const std::string& event, const Json& data, const std::string& prev) {
  return format_entry(seq, event, data, prev, nullptr);
}

// The seq and prev of the entry that follows `last_line` (seq 1 and prev ""
// after none); nullopt when the line is not a trace entry (its seq is
// missing or not a number, its hash not a string).
std::optional<std::pair<uint64_t, std::string>> entry_after(const std::string& last_line) {
  if (last_line.empty()) return std::make_pair(uint64_t{1}, std::string());
  Json last = Json::parse(last_line, nullptr, false);
  if (!last.is_object()) return std::nullopt;
  auto seq = last.find("seq");
  auto hash = last.find("hash");
  if (seq == last.end() || !seq->is_number_unsigned()) return std::nullopt;
  if (hash != last.end() && !hash->is_string()) return std::nullopt;
  return std::make_pair(seq->get<uint64_t>() + 1, hash == last.end() ? std::string() : hash->get<std::string>());
}

bool repair_locked(const std::string& path, const Tail& tail) {
  if (!tail.torn) return false;
  std::string all = util::read_file(path);
  std::string fragment = all.substr(static_cast<size_t>(tail.torn_offset));
  if (::truncate(path.c_str(), tail.torn_offset) != 0) throw_errno("cannot truncate " + path);
  // After a line that is no entry, the repair starts a chain of its own
  // (verify names that line).
  const auto [seq, prev] = entry_after(tail.last_line).value_or(std::make_pair(uint64_t{1}, std::string()));
  Json data = {{"bytes", fragment.size()},
               {"sha256", util::sha256_hex(fragment)},
               {"fragment", util::to_valid_utf8(util::utf8_head(fragment, 512))}};
  util::append_durable(path, make_line(seq, "trace.torn_repaired", data, prev));
  return true;
}

}  // namespace

std::string format_entry(uint64_t seq, const std::string& event, const Json& data, const std::string& prev,
                         std::string* hash) {
  Json body = {{"seq", seq}, {"ts", util::now_iso8601()}, {"event", event}, {"data", data}, {"prev", prev}};
  std::string h = entry_hash(prev, body);
  body["hash"] = h;
  if (hash) *hash = h;
  return util::canonical(body) + "\n";
}

Trace::Trace(std::string path) : path_(std::move(path)) {}

uint64_t Trace::append(const std::string& event, const Json& data, bool durable) {
  util::FileLock lock(path_ + ".lock", 10000, "the trace " + path_);
  Tail tail = read_tail(path_);
  if (tail.torn) {
    repair_locked(path_, tail);
    tail = read_tail(path_);
  }
  const auto next = entry_after(tail.last_line);
  if (!next)
    throw Error("the trace " + path_ + " ends in a line that is not a trace entry; run 'phoenix trace verify'");
  const auto& [seq, prev] = *next;
  std::string line = make_line(seq, event, util::redact_secrets(data), prev);
  PHOENIX_FAULT_TORN("mid-trace-append", path_, line);
  PHOENIX_FAULT_IO("trace-append", path_);
  std::lock_guard<std::mutex> g(mu_);
  util::append_durable(path_, line, batches_ > 0 || !durable ? util::Sync::kAtomic : util::Sync::kDurable);
  if (batches_ > 0) unsynced_ = true;
  return seq;
}

Trace::Batch::Batch(Trace& trace) : trace_(&trace) {
  std::lock_guard<std::mutex> g(trace_->mu_);
  ++trace_->batches_;
}

void Trace::Batch::end() {
  if (!trace_) return;
  Trace& t = *trace_;
  trace_ = nullptr;
  std::lock_guard<std::mutex> g(t.mu_);
  if (--t.batches_ > 0 || !t.unsynced_) return;
  t.unsynced_ = false;
  util::fsync_file(t.path_);
}

Trace::Batch::~Batch() {
  try {
    end();
  } catch (const Error&) {
    // Best effort on the way out (an exception may be unwinding): the
    // lines are written; only their fsync failed.
  }
}

bool repair_torn_tail(const std::string& path) {
  util::FileLock lock(path + ".lock", 10000, "the trace " + path);
  return repair_locked(path, read_tail(path));
}

namespace {

// The fields of a line as Phoenix writes it (canonical JSON, keys sorted:
// data, event, hash, prev, seq, ts), read without a JSON parser. The top-level
// keys after "data" are found from the end: inside "data" a key like "seq"
// can only appear as a nested key, before them.
struct Fast {
  bool ok = false;
  uint64_t seq = 0;
  std::string_view prev, hash;
  std::string_view body_a, body_b;  // the line without its "hash" member: what was hashed
};

Fast read_fast(std::string_view l) {
  Fast f;
  if (l.size() < 100 || l.substr(0, 8) != "{\"data\":" || l.back() != '}') return f;
  size_t ts = l.rfind(",\"ts\":\"");
  size_t seq = l.rfind(",\"seq\":", ts);
  size_t prev = l.rfind(",\"prev\":\"", seq);
  size_t hash = l.rfind(",\"hash\":\"", prev);
  if (ts == std::string_view::npos || seq == std::string_view::npos || prev == std::string_view::npos ||
      hash == std::string_view::npos || !(hash < prev && prev < seq && seq < ts))
    return f;
  if (prev != hash + 9 + 64 + 1) return f;
  f.hash = l.substr(hash + 9, 64);
  size_t pstart = prev + 9, pend = seq - 1;
  if (pend < pstart || l[pend] != '"') return f;
  f.prev = l.substr(pstart, pend - pstart);
  uint64_t n = 0;
  size_t k = seq + 7;
  if (k >= ts) return f;
  for (; k < ts; ++k) {
    if (l[k] < '0' || l[k] > '9') return f;
    n = n * 10 + static_cast<uint64_t>(l[k] - '0');
  }
  f.seq = n;
  f.body_a = l.substr(0, hash + 1);
  f.body_b = l.substr(prev + 1);
  f.ok = true;
  return f;
}

// The seq and prev a line claims, cheaply: seq 0 and prev "" where it has
// none of that type (a line may hold any JSON).
struct Link {
  uint64_t seq = 0;
  std::string prev;
};
Link claimed_link(std::string_view l) {
  Fast f = read_fast(l);
  if (f.ok) return {f.seq, std::string(f.prev)};
  Link out;
  Json j = Json::parse(l, nullptr, false);
  if (!j.is_object()) return out;
  if (auto seq = j.find("seq"); seq != j.end() && seq->is_number_unsigned()) out.seq = seq->get<uint64_t>();
  if (auto prev = j.find("prev"); prev != j.end() && prev->is_string()) out.prev = prev->get<std::string>();
  return out;
}
uint64_t claimed_seq(std::string_view l) { return claimed_link(l).seq; }

}  // namespace

namespace {

// The file's lines (the last one without its newline when torn).
std::vector<std::string_view> split_lines(std::string_view all, bool* torn) {
  std::vector<std::string_view> lines;
  lines.reserve(all.size() / 200 + 1);
  *torn = false;
  for (size_t start = 0; start < all.size();) {
    const char* nl = static_cast<const char*>(std::memchr(all.data() + start, '\n', all.size() - start));
    if (!nl) {
      lines.emplace_back(all.data() + start, all.size() - start);
      *torn = true;
      break;
    }
    lines.emplace_back(all.data() + start, static_cast<size_t>(nl - all.data()) - start);
    start = static_cast<size_t>(nl - all.data()) + 1;
  }
  return lines;
}

// Line i exactly as Phoenix writes entry i+1, chained to `prev` (the hash
// line i-1 holds). Only the hash itself is parsed, not the entry's JSON.
bool fast_ok(std::string_view line, uint64_t index, std::string_view prev, util::Sha256& hasher,
             std::string_view* hash) {
  Fast f = read_fast(line);
  if (!f.ok || f.seq != index + 1 || f.prev != prev) return false;
  hasher.reset();
  hasher.update(prev);
  hasher.update("\n");
  hasher.update(f.body_a);
  hasher.update(f.body_b);
  *hash = f.hash;
  return hasher.hex() == f.hash;
}

// The lines as Phoenix wrote them, checked while the file streams through
// one small buffer (it stays in the cache; the whole file in memory cost a
// page fault per page and several passes over memory): how many lines at
// the start are valid links of the chain, and whether that is all of them
// (no other line, no torn tail). Only when not does verify() read the
// whole file to diagnose.
struct FastPass {
  uint64_t entries = 0, bytes = 0;
  bool all = false;
};

FastPass stream_fast(const std::string& path) {
  FastPass out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("cannot read trace " + path, kExitRed);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  std::vector<char> buf(1 << 20);
  size_t have = 0;  // bytes in buf, the first ones an incomplete line carried over
  std::string prev;
  std::string_view hash;
  util::Sha256 hasher;
  for (;;) {
    if (have == buf.size()) buf.resize(buf.size() * 2);  // a line longer than the buffer
    const ssize_t n = ::read(fd, buf.data() + have, buf.size() - have);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      ::close(fd);
      throw Error("cannot read trace " + path, kExitRed);
    }
    if (n == 0) break;
    out.bytes += static_cast<uint64_t>(n);
    have += static_cast<size_t>(n);
    size_t start = 0;
    for (const char* nl; (nl = static_cast<const char*>(std::memchr(buf.data() + start, '\n', have - start)));) {
      const std::string_view line(buf.data() + start, static_cast<size_t>(nl - buf.data()) - start);
      if (!fast_ok(line, out.entries, prev, hasher, &hash)) {
        ::close(fd);
        return out;
      }
      prev.assign(hash);
      ++out.entries;
      start = static_cast<size_t>(nl - buf.data()) + 1;
    }
    std::memmove(buf.data(), buf.data() + start, have - start);
    have -= start;
  }
  ::close(fd);
  out.all = have == 0;
  return out;
}

// Where each seq first appears: only needed once something is wrong, to
// tell a deletion from a reordering.
size_t first_index_of(const std::vector<std::string_view>& lines, uint64_t seq) {
  for (size_t k = 0; k < lines.size(); ++k)
    if (claimed_seq(lines[k]) == seq) return k;
  return std::string::npos;
}

// The sequential walk from line `i` on, with the state the lines before it
// left: what a line that is not Phoenix's own formatting holds, and the
// diagnosis of the first one that breaks the chain.
struct Walk {
  const std::vector<std::string_view>& lines;
  bool torn;
  VerifyResult& r;
  std::string prev;
  uint64_t expected;

  VerifyResult fail(size_t i, const std::string& kind, const std::string& why) {
    r.ok = false;
    r.bad_line = i + 1;
    r.bad_seq = expected;
    r.kind = kind;
    r.why = why;
    return r;
  }

  VerifyResult run(size_t from) {
    util::Sha256 hasher;
    for (size_t i = from; i < lines.size(); ++i) {
      std::string_view l = lines[i];
      if (torn && i + 1 == lines.size())
        return fail(i, "torn",
                    "the last line is incomplete (" + std::to_string(l.size()) +
                        " bytes, no newline): a write was cut short by a crash; 'phoenix recover' repairs it");
      std::string_view hash;
      if (fast_ok(l, expected - 1, prev, hasher, &hash)) {
        prev = std::string(hash);
        ++expected;
        ++r.entries;
        continue;
      }
      std::optional<VerifyResult> bad = slow(i);
      if (bad) return *bad;
    }
    return r;
  }

  // Parses line i to say precisely what is wrong (nullopt: valid, only not
  // in Phoenix's own formatting, re-serialised by a tool).
  std::optional<VerifyResult> slow(size_t i) {
    Json j = Json::parse(lines[i], nullptr, false);
    bool shaped = j.is_object() && j.contains("seq") && j["seq"].is_number_unsigned() && j.contains("hash") &&
                  j["hash"].is_string() && j.contains("prev") && j["prev"].is_string() && j.contains("event") &&
                  j.contains("ts") && j.contains("data") && j.size() == 6;
    if (!shaped) return fail(i, "edited", "line " + std::to_string(i + 1) + " is not a trace entry");
    uint64_t seq = j["seq"].get<uint64_t>();
    Json body = j;
    body.erase("hash");
    bool hash_ok = entry_hash(j["prev"].get<std::string>(), body) == j["hash"].get<std::string>();
    bool prev_ok = j["prev"].get<std::string>() == prev;
    if (seq == expected && prev_ok && hash_ok) {
      prev = j["hash"].get<std::string>();
      ++expected;
      ++r.entries;
      return std::nullopt;
    }
    if (seq == expected) return edited_or_inserted(i, seq, hash_ok);
    if (seq < expected)
      return fail(i, first_index_of(lines, seq) < i ? "inserted" : "reordered",
                  "line " + std::to_string(i + 1) + " repeats seq " + std::to_string(seq) + " where seq " +
                      std::to_string(expected) + " belongs");
    // seq > expected: the expected entry is missing here. Later: reordered; never: deleted.
    size_t later = first_index_of(lines, expected);
    if (later != std::string::npos && later > i)
      return fail(i, "reordered", "seq " + std::to_string(seq) + " comes before seq " + std::to_string(expected));
    return fail(i, "deleted",
                "seq " + std::to_string(expected) +
                    (seq - expected > 1 ? "-" + std::to_string(seq - 1) : std::string()) +
                    " missing: the next line holds seq " + std::to_string(seq));
  }

  // Either line i was changed, or a forged line sits here and the real
  // entry follows (an insertion).
  VerifyResult edited_or_inserted(size_t i, uint64_t seq, bool hash_ok) {
    if (i + 1 < lines.size()) {
      const Link next = claimed_link(lines[i + 1]);
      if (next.seq == expected && next.prev == prev)
        return fail(i, "inserted",
                    "line " + std::to_string(i + 1) + " was inserted before seq " + std::to_string(expected));
    }
    return fail(i, "edited",
                "seq " + std::to_string(seq) + " was edited (" +
                    (hash_ok ? "its link to the previous entry" : "its hash") + " does not match)");
  }
};

}  // namespace

// The trace's bytes, read with one allocation of the file's size: appending
// a few hundred MB to a string in 64 KiB pieces cost its reallocations (a
// copy and fresh page faults at each doubling), which took most of
// verify's time. (Not mmap: a trace truncated by `phoenix recover` while
// mapped would end this process with SIGBUS.) Bytes appended after the
// size was read are left for the next verify.
class TraceBytes {
 public:
  explicit TraceBytes(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) {
      if (fd >= 0) ::close(fd);
      throw Error("cannot read trace " + path, kExitRed);
    }
    const size_t want = static_cast<size_t>(st.st_size);
    data_.reset(new char[want + 1]);
    while (size_ < want) {
      const ssize_t n = ::read(fd, data_.get() + size_, want - size_);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        ::close(fd);
        throw Error("cannot read trace " + path, kExitRed);
      }
      if (n == 0) break;  // truncated meanwhile: what is there
      size_ += static_cast<size_t>(n);
    }
    ::close(fd);
  }
  std::string_view view() const { return {data_.get(), size_}; }

 private:
  std::unique_ptr<char[]> data_;
  size_t size_ = 0;
};

VerifyResult verify(const std::string& path) {
  VerifyResult r;
  const FastPass fast = stream_fast(path);
  r.entries = fast.entries;
  r.bytes = fast.bytes;
  if (fast.all) return r;
  // Something is not as Phoenix wrote it: read it all, and walk on from there.
  const TraceBytes file(path);
  const std::string_view all = file.view();
  r.bytes = all.size();
  bool torn = false;
  const std::vector<std::string_view> lines = split_lines(all, &torn);
  const size_t from = std::min<size_t>(fast.entries, lines.size());
  Walk walk{lines, torn, r, "", from + 1};
  if (from > 0) walk.prev = std::string(read_fast(lines[from - 1]).hash);
  r.entries = from;
  return walk.run(from);
}

}  // namespace phoenix::trace
