// The one translation unit that compiles stb_image (PNG only) and
// stb_image_write. Size limits are checked by png.cc before stb sees a byte;
// STBI_MAX_DIMENSIONS is a second fence should a caller skip that.
// stb's decoder is most of the time of a visual check; at -O3 it takes a
// third less CPU than at the build's -O2 (bench/visual_bench.sh).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3")
#endif
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "image/stb_decode.h"

// stb_image's allocations go through here so that its final RGBA buffer can
// be the caller's: the first allocation of exactly the target's size is
// served from the target, and freeing the target is a no-op. Should that
// allocation turn out to be an intermediate (a 16-bit grey+alpha picture's
// is the same size), the caller copies the real output over it.
namespace {
struct Target {
  void* p = nullptr;
  std::size_t size = 0;
  bool handed = false;
};
thread_local Target target;
void* phx_malloc(std::size_t n) {
  if (target.p != nullptr && !target.handed && n == target.size) {
    target.handed = true;
    return target.p;
  }
  return std::malloc(n);
}
void phx_free(void* p) {
  if (p != nullptr && p == target.p) return;
  std::free(p);
}
void* phx_realloc(void* p, std::size_t n) {
  if (p != nullptr && p == target.p) {
    void* q = std::malloc(n);
    if (q != nullptr) std::memcpy(q, p, n < target.size ? n : target.size);
    return q;
  }
  return std::realloc(p, n);
}
}  // namespace
#define STBI_MALLOC(n) phx_malloc(n)
#define STBI_REALLOC(p, n) phx_realloc(p, n)
#define STBI_FREE(p) phx_free(p)
#define STBI_ONLY_PNG
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
#define STBI_NO_HDR
#define STBI_MAX_DIMENSIONS 65536
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>

// Encoding speed: stb_image_write's own deflate, and its trial of all five
// row filters, took three quarters of a 4K compare-and-write-diff (measured
// with bench/visual_bench.sh). zlib at its fastest level through stb's
// documented hook, and the "Up" filter for every row (screenshots repeat
// vertically; the files come out the size of stb's best guess), make
// encoding about ten times faster.
#include <zlib.h>
static unsigned char* phoenix_zlib_compress(unsigned char* data, int len, int* out_len, int) {
  uLongf size = compressBound(static_cast<uLong>(len));
  auto* out = static_cast<unsigned char*>(std::malloc(size));
  if (out == nullptr) return nullptr;
  if (compress2(out, &size, data, static_cast<uLong>(len), Z_BEST_SPEED) != Z_OK) {
    std::free(out);
    return nullptr;
  }
  *out_len = static_cast<int>(size);
  return out;
}
// stb_image_write's filtered copy of a 4K picture is 33 MB: asked of the
// kernel in huge pages (as image::resize_pixels does), not 8,000 page faults.
#include <sys/mman.h>
static void* phoenix_write_malloc(std::size_t n) {
  using phoenix::image::detail::kHugePage;
  if (n < 2 * kHugePage) return std::malloc(n);
  const std::size_t rounded = (n + kHugePage - 1) & ~(kHugePage - 1);
  void* p = std::aligned_alloc(kHugePage, rounded);
  if (p != nullptr) phoenix::image::detail::advise_huge_pages(p, rounded);
  return p;
}
#define STBIW_MALLOC(n) phoenix_write_malloc(n)
#define STBIW_REALLOC(p, n) std::realloc(p, n)
#define STBIW_FREE(p) std::free(p)
#define STBIW_ZLIB_COMPRESS phoenix_zlib_compress
#define STBI_WRITE_NO_STDIO
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

namespace {
[[maybe_unused]] const bool kUpFilter = (stbi_write_force_png_filter = 2, true);
}  // namespace

#pragma GCC diagnostic pop

namespace phoenix::image::detail {

unsigned char* stb_decode_rgba(const unsigned char* data, int len, int* w, int* h, unsigned char* out,
                               std::size_t out_size) {
  target = {out, out_size, false};
  int comp = 0;
  unsigned char* px = stbi_load_from_memory(data, len, w, h, &comp, 4);
  target = {};
  return px;
}

void stb_free(unsigned char* pixels) { std::free(pixels); }

void advise_huge_pages(void* begin, std::size_t bytes) {
  const auto at = reinterpret_cast<std::uintptr_t>(begin);
  const std::uintptr_t start = (at + kHugePage - 1) & ~(kHugePage - 1), end = (at + bytes) & ~(kHugePage - 1);
  if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);  // errors ignored
}

const char* stb_failure() { return stbi_failure_reason(); }

}  // namespace phoenix::image::detail
