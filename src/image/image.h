// Images: PNG decode/encode (stb_image / stb_image_write) with limits checked
// before anything is allocated, and a perceptual comparison in the manner of
// pixelmatch (YIQ colour distance, optional anti-aliasing detection) that
// also draws a diff picture: changes highlighted over a dimmed baseline.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace phoenix::image {

// A bad picture: truncated, corrupt, not a PNG, 0x0, or too large to decode.
// what() is one line that names the source ("baseline .phoenix/baselines/chart.png: ...").
struct ImageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Image {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgba;  // width * height * 4 bytes, row-major
};

// Refused before allocating: images whose declared width*height exceeds this.
constexpr long long kMaxPixels = 8192LL * 8192LL;

// `what` names the source in errors. Always returns 8-bit RGBA. Checks the
// signature, the declared size (before allocating), every chunk's length and
// CRC and the IEND before stb_image decodes a pixel: the one entry point for
// untrusted bytes (and for fuzzers). read_png throws phoenix::Error (naming
// the path) when the file cannot be read, ImageError when it is a bad picture.
Image decode_png(const std::string& bytes, const std::string& what, long long max_pixels = kMaxPixels);
Image read_png(const std::string& path, long long max_pixels = kMaxPixels);
std::string encode_png(const Image& img);
// Atomic write (temp + fsync + rename).
void write_png(const std::string& path, const Image& img);

struct CompareOptions {
  double tolerance = 0.1;  // 0..1, pixelmatch's threshold
  bool detect_aa = true;   // anti-aliased pixels do not count as differences
};

struct CompareResult {
  bool size_mismatch = false;
  long long differing = 0;  // pixels over the tolerance (not counting anti-aliasing)
  long long total = 0;      // pixels compared (the larger image's when sizes differ)
  double ratio = 0;         // differing / total; 1 when sizes differ
  Image diff;               // only when want_diff: changes in red over a dimmed baseline
};

CompareResult compare(const Image& expected, const Image& actual, const CompareOptions& opt, bool want_diff);

// `pixels` resized to `bytes` (zeroed), its memory asked of the kernel in
// huge pages where it allows (Linux's transparent huge pages in "madvise"
// mode): a 4K picture is then a few dozen page faults instead of eight
// thousand, which on a virtual machine cost more than decoding it.
void resize_pixels(std::vector<std::uint8_t>& pixels, std::size_t bytes);

}  // namespace phoenix::image
