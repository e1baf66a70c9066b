#include "util/signals.h"

#include <signal.h>

#include <atomic>
#include <cstring>

namespace phoenix::util {

namespace {

std::atomic<int> g_signal{0};

// The first signal wins: a second one does not change what interrupted us.
extern "C" void on_signal(int sig) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
}

}  // namespace

void install_signal_handlers() {
  struct sigaction sa;
  std::memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(s, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
}

int interrupted_signal() { return g_signal.load(); }

}  // namespace phoenix::util
