// phoenix_bench_visual: the programs bench/visual_bench.sh times.
//   gen DIR W H            writes DIR/a.png (a chart-like picture) and DIR/b.png
//                          (the same chart, its curves moved by a fraction of a
//                          pixel and one bar recoloured)
//   compare A B DIFF [T]   what a visual check does with a screenshot: decode
//                          both PNGs, compare (tolerance T, default 0.1,
//                          anti-aliasing detection on), write the diff PNG.
//                          Prints "differing=N total=N" on stdout and the time
//                          of each phase on stderr.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <future>
#include <string>

#include "image/image.h"
#include "util/atomic_file.h"

using namespace phoenix;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

void put(image::Image& img, int x, int y, std::uint32_t rgb, double cover = 1) {
  if (x < 0 || y < 0 || x >= img.width || y >= img.height || cover <= 0) return;
  std::uint8_t* p = &img.rgba[(static_cast<std::size_t>(y) * img.width + x) * 4];
  const double c[3] = {double(rgb >> 16), double((rgb >> 8) & 0xff), double(rgb & 0xff)};
  for (int i = 0; i < 3; ++i) p[i] = static_cast<std::uint8_t>(std::lround(p[i] * (1 - cover) + c[i] * cover));
  p[3] = 255;
}

// A dashboard-like chart: light grid, axes, 24 bars, three anti-aliased
// series curves and a few label-like blocks; everything scales with the size.
image::Image chart(int w, int h, double shift, bool regress) {
  image::Image img;
  img.width = w;
  img.height = h;
  img.rgba.assign(static_cast<std::size_t>(w) * h * 4, 255);
  const double s = h / 1080.0;
  const int left = int(120 * s), base = h - int(140 * s), top = int(80 * s);
  for (int y = top; y < base; y += int(60 * s))
    for (int x = left; x < w - int(40 * s); ++x) put(img, x, y, 0xe0e0e0);
  for (int y = top; y <= base; ++y) put(img, left, y, 0x333333);
  for (int x = left; x < w - int(40 * s); ++x) put(img, x, base, 0x333333);
  const std::uint32_t palette[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b};
  const int bars = 24, slot = (w - left - int(80 * s)) / bars, bw = slot * 3 / 5;
  for (int i = 0; i < bars; ++i) {
    const int bh = int((base - top) * (0.25 + 0.3 * (1 + std::sin(i * 0.7))));
    const std::uint32_t colour = (regress && i == 7) ? 0x17becf : palette[i % 6];
    const int x0 = left + int(20 * s) + i * slot;
    for (int y = base - bh; y < base; ++y)
      for (int x = x0; x < x0 + bw; ++x) put(img, x, y, colour);
    for (int y = base + int(20 * s); y < base + int(34 * s); ++y)  // a "label"
      for (int x = x0; x < x0 + bw; x += 3) put(img, x, y, 0x555555);
  }
  const double thick = 2.5 * s;
  for (int k = 0; k < 3; ++k)
    for (int x = left + 1; x < w - int(40 * s); ++x) {
      const double cy =
          top + (base - top) * (0.3 + 0.15 * k) + (base - top) * 0.12 * std::sin(x / (90.0 * s) + k) + shift * s;
      for (int y = int(cy - thick) - 2; y <= int(cy + thick) + 2; ++y)
        put(img, x, y, palette[(k + 3) % 6], std::clamp(thick / 2 + 0.5 - std::fabs(y + 0.5 - cy), 0.0, 1.0));
    }
  return img;
}

int gen(const std::string& dir, int w, int h) {
  image::write_png(dir + "/a.png", chart(w, h, 0, false));
  image::write_png(dir + "/b.png", chart(w, h, 0.35, true));
  return 0;
}

int compare(const std::string& a, const std::string& b, const std::string& out, double tolerance) {
  auto t0 = Clock::now();
  // As the visual check does: the baseline decoded on a second thread.
  auto baseline = std::async(std::launch::async, [&a] { return image::read_png(a); });
  image::Image y = image::read_png(b);
  image::Image x = baseline.get();
  const double decode = ms_since(t0);
  auto t1 = Clock::now();
  auto r = image::compare(x, y, {tolerance, true}, true);
  const double cmp = ms_since(t1);
  x = {};  // as a check would: the pictures are not needed to write the diff
  y = {};
  auto t2 = Clock::now();
  image::write_png(out, r.diff);
  const double enc = ms_since(t2);
  std::printf("differing=%lld total=%lld\n", r.differing, r.total);
  std::fprintf(stderr, "phoenix phases: decode both %.1f ms, compare %.1f ms, encode+write diff %.1f ms\n", decode, cmp,
               enc);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string cmd = argc > 1 ? argv[1] : "";
    if (cmd == "gen" && argc == 5) return gen(argv[2], std::atoi(argv[3]), std::atoi(argv[4]));
    if (cmd == "compare" && (argc == 5 || argc == 6))
      return compare(argv[2], argv[3], argv[4], argc == 6 ? std::atof(argv[5]) : 0.1);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "phoenix_bench_visual: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "usage: phoenix_bench_visual gen DIR W H | compare A B DIFF [TOLERANCE]\n");
  return 64;
}
