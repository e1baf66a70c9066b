// png_probe FILE [MAX_PIXELS]: decodes FILE with Phoenix's PNG decoder and
// prints "WxH" on stdout (exit 0), or the one-line error on stderr (exit 1).
// Tests run it under maxrss to bound what a hostile PNG header can make
// Phoenix allocate.
#include <cstdio>
#include <exception>
#include <string>

#include "image/image.h"

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  try {
    long long max = argc > 2 ? std::stoll(argv[2]) : phoenix::image::kMaxPixels;
    auto img = phoenix::image::read_png(argv[1], max);
    std::printf("%dx%d\n", img.width, img.height);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "png_probe: %s\n", e.what());
    return 1;
  }
}
