// phoenix_bench: helpers for bench/run.sh that need Phoenix's own code.
//   phoenix_bench gen-trace N FILE   write a valid N-entry trace quickly
//   phoenix_bench verify-trace FILE  time trace::verify, print MB/s and entries/s
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "trace/trace.h"

using namespace phoenix;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: phoenix_bench gen-trace N FILE | verify-trace FILE\n");
    return 64;
  }
  std::string cmd = argv[1];
  if (cmd == "gen-trace" && argc == 4) {
    long n = std::stol(argv[2]);
    std::ofstream out(argv[3], std::ios::binary | std::ios::trunc);
    std::string prev, hash;
    for (long i = 1; i <= n; ++i) {
      out << trace::format_entry(static_cast<uint64_t>(i), "sense",
                                 {{"check", "unit"}, {"ok", i % 7 != 0}, {"signal", i % 7 ? "exit=0" : "exit=1"},
                                  {"duration_ms", i % 1000}},
                                 prev, &hash);
      prev = hash;
    }
    return 0;
  }
  if (cmd == "verify-trace") {
    auto t0 = std::chrono::steady_clock::now();
    trace::VerifyResult v = trace::verify(argv[2]);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("trace verify: %llu entries, %.1f MB in %.2f s: %.1f MB/s, %.0f entries/s%s\n",
                static_cast<unsigned long long>(v.entries), v.bytes / 1e6, s, v.bytes / 1e6 / s, v.entries / s,
                v.ok ? "" : " (NOT OK)");
    return v.ok ? 0 : 1;
  }
  std::fprintf(stderr, "phoenix_bench: unknown command %s\n", cmd.c_str());
  return 64;
}
