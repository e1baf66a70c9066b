// Trace verification over arbitrary file contents: verify() never crashes;
// when it reports a torn last line, repair_torn_tail() removes it and the
// file no longer verifies as torn.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trace/trace.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace {
std::string scratch() {
  static std::string path = [] {
    char dir[] = "/tmp/phoenix-trace-fuzz-XXXXXX";
    if (!::mkdtemp(dir)) std::abort();
    return std::string(dir) + "/trace.jsonl";
  }();
  return path;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = scratch();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  phoenix::trace::VerifyResult v = phoenix::trace::verify(path);
  if (!v.ok && v.kind == "torn") {
    try {
      phoenix::trace::repair_torn_tail(path);
    } catch (const phoenix::Error&) { return 0; }
    if (phoenix::trace::verify(path).kind == "torn") std::abort();
  }
  return 0;
}
