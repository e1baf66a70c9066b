#include "util/term.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace phoenix::util::term {

std::string paint(bool on, const char* code, const std::string& s) {
  return on ? std::string("\033[") + code + "m" + s + "\033[0m" : s;
}

bool is_tty(int fd) { return ::isatty(fd) == 1; }

bool color_enabled(int fd) {
  const char* no = std::getenv("NO_COLOR");
  if (no && *no) return false;
  const char* force = std::getenv("CLICOLOR_FORCE");
  if (force && *force && std::string(force) != "0") return true;
  return is_tty(fd);
}

struct Progress::Impl {
  std::mutex mu;
  std::condition_variable cv;
  std::string label;
  bool stop = false;
  bool drawn = false;
  std::thread thread;
};

Progress::Progress(std::string label, int delay_ms, int period_ms) : impl_(std::make_unique<Impl>()) {
  impl_->label = std::move(label);
  if (!is_tty(2)) return;
  Impl* im = impl_.get();
  im->thread = std::thread([im, delay_ms, period_ms] {
    auto start = std::chrono::steady_clock::now();
    std::unique_lock<std::mutex> lock(im->mu);
    if (im->cv.wait_for(lock, std::chrono::milliseconds(delay_ms), [im] { return im->stop; })) return;
    do {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::fprintf(stderr, "\r\033[K%s %.1fs", im->label.c_str(), s);
      std::fflush(stderr);
      im->drawn = true;
    } while (!im->cv.wait_for(lock, std::chrono::milliseconds(period_ms), [im] { return im->stop; }));
  });
}

Progress::~Progress() {
  if (!impl_->thread.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->stop = true;
  }
  impl_->cv.notify_all();
  impl_->thread.join();
  if (impl_->drawn) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
}

void Progress::set_label(std::string label) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->label = std::move(label);
}

}  // namespace phoenix::util::term
