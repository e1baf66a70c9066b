// journal_writer: a second (and third) process writing one journal at the
// same time, for the concurrency tests.
//
//   journal_writer JOURNAL NAME N
// records N heals with signatures unique to NAME and N heals of one shared
// signature, each in its own transaction, then prints "wrote N".
#include <cstdio>
#include <cstdlib>
#include <string>

#include "journal/journal.h"
#include "util/error.h"
#include "util/hash.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: journal_writer JOURNAL NAME N\n");
    return 64;
  }
  try {
    auto j = phoenix::journal::Journal::open(argv[1]);
    int n = std::atoi(argv[3]);
    for (int i = 0; i < n; ++i) {
      phoenix::journal::HealedFix f;
      f.check = "unit";
      f.failure_type = "unit";
      f.fixer = "harness";
      f.files = {"src/a.txt"};
      f.signature = phoenix::util::sha256_hex(std::string(argv[2]) + "-" + std::to_string(i));
      f.patch = "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-" + std::to_string(i) + "\n+" + argv[2] + "\n";
      j.record_healed(f);
      f.signature = phoenix::util::sha256_hex("shared");
      f.patch = "--- a/src/a.txt\n+++ b/src/a.txt\n@@ -1 +1 @@\n-x\n+y\n";
      j.record_healed(f);
    }
    std::printf("wrote %d\n", n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "journal_writer: %s\n", e.what());
    return 1;
  }
  return 0;
}
