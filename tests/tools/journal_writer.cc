// journal_writer: a second (and third) process writing one journal at the
// same time, for the concurrency tests.
//
//   journal_writer JOURNAL NAME N
// records N heals with signatures unique to NAME and N heals of one shared
// signature, each in its own transaction, then prints "wrote N".
//
//   journal_writer --for SECONDS JOURNAL TRACE NAME
// for SECONDS, over and over: records the heal of signature
// sha256("NAME-<i>") and one heal of the shared signature in the journal,
// then appends a "writer" event {"writer": NAME, "i": <i>} to the trace
// (i = 0, 1, ...); then prints "wrote <count>".
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "journal/journal.h"
#include "trace/trace.h"
#include "util/error.h"
#include "util/hash.h"

namespace {

void record(phoenix::journal::Journal& j, const std::string& name, int i) {
  phoenix::journal::Fix f;
  f.check = "unit";
  f.failure_type = "unit";
  f.fixer = "harness";
  f.files = {"src/a.txt"};
  f.signature = phoenix::util::sha256_hex(name + "-" + std::to_string(i));
  f.patch = "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-" + std::to_string(i) + "\n+" + name + "\n";
  j.record_healed(f);
  f.signature = phoenix::util::sha256_hex("shared");
  f.patch = "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-x\n+y\n";
  j.record_healed(f);
}

int for_a_while(double seconds, const char* journal, const char* trace_path, const std::string& name) {
  auto j = phoenix::journal::Journal::open(journal);
  phoenix::trace::Trace trace(trace_path);
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<long long>(seconds * 1000));
  int n = 0;
  for (; std::chrono::steady_clock::now() < end; ++n) {
    record(j, name, n);
    trace.append("writer", {{"writer", name}, {"i", n}});
  }
  std::printf("wrote %d\n", n);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const bool timed = argc == 6 && std::string(argv[1]) == "--for";
  if (argc != 4 && !timed) {
    std::fprintf(stderr, "usage: journal_writer JOURNAL NAME N | journal_writer --for SECONDS JOURNAL TRACE NAME\n");
    return 64;
  }
  try {
    if (timed) return for_a_while(std::atof(argv[2]), argv[3], argv[4], argv[5]);
    auto j = phoenix::journal::Journal::open(argv[1]);
    int n = std::atoi(argv[3]);
    for (int i = 0; i < n; ++i) record(j, argv[2], i);
    std::printf("wrote %d\n", n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "journal_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
