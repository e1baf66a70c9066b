// PNG decode and encode. decode_png() is the one entry point for untrusted
// bytes (baselines, screenshots, HTTP bodies, fuzzers): it walks the chunk
// structure itself -- signature, IHDR, every length and CRC, IEND -- and
// refuses a declared size over the limit before stb_image allocates anything.
// stb_image skips CRCs, so without this walk a flipped bit would decode into
// a silently different picture.
#include <cstring>
#include <limits>

#include <stb_image_write.h>

#include "image/image.h"
#include "image/stb_decode.h"
#include "util/atomic_file.h"

namespace phoenix::image {

namespace {

constexpr unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

std::uint32_t be32(const unsigned char* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

// CRC-32 (ISO-HDLC, as PNG uses), slice-by-8: every byte of every file we
// read goes through it, so it must not be the slow part of a decode.
struct CrcTables {
  std::uint32_t t[8][256];
  CrcTables() {
    for (std::uint32_t n = 0; n < 256; ++n) {
      std::uint32_t c = n;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
      t[0][n] = c;
    }
    for (std::uint32_t n = 0; n < 256; ++n)
      for (int s = 1; s < 8; ++s) t[s][n] = (t[s - 1][n] >> 8) ^ t[0][t[s - 1][n] & 0xff];
  }
};

std::uint32_t crc32(const unsigned char* p, std::size_t n) {
  static const CrcTables tables;
  const auto& t = tables.t;
  std::uint32_t c = 0xffffffffu;
  while (n >= 8) {
    std::uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;  // little-endian host assumed, as everywhere Phoenix runs
    c = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^ t[3][hi & 0xff] ^
        t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = t[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return c ^ 0xffffffffu;
}

std::string chunk_name(const unsigned char* p) {
  std::string s;
  for (int i = 0; i < 4; ++i) {
    unsigned char ch = p[i];
    s += (ch >= 0x21 && ch < 0x7f) ? static_cast<char>(ch) : '?';
  }
  return s;
}

[[noreturn]] void fail(const std::string& what, const std::string& why) { throw ImageError(what + ": " + why); }

// Checks structure and limits; returns the declared size.
void check_structure(const std::string& bytes, const std::string& what, long long max_pixels, int* width, int* height) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  const std::size_t n = bytes.size();
  if (n == 0) fail(what, "not a PNG (empty)");
  if (n < 8 || std::memcmp(p, kSignature, n < 8 ? n : 8) != 0) {
    if (std::memcmp(p, kSignature, n < 8 ? n : 8) == 0)
      fail(what, "truncated PNG (" + std::to_string(n) + " bytes, signature incomplete)");
    fail(what, "not a PNG (no PNG signature)");
  }
  // IHDR: length 13, type, width, height, depth, colour type, ..., CRC.
  if (n < 8 + 8 + 13 + 4) fail(what, "truncated PNG (" + std::to_string(n) + " bytes, no complete IHDR chunk)");
  if (be32(p + 8) != 13 || std::memcmp(p + 12, "IHDR", 4) != 0)
    fail(what, "corrupt PNG (first chunk is not a 13-byte IHDR)");
  const std::uint32_t w = be32(p + 16), h = be32(p + 20);
  if (w == 0 || h == 0) fail(what, "empty image (" + std::to_string(w) + "x" + std::to_string(h) + ")");
  if (w > 0x7fffffffu || h > 0x7fffffffu)
    fail(what, "corrupt PNG (IHDR declares " + std::to_string(w) + "x" + std::to_string(h) + ")");
  const long long pixels = static_cast<long long>(w) * static_cast<long long>(h);
  if (pixels > max_pixels)
    fail(what, "declared size " + std::to_string(w) + "x" + std::to_string(h) + " (" + std::to_string(pixels) +
                   " pixels) is over the limit of " + std::to_string(max_pixels) + " pixels");

  std::size_t pos = 8;
  bool seen_idat = false;
  for (;;) {
    if (pos + 8 > n) fail(what, "truncated PNG (" + std::to_string(n) + " bytes, ends before the IEND chunk)");
    const std::uint32_t len = be32(p + pos);
    const std::string name = chunk_name(p + pos + 4);
    if (len > 0x7fffffffu)
      fail(what, "corrupt PNG (" + name + " chunk at byte " + std::to_string(pos) + " declares length " +
                     std::to_string(len) + ")");
    if (pos + 12 + len > n)
      fail(what, "truncated PNG (" + name + " chunk at byte " + std::to_string(pos) + " needs " +
                     std::to_string(12 + std::size_t{len}) + " bytes, " + std::to_string(n - pos) + " left)");
    const std::uint32_t stored = be32(p + pos + 8 + len);
    if (crc32(p + pos + 4, 4 + std::size_t{len}) != stored)
      fail(what, "corrupt PNG (CRC mismatch in " + name + " chunk at byte " + std::to_string(pos) + ")");
    if (name == "IDAT") seen_idat = true;
    if (name == "IEND") break;
    pos += 12 + std::size_t{len};
  }
  if (!seen_idat) fail(what, "corrupt PNG (no IDAT chunk)");
  *width = static_cast<int>(w);
  *height = static_cast<int>(h);
}

}  // namespace

Image decode_png(const std::string& bytes, const std::string& what, long long max_pixels) {
  int dw = 0, dh = 0;
  check_structure(bytes, what, max_pixels, &dw, &dh);
  if (bytes.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    fail(what, "PNG of " + std::to_string(bytes.size()) + " bytes is too large to decode");
  Image img;
  const std::size_t size = static_cast<std::size_t>(dw) * static_cast<std::size_t>(dh) * 4;
  img.rgba.resize(size);
  int w = 0, h = 0;
  unsigned char* px = detail::stb_decode_rgba(reinterpret_cast<const unsigned char*>(bytes.data()),
                                              static_cast<int>(bytes.size()), &w, &h, img.rgba.data(), size);
  if (px == nullptr) {
    const char* why = detail::stb_failure();
    fail(what, std::string("corrupt PNG data (") + (why ? why : "undecodable") + ")");
  }
  if (px != img.rgba.data()) {  // decoded elsewhere (another colour type or depth)
    if (w == dw && h == dh) std::memcpy(img.rgba.data(), px, size);
    detail::stb_free(px);
  }
  if (w != dw || h != dh) fail(what, "corrupt PNG (decoded size differs from IHDR)");
  img.width = w;
  img.height = h;
  return img;
}

Image read_png(const std::string& path, long long max_pixels) {
  return decode_png(util::read_file(path), path, max_pixels);
}

std::string encode_png(const Image& img) {
  if (img.width <= 0 || img.height <= 0 ||
      img.rgba.size() != static_cast<std::size_t>(img.width) * static_cast<std::size_t>(img.height) * 4)
    throw ImageError("cannot encode a " + std::to_string(img.width) + "x" + std::to_string(img.height) +
                     " image from " + std::to_string(img.rgba.size()) + " bytes of RGBA");
  std::string out;
  auto sink = [](void* ctx, void* data, int size) {
    static_cast<std::string*>(ctx)->append(static_cast<const char*>(data), static_cast<std::size_t>(size));
  };
  if (!stbi_write_png_to_func(sink, &out, img.width, img.height, 4, img.rgba.data(), img.width * 4))
    throw ImageError("cannot encode a " + std::to_string(img.width) + "x" + std::to_string(img.height) + " PNG");
  return out;
}

void write_png(const std::string& path, const Image& img) { util::write_file_atomic(path, encode_png(img)); }

}  // namespace phoenix::image
