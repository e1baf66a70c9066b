#include "image/image.h"

#include <gtest/gtest.h>
#include <stb_image_write.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <zlib.h>

#include "image/stb_decode.h"
#include "test_util.h"
#include "util/atomic_file.h"
#include "util/text.h"

namespace phoenix::image {
namespace {

// ---- A second, independent PNG writer: hand-built chunks, zlib "stored"
// blocks (no compression), a bitwise CRC. It lets the tests craft any header
// (0x0, 100000x100000, grey 16-bit) and any damage with valid or broken CRCs.

std::uint32_t slow_crc(const std::string& s) {
  std::uint32_t c = 0xffffffffu;
  for (unsigned char ch : s) {
    c ^= ch;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
  }
  return c ^ 0xffffffffu;
}
std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
std::string chunk(const std::string& type, const std::string& data) {
  return be32(static_cast<std::uint32_t>(data.size())) + type + data + be32(slow_crc(type + data));
}
std::string ihdr(std::uint32_t w, std::uint32_t h, int depth, int colour_type) {
  std::string d = be32(w) + be32(h);
  d += static_cast<char>(depth);
  d += static_cast<char>(colour_type);
  d += std::string(3, '\0');  // deflate, adaptive filtering, no interlace
  return chunk("IHDR", d);
}
std::string zlib_stored(const std::string& raw) {
  std::string z = "\x78\x01";
  std::size_t pos = 0;
  do {
    std::size_t n = std::min<std::size_t>(65535, raw.size() - pos);
    bool last = pos + n == raw.size();
    z += static_cast<char>(last ? 1 : 0);
    z += static_cast<char>(n & 0xff);
    z += static_cast<char>(n >> 8);
    z += static_cast<char>(~n & 0xff);
    z += static_cast<char>((~n >> 8) & 0xff);
    z += raw.substr(pos, n);
    pos += n;
  } while (pos < raw.size());
  std::uint32_t a = 1, b = 0;
  for (unsigned char ch : raw) {
    a = (a + ch) % 65521;
    b = (b + a) % 65521;
  }
  return z + be32((b << 16) | a);
}
const std::string kSig("\x89PNG\r\n\x1a\n", 8);
// rows: raw scanline bytes without the filter byte.
std::string hand_png(std::uint32_t w, std::uint32_t h, int depth, int colour_type,
                     const std::vector<std::string>& rows) {
  std::string raw;
  for (const auto& r : rows) raw += '\0' + r;
  return kSig + ihdr(w, h, depth, colour_type) + chunk("IDAT", zlib_stored(raw)) + chunk("IEND", "");
}

// ---- Pictures.

Image solid(int w, int h, std::uint32_t rgba) {
  Image img;
  img.width = w;
  img.height = h;
  img.rgba.resize(static_cast<std::size_t>(w) * h * 4);
  for (std::size_t i = 0; i < img.rgba.size(); i += 4) {
    img.rgba[i] = rgba >> 24;
    img.rgba[i + 1] = (rgba >> 16) & 0xff;
    img.rgba[i + 2] = (rgba >> 8) & 0xff;
    img.rgba[i + 3] = rgba & 0xff;
  }
  return img;
}
std::uint8_t* px(Image& img, int x, int y) { return &img.rgba[(static_cast<std::size_t>(y) * img.width + x) * 4]; }
const std::uint8_t* px(const Image& img, int x, int y) {
  return &img.rgba[(static_cast<std::size_t>(y) * img.width + x) * 4];
}
void set(Image& img, int x, int y, std::uint32_t rgb) {
  auto* p = px(img, x, y);
  p[0] = rgb >> 16;
  p[1] = (rgb >> 8) & 0xff;
  p[2] = rgb & 0xff;
  p[3] = 255;
}
std::uint32_t rgb_at(const Image& img, int x, int y) {
  auto* p = px(img, x, y);
  return (std::uint32_t{p[0]} << 16) | (std::uint32_t{p[1]} << 8) | p[2];
}

constexpr std::uint32_t kBarColours[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd};
constexpr int kBarHeights[] = {120, 180, 90, 200, 150};
constexpr int kW = 400, kH = 300, kBase = 260;
int bar_x(int i) { return 60 + i * 64; }
constexpr int kBarW = 40;

// A small chart: axes, five bars and an anti-aliased curve. `shift` moves
// the curve by a fraction of a pixel (the kind of noise two renderers of
// the same page produce); `bar0` recolours the first bar (a regression).
Image chart(double shift = 0, std::uint32_t bar0 = kBarColours[0]) {
  Image img = solid(kW, kH, 0xffffffffu);
  for (int y = 20; y <= kBase; ++y) set(img, 40, y, 0x000000);
  for (int x = 40; x < kW - 10; ++x) set(img, x, kBase, 0x000000);
  for (int i = 0; i < 5; ++i)
    for (int y = kBase - kBarHeights[i]; y < kBase; ++y)
      for (int x = bar_x(i); x < bar_x(i) + kBarW; ++x) set(img, x, y, i == 0 ? bar0 : kBarColours[i]);
  // Curve y = 40 + 15 sin(x/25), 1.6 px thick, coverage-blended over what is below.
  for (int x = 45; x < kW - 15; ++x) {
    const double cy = 40 + 15 * std::sin(x / 25.0) + shift;
    for (int y = static_cast<int>(cy) - 3; y <= static_cast<int>(cy) + 3; ++y) {
      const double cover = std::clamp(0.8 + 0.5 - std::fabs(y + 0.5 - cy), 0.0, 1.0);
      if (cover <= 0) continue;
      auto* p = px(img, x, y);
      const double line[3] = {40, 40, 40};
      for (int c = 0; c < 3; ++c) p[c] = static_cast<std::uint8_t>(std::lround(p[c] * (1 - cover) + line[c] * cover));
    }
  }
  return img;
}

// pixelmatch's dimmed baseline: luma blended 90% towards white.
std::uint8_t expected_grey(const std::uint8_t* p) {
  double y = p[0] * 0.29889531 + p[1] * 0.58662247 + p[2] * 0.11448223;
  return static_cast<std::uint8_t>(std::lround(255 + (y - 255) * 0.1 * p[3] / 255.0));
}

std::string error_of(const std::string& bytes, const std::string& what = "baseline chart.png",
                     long long max_pixels = kMaxPixels) {
  try {
    decode_png(bytes, what, max_pixels);
  } catch (const ImageError& e) { return e.what(); }
  return "";
}

// ---- Decode and encode.

TEST(Image, RoundTripThroughOurEncoderKeepsEveryPixelAndAlpha) {
  Image img = chart();
  for (int x = 0; x < 50; ++x) px(img, x, 5)[3] = static_cast<std::uint8_t>(x * 5);  // some alpha
  const std::string png = encode_png(img);
  ASSERT_EQ(png.compare(0, 8, kSig), 0);
  Image back = decode_png(png, "round trip");
  EXPECT_EQ(back.width, kW);
  EXPECT_EQ(back.height, kH);
  EXPECT_TRUE(back.rgba == img.rgba);
}

TEST(Image, WritePngIsAtomicAndReadPngReadsItBack) {
  test::ScopedTempDir tmp;
  const std::string path = tmp / "chart.png";
  write_png(path, chart());
  write_png(path, chart(0, 0x000000));  // replaced whole, no temp file left behind
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(tmp.path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
  Image back = read_png(path);
  EXPECT_EQ(rgb_at(back, bar_x(0) + 5, kBase - 5), 0x000000u);
  EXPECT_EQ(rgb_at(back, 5, 280), 0xffffffu);
}

TEST(Image, DecodesPngsFromAnIndependentWriterInEveryColourType) {
  // 2x2 RGB, 8-bit.
  Image rgb = decode_png(
      hand_png(2, 2, 8, 2, {std::string("\xff\x00\x00\x00\xff\x00", 6), std::string("\x00\x00\xff\x10\x20\x30", 6)}),
      "rgb");
  ASSERT_EQ(rgb.width, 2);
  EXPECT_EQ(rgb_at(rgb, 0, 0), 0xff0000u);
  EXPECT_EQ(rgb_at(rgb, 1, 0), 0x00ff00u);
  EXPECT_EQ(rgb_at(rgb, 0, 1), 0x0000ffu);
  EXPECT_EQ(rgb_at(rgb, 1, 1), 0x102030u);
  EXPECT_EQ(px(rgb, 1, 1)[3], 255);
  // 3x1 grey, 16-bit: reduced to 8 bits per channel.
  Image grey = decode_png(hand_png(3, 1, 16, 0, {std::string("\x00\x00\x80\x00\xff\xff", 6)}), "grey16");
  EXPECT_EQ(rgb_at(grey, 0, 0), 0x000000u);
  EXPECT_EQ(rgb_at(grey, 1, 0), 0x808080u);
  EXPECT_EQ(rgb_at(grey, 2, 0), 0xffffffu);
  // 2x2 grey+alpha, 16-bit: stb's 16-bit buffer has the size of the RGBA
  // result, so this checks the decoder copies the real output over it.
  Image ga = decode_png(hand_png(2, 2, 16, 4,
                                 {std::string("\x10\x00\xff\xff\x20\x00\x80\x00", 8),
                                  std::string("\x30\x00\x00\x00\xf0\x00\xff\xff", 8)}),
                        "grey-alpha16");
  EXPECT_EQ(rgb_at(ga, 0, 0), 0x101010u);
  EXPECT_EQ(px(ga, 0, 0)[3], 255);
  EXPECT_EQ(rgb_at(ga, 1, 0), 0x202020u);
  EXPECT_EQ(px(ga, 1, 0)[3], 0x80);
  EXPECT_EQ(rgb_at(ga, 0, 1), 0x303030u);
  EXPECT_EQ(px(ga, 0, 1)[3], 0);
  EXPECT_EQ(rgb_at(ga, 1, 1), 0xf0f0f0u);
  // 1x1 RGBA, 8-bit, half transparent.
  Image rgba = decode_png(hand_png(1, 1, 8, 6, {std::string("\x11\x22\x33\x80", 4)}), "rgba");
  EXPECT_EQ(rgb_at(rgba, 0, 0), 0x112233u);
  EXPECT_EQ(px(rgba, 0, 0)[3], 0x80);
}

TEST(Image, DecodesStbWriterOutputWithFewerChannels) {
  // stb_image_write's own RGB and grey output (not through encode_png).
  std::string out;
  auto sink = [](void* ctx, void* data, int n) { static_cast<std::string*>(ctx)->append(static_cast<char*>(data), n); };
  const unsigned char grey[6] = {0, 50, 100, 150, 200, 250};
  ASSERT_TRUE(stbi_write_png_to_func(sink, &out, 3, 2, 1, grey, 3));
  Image img = decode_png(out, "grey");
  EXPECT_EQ(img.width, 3);
  EXPECT_EQ(img.height, 2);
  EXPECT_EQ(rgb_at(img, 1, 1), 0xc8c8c8u);  // 200
  EXPECT_EQ(px(img, 1, 1)[3], 255);
}

TEST(Image, RefusesTruncatedPngsNamingTheSource) {
  const std::string png = encode_png(chart());
  for (std::size_t keep : {std::size_t{5}, std::size_t{20}, std::size_t{40}, png.size() / 2, png.size() - 1}) {
    const std::string e = error_of(png.substr(0, keep));
    EXPECT_EQ(e.rfind("baseline chart.png: truncated PNG", 0), 0u) << keep << ": " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos);
  }
}

// 8-bit RGB and RGBA are decoded by Phoenix's own path (zlib's inflate and
// its own unfilter); stb_image decodes the same bytes as the oracle. Rows of
// random bytes under random filter types (every filtered row is valid), in
// stored and in compressed zlib streams split over several IDAT chunks.
TEST(Image, OwnDecodeOfEightBitRgbAndRgbaMatchesStbImageForEveryFilter) {
  std::uint32_t seed = 12345;
  auto rnd = [&] { return seed = seed * 1664525u + 1013904223u; };
  for (int colour : {2, 6})
    for (int w : {1, 2, 5, 33}) {
      const int bpp = colour == 6 ? 4 : 3, h = 7;
      std::string raw;
      for (int y = 0; y < h; ++y) {
        raw += static_cast<char>(rnd() % 5);  // None, Sub, Up, Average, Paeth
        for (int i = 0; i < w * bpp; ++i) raw += static_cast<char>(rnd() >> 24);
      }
      uLongf zn = compressBound(raw.size());
      std::string z(zn, '\0');
      ASSERT_EQ(
          compress2(reinterpret_cast<Bytef*>(z.data()), &zn, reinterpret_cast<const Bytef*>(raw.data()), raw.size(), 9),
          Z_OK);
      z.resize(zn);
      const std::string split = chunk("IDAT", z.substr(0, z.size() / 3)) + chunk("IDAT", z.substr(z.size() / 3));
      for (const std::string& png : {kSig + ihdr(w, h, 8, colour) + chunk("IDAT", zlib_stored(raw)) + chunk("IEND", ""),
                                     kSig + ihdr(w, h, 8, colour) + split + chunk("IEND", "")}) {
        Image mine = decode_png(png, "random");
        std::vector<unsigned char> theirs(static_cast<std::size_t>(w) * h * 4);
        int sw = 0, sh = 0;
        unsigned char* px =
            detail::stb_decode_rgba(reinterpret_cast<const unsigned char*>(png.data()), static_cast<int>(png.size()),
                                    &sw, &sh, theirs.data(), theirs.size());
        ASSERT_NE(px, nullptr) << detail::stb_failure();
        if (px != theirs.data()) {
          std::memcpy(theirs.data(), px, theirs.size());
          detail::stb_free(px);
        }
        ASSERT_EQ(mine.width, w);
        ASSERT_EQ(mine.height, h);
        EXPECT_TRUE(std::equal(theirs.begin(), theirs.end(), mine.rgba.begin())) << "colour " << colour << " w " << w;
      }
    }
  // An unknown filter type is corrupt data, said as such.
  std::string bad_filter =
      kSig + ihdr(1, 1, 8, 6) + chunk("IDAT", zlib_stored(std::string("\x05\x01\x02\x03\x04", 5))) + chunk("IEND", "");
  EXPECT_NE(error_of(bad_filter).find("corrupt PNG data (row 0 has filter type 5)"), std::string::npos)
      << error_of(bad_filter);
}

TEST(Image, RefusesACorruptChunkByItsCrc) {
  std::string png = encode_png(chart());
  png[png.size() / 2] ^= 0x40;  // inside the image data
  const std::string e = error_of(png);
  EXPECT_NE(e.find("baseline chart.png: corrupt PNG (CRC mismatch in IDAT chunk at byte"), std::string::npos) << e;
  std::string header = encode_png(chart());
  header[18] ^= 1;  // width inside IHDR
  EXPECT_NE(error_of(header).find("CRC mismatch in IHDR"), std::string::npos) << error_of(header);
}

TEST(Image, RefusesCorruptImageDataEvenWithValidCrcs) {
  // A well-formed chunk structure whose IDAT is not a zlib stream.
  const std::string bad = kSig + ihdr(4, 4, 8, 6) + chunk("IDAT", "this is not deflate data") + chunk("IEND", "");
  const std::string e = error_of(bad);
  EXPECT_EQ(e.rfind("baseline chart.png: corrupt PNG data (", 0), 0u) << e;
  // Too little data for the declared rows.
  const std::string short_rows = hand_png(4, 4, 8, 6, {std::string(16, 'x')});
  EXPECT_EQ(error_of(short_rows).rfind("baseline chart.png: corrupt PNG data (", 0), 0u) << error_of(short_rows);
  // No IDAT at all.
  EXPECT_NE(error_of(kSig + ihdr(4, 4, 8, 6) + chunk("IEND", "")).find("no IDAT"), std::string::npos);
}

TEST(Image, RefusesBodiesThatAreNotPngs) {
  EXPECT_EQ(error_of("<html><body>502 Bad Gateway</body></html>", "screenshot http://127.0.0.1:3000/chart.png"),
            "screenshot http://127.0.0.1:3000/chart.png: not a PNG (no PNG signature)");
  EXPECT_EQ(error_of(""), "baseline chart.png: not a PNG (empty)");
  std::string jpeg("\xff\xd8\xff\xe0\x00\x10JFIF\x00", 11);
  EXPECT_EQ(error_of(jpeg), "baseline chart.png: not a PNG (no PNG signature)");
  // A PNG signature followed by something else than IHDR.
  EXPECT_NE(error_of(kSig + chunk("IDAT", std::string(20, 'x')) + chunk("IEND", "")).find("not a 13-byte IHDR"),
            std::string::npos);
}

TEST(Image, RefusesEmptyImages) {
  EXPECT_EQ(error_of(kSig + ihdr(0, 0, 8, 6) + chunk("IDAT", zlib_stored("")) + chunk("IEND", "")),
            "baseline chart.png: empty image (0x0)");
  EXPECT_EQ(error_of(kSig + ihdr(0, 10, 8, 6) + chunk("IDAT", zlib_stored("")) + chunk("IEND", "")),
            "baseline chart.png: empty image (0x10)");
  EXPECT_THROW(encode_png(Image{}), ImageError);
}

TEST(Image, RefusesAHugeDeclaredSizeFromTheHeaderAlone) {
  // 100000x100000 RGBA would need 40 GB; the header alone is enough to refuse.
  const std::string huge =
      kSig + ihdr(100000, 100000, 8, 6) + chunk("IDAT", zlib_stored(std::string(64, '\0'))) + chunk("IEND", "");
  EXPECT_EQ(error_of(huge),
            "baseline chart.png: declared size 100000x100000 (10000000000 pixels) is over the limit of " +
                std::to_string(kMaxPixels) + " pixels");
  // Refused before the chunks are even read: the header is all there is.
  EXPECT_NE(error_of(huge.substr(0, 33)).find("declared size 100000x100000"), std::string::npos);
  // The limit is the caller's: a 20x20 picture over a 100-pixel limit.
  EXPECT_NE(error_of(encode_png(solid(20, 20, 0xffffffffu)), "x", 100).find("(400 pixels) is over the limit of 100"),
            std::string::npos);
}

TEST(Image, HugeDeclaredSizeCostsNoMemory) {
  test::ScopedTempDir tmp;
  // Within stb_image's own dimension fence (65536), so only Phoenix's limit stands
  // between this header and a 14 GB allocation.
  test::write(
      tmp.path(), "huge.png",
      kSig + ihdr(60000, 60000, 8, 6) + chunk("IDAT", zlib_stored(std::string(4096, '\0'))) + chunk("IEND", ""));
  auto r = test::run({test::test_tool("maxrss"), test::test_tool("png_probe"), tmp / "huge.png"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("huge.png: declared size 60000x60000"), std::string::npos) << r.output;
  const auto at = r.output.find("maxrss_kb=");
  ASSERT_NE(at, std::string::npos) << r.output;
  EXPECT_LT(std::stol(r.output.substr(at + 10)), 64 * 1024) << r.output;
  // The same tool decodes a real picture.
  write_png(tmp / "ok.png", chart());
  auto ok = test::run({test::test_tool("png_probe"), tmp / "ok.png"});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_NE(ok.output.find("400x300"), std::string::npos) << ok.output;
}

// ---- Comparison.

TEST(Image, IdenticalPicturesDoNotDifferAndTheDiffIsTheDimmedBaseline) {
  const Image a = chart();
  auto r = compare(a, chart(), {}, true);
  EXPECT_FALSE(r.size_mismatch);
  EXPECT_EQ(r.differing, 0);
  EXPECT_EQ(r.total, kW * kH);
  EXPECT_EQ(r.ratio, 0);
  ASSERT_EQ(r.diff.width, kW);
  ASSERT_EQ(r.diff.height, kH);
  for (int y = 0; y < kH; y += 7)
    for (int x = 0; x < kW; x += 3) {
      const std::uint8_t g = expected_grey(px(a, x, y));
      const auto* d = px(r.diff, x, y);
      ASSERT_TRUE(d[0] == g && d[1] == g && d[2] == g && d[3] == 255) << x << "," << y;
    }
  // The first bar's blue (#1f77b4) shows as a light grey, white stays white.
  EXPECT_EQ(rgb_at(r.diff, bar_x(0) + 1, kBase - 1), 0xefefefu);
  EXPECT_EQ(rgb_at(r.diff, 5, 5), 0xffffffu);
  EXPECT_TRUE(compare(a, a, {}, false).diff.rgba.empty());
}

TEST(Image, ToleranceAbsorbsAntiAliasingNoise) {
  const Image a = chart(0), b = chart(0.35);
  ASSERT_FALSE(a.rgba == b.rgba);
  auto with_aa = compare(a, b, {0.1, true}, true);
  EXPECT_LE(with_aa.ratio, 0.001) << with_aa.differing << " pixels";
  // Not vacuous: the curve's pixels did change, and without anti-aliasing
  // detection (or with no tolerance) they count.
  auto without_aa = compare(a, b, {0.1, false}, false);
  EXPECT_GT(without_aa.ratio, 0.001) << without_aa.differing;
  auto strict = compare(a, b, {0.0, true}, false);
  EXPECT_GT(strict.differing, with_aa.differing);
  // The anti-aliased pixels are drawn yellow and nothing is red.
  long long yellow = 0, red = 0;
  for (std::size_t i = 0; i < with_aa.diff.rgba.size(); i += 4) {
    std::uint32_t v =
        (std::uint32_t{with_aa.diff.rgba[i]} << 16) | (with_aa.diff.rgba[i + 1] << 8) | with_aa.diff.rgba[i + 2];
    yellow += v == 0xffff00u;
    red += v == 0xff0000u;
  }
  EXPECT_GT(yellow, 100);
  EXPECT_EQ(red, with_aa.differing);
}

TEST(Image, ToleranceAbsorbsOneLevelEncoderNoise) {
  Image a = chart(), b = chart();
  for (std::size_t i = 0; i < b.rgba.size(); i += 4 * 3)
    for (int c = 0; c < 3; ++c) b.rgba[i + c] = b.rgba[i + c] > 0 ? b.rgba[i + c] - 1 : 1;
  EXPECT_EQ(compare(a, b, {0.1, true}, false).differing, 0);
  EXPECT_GT(compare(a, b, {0.0, false}, false).differing, 10000);
}

TEST(Image, ColourRegressionOfAChartAreaIsCaughtAndDrawnRed) {
  const Image a = chart(), b = chart(0.35, 0x17a2b8);  // bar 1 turns teal, and the curve's AA noise too
  auto r = compare(a, b, {0.1, true}, true);
  // Every pixel of the bar counts, on top of the few curve pixels the
  // tolerance leaves (the same as without the regression).
  const long long noise = compare(a, chart(0.35), {0.1, true}, false).differing;
  EXPECT_LE(noise, 120);
  EXPECT_EQ(r.differing, kBarW * kBarHeights[0] + noise);
  EXPECT_GT(r.ratio, 0.001);
  for (int y = kBase - kBarHeights[0]; y < kBase; ++y)
    for (int x = bar_x(0); x < bar_x(0) + kBarW; ++x) ASSERT_EQ(rgb_at(r.diff, x, y), 0xff0000u) << x << "," << y;
  // The other bars are the dimmed baseline.
  EXPECT_EQ(rgb_at(r.diff, bar_x(1) + 3, kBase - 3), expected_grey(px(a, bar_x(1) + 3, kBase - 3)) * 0x010101u);
  // A large tolerance lets the same change through: the threshold is the knob.
  EXPECT_EQ(compare(a, b, {1.0, true}, false).differing, 0);
}

TEST(Image, TransparencyIsJudgedOverWhite) {
  Image a = solid(8, 8, 0xffffffffu), b = solid(8, 8, 0x00000000u);  // opaque white vs transparent black
  EXPECT_EQ(compare(a, b, {0.0, false}, false).differing, 0);
  Image c = solid(8, 8, 0x000000ffu);  // opaque black
  EXPECT_EQ(compare(b, c, {0.1, false}, false).differing, 64);
}

TEST(Image, SizeChangeIsAFullMismatch) {
  const Image a = solid(10, 10, 0x336699ffu), b = solid(10, 12, 0x336699ffu);
  auto r = compare(a, b, {}, true);
  EXPECT_TRUE(r.size_mismatch);
  EXPECT_EQ(r.total, 120);
  EXPECT_EQ(r.differing, 120);
  EXPECT_EQ(r.ratio, 1);
  ASSERT_EQ(r.diff.width, 10);
  ASSERT_EQ(r.diff.height, 12);
  EXPECT_EQ(rgb_at(r.diff, 3, 11), 0xff0000u);  // only in the actual picture
  EXPECT_EQ(rgb_at(r.diff, 3, 3), expected_grey(px(a, 3, 3)) * 0x010101u);
}

TEST(Image, CompareRefusesMalformedBuffersAndTolerance) {
  Image bad = solid(4, 4, 0xffffffffu);
  bad.rgba.pop_back();
  EXPECT_THROW(compare(bad, solid(4, 4, 0xffffffffu), {}, false), ImageError);
  EXPECT_THROW(compare(solid(4, 4, 0), solid(4, 4, 0), {1.5, true}, false), ImageError);
}

}  // namespace
}  // namespace phoenix::image
