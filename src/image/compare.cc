// Perceptual comparison in the manner of pixelmatch (MIT, Mapbox), written
// from its published description:
//  - colour distance: squared YIQ difference (Kotsarenko & Ramos, "Measuring
//    perceived color difference using YIQ NTSC transmission color space"),
//    pixels blended over white by their alpha; 35215 is the largest possible
//    value, so a tolerance t accepts distances up to 35215 * t * t;
//  - anti-aliasing: a differing pixel is anti-aliasing when, in either image,
//    it has at most two identical neighbours and both a darker and a brighter
//    neighbour, and the darkest or the brightest of those neighbours has three
//    or more identical neighbours in both images (Vysniauskas, "Anti-aliased
//    pixel and intensity slope detector", 2009);
//  - diff picture: unchanged pixels as the baseline in grey, blended 90%
//    towards white; changes in red; anti-aliasing in yellow.
// Pixels are handled as uint32 words: identical rows are skipped with one
// memcmp, identical pixels with one compare; nothing is allocated per pixel.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "image/image.h"

namespace phoenix::image {

namespace {

constexpr double kMaxYiqDelta = 35215.0;
constexpr double kDimAlpha = 0.1;               // how much of the baseline shows through the grey
constexpr std::uint32_t kRed = 0xff0000ffu;     // RGBA bytes ff 00 00 ff, little-endian word
constexpr std::uint32_t kYellow = 0xff00ffffu;  // ff ff 00 ff

inline std::uint32_t load(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store(std::uint8_t* p, std::uint32_t v) { std::memcpy(p, &v, 4); }

// A pixel's channels blended over white by its alpha.
struct Rgb {
  double r, g, b;
};
inline Rgb blended(const std::uint8_t* p) {
  const double r = p[0], g = p[1], b = p[2];
  if (p[3] == 255) return {r, g, b};
  const double a = p[3] / 255.0;
  return {255 + (r - 255) * a, 255 + (g - 255) * a, 255 + (b - 255) * a};
}
inline double yOf(const Rgb& c) { return c.r * 0.29889531 + c.g * 0.58662247 + c.b * 0.11448223; }
inline double iOf(const Rgb& c) { return c.r * 0.59597799 - c.g * 0.27417610 - c.b * 0.32180189; }
inline double qOf(const Rgb& c) { return c.r * 0.21147017 - c.g * 0.52261711 + c.b * 0.31114694; }

// Squared YIQ distance between two pixels (RGBA byte pointers).
inline double color_delta(const std::uint8_t* a, const std::uint8_t* b) {
  const Rgb x = blended(a), z = blended(b);
  const double y = yOf(x) - yOf(z), i = iOf(x) - iOf(z), q = qOf(x) - qOf(z);
  return 0.5053 * y * y + 0.299 * i * i + 0.1957 * q * q;
}
// Brightness difference only (signed), for the anti-aliasing test.
inline double brightness_delta(const std::uint8_t* a, const std::uint8_t* b) {
  return yOf(blended(a)) - yOf(blended(b));
}

inline std::uint8_t grey_of(const std::uint8_t* p) {
  const double y = p[0] * 0.29889531 + p[1] * 0.58662247 + p[2] * 0.11448223;
  const double v = 255 + (y - 255) * kDimAlpha * p[3] / 255.0;
  return static_cast<std::uint8_t>(v + 0.5);
}
inline std::uint32_t grey_word(const std::uint8_t* p) {
  const std::uint32_t g = grey_of(p);
  return g | (g << 8) | (g << 16) | 0xff000000u;
}

struct View {
  const std::uint8_t* px;
  int w, h;
  std::uint32_t at(int x, int y) const { return load(px + (static_cast<std::size_t>(y) * w + x) * 4); }
  const std::uint8_t* ptr(int x, int y) const { return px + (static_cast<std::size_t>(y) * w + x) * 4; }
};

// Three or more of the pixel's neighbours are exactly equal to it (a pixel on
// the picture's border counts one extra, as the missing side is "equal").
bool has_many_siblings(const View& img, int x1, int y1) {
  const int x0 = std::max(x1 - 1, 0), y0 = std::max(y1 - 1, 0);
  const int x2 = std::min(x1 + 1, img.w - 1), y2 = std::min(y1 + 1, img.h - 1);
  const std::uint32_t v = img.at(x1, y1);
  int zeroes = (x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2) ? 1 : 0;
  for (int x = x0; x <= x2; ++x)
    for (int y = y0; y <= y2; ++y) {
      if (x == x1 && y == y1) continue;
      if (img.at(x, y) == v && ++zeroes > 2) return true;
    }
  return false;
}

// Whether the pixel at (x1, y1) of `img` looks like anti-aliasing, judged
// with the neighbourhoods of both pictures.
bool antialiased(const View& img, const View& other, int x1, int y1) {
  const int x0 = std::max(x1 - 1, 0), y0 = std::max(y1 - 1, 0);
  const int x2 = std::min(x1 + 1, img.w - 1), y2 = std::min(y1 + 1, img.h - 1);
  const std::uint8_t* centre = img.ptr(x1, y1);
  int zeroes = (x1 == x0 || x1 == x2 || y1 == y0 || y1 == y2) ? 1 : 0;
  double min = 0, max = 0;
  int minX = 0, minY = 0, maxX = 0, maxY = 0;
  for (int x = x0; x <= x2; ++x)
    for (int y = y0; y <= y2; ++y) {
      if (x == x1 && y == y1) continue;
      const std::uint8_t* p = img.ptr(x, y);
      const double d = std::memcmp(centre, p, 4) == 0 ? 0.0 : brightness_delta(centre, p);
      if (d == 0) {
        if (++zeroes > 2) return false;
      } else if (d < min) {
        min = d;
        minX = x;
        minY = y;
      } else if (d > max) {
        max = d;
        maxX = x;
        maxY = y;
      }
    }
  if (min == 0 || max == 0) return false;
  return (has_many_siblings(img, minX, minY) && has_many_siblings(other, minX, minY)) ||
         (has_many_siblings(img, maxX, maxY) && has_many_siblings(other, maxX, maxY));
}

void check_buffer(const Image& img, const char* which) {
  if (img.width <= 0 || img.height <= 0 ||
      img.rgba.size() != static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4)
    throw ImageError(std::string("cannot compare: the ") + which + " image is " + std::to_string(img.width) + "x" +
                     std::to_string(img.height) + " with " + std::to_string(img.rgba.size()) + " bytes of RGBA");
}

// Different sizes: everything counts as changed. The diff covers both
// pictures: the dimmed baseline where the two agree exactly, red elsewhere.
CompareResult compare_sizes(const Image& a, const Image& b, bool want_diff) {
  CompareResult r;
  r.size_mismatch = true;
  r.total = std::max(static_cast<long long>(a.width) * a.height, static_cast<long long>(b.width) * b.height);
  r.differing = r.total;
  r.ratio = 1;
  if (!want_diff) return r;
  const int w = std::max(a.width, b.width), h = std::max(a.height, b.height);
  r.diff.width = w;
  r.diff.height = h;
  resize_pixels(r.diff.rgba, static_cast<std::size_t>(w) * h * 4);
  const View va{a.rgba.data(), a.width, a.height}, vb{b.rgba.data(), b.width, b.height};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      std::uint32_t out = kRed;
      if (x < a.width && y < a.height && x < b.width && y < b.height && va.at(x, y) == vb.at(x, y))
        out = grey_word(va.ptr(x, y));
      store(r.diff.rgba.data() + (static_cast<std::size_t>(y) * w + x) * 4, out);
    }
  return r;
}

}  // namespace

CompareResult compare(const Image& expected, const Image& actual, const CompareOptions& opt, bool want_diff) {
  check_buffer(expected, "expected");
  check_buffer(actual, "actual");
  if (!(opt.tolerance >= 0 && opt.tolerance <= 1))
    throw ImageError("cannot compare: tolerance " + std::to_string(opt.tolerance) + " is outside 0..1");
  if (expected.width != actual.width || expected.height != actual.height)
    return compare_sizes(expected, actual, want_diff);

  const int w = expected.width, h = expected.height;
  CompareResult r;
  r.total = static_cast<long long>(w) * h;
  const View a{expected.rgba.data(), w, h}, b{actual.rgba.data(), w, h};
  std::uint8_t* out = nullptr;
  if (want_diff) {
    r.diff.width = w;
    r.diff.height = h;
    resize_pixels(r.diff.rgba, static_cast<std::size_t>(w) * h * 4);
    out = r.diff.rgba.data();
  }
  const double max_delta = kMaxYiqDelta * opt.tolerance * opt.tolerance;
  const std::size_t row_bytes = static_cast<std::size_t>(w) * 4;

  for (int y = 0; y < h; ++y) {
    const std::uint8_t* ra = a.px + y * row_bytes;
    const std::uint8_t* rb = b.px + y * row_bytes;
    std::uint8_t* ro = out ? out + y * row_bytes : nullptr;
    if (std::memcmp(ra, rb, row_bytes) == 0) {
      if (ro)
        for (int x = 0; x < w; ++x) store(ro + x * 4, grey_word(ra + x * 4));
      continue;
    }
    for (int x = 0; x < w; ++x) {
      const std::uint8_t* pa = ra + x * 4;
      const std::uint8_t* pb = rb + x * 4;
      if (load(pa) == load(pb) || color_delta(pa, pb) <= max_delta) {
        if (ro) store(ro + x * 4, grey_word(pa));
        continue;
      }
      if (opt.detect_aa && (antialiased(a, b, x, y) || antialiased(b, a, x, y))) {
        if (ro) store(ro + x * 4, kYellow);
        continue;
      }
      ++r.differing;
      if (ro) store(ro + x * 4, kRed);
    }
  }
  r.ratio = r.total ? static_cast<double>(r.differing) / static_cast<double>(r.total) : 0;
  return r;
}

}  // namespace phoenix::image
