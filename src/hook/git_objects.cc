#include "hook/git_objects.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include "checks/measured.h"
#include "util/text.h"

namespace phoenix::hook {

namespace {

// One open file, closed when it goes.
struct File {
  int fd = -1;
  explicit File(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {}
  ~File() {
    if (fd >= 0) ::close(fd);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  uint64_t size() const {
    struct stat st {};
    return ::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<uint64_t>(st.st_size) : 0;
  }
  // Up to `n` bytes at `at`; fewer at the end of the file, "" on an error.
  std::string read_at(uint64_t at, size_t n) const {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd, out.data() + got, n - got, static_cast<off_t>(at + got));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return "";
      if (r == 0) break;
      got += static_cast<size_t>(r);
    }
    out.resize(got);
    return out;
  }
};

// A commit's header ("commit <size>\0", loose objects only) and first line
// ("tree <id>\n") fit in this; its compressed start is never longer.
constexpr size_t kHead = 160;
constexpr size_t kCompressedHead = 512;

// The first `want` bytes (or fewer: the whole) of the zlib stream `in`.
std::optional<std::string> inflate_head(std::string_view in, size_t want) {
  z_stream zs{};
  if (::inflateInit(&zs) != Z_OK) return std::nullopt;
  std::string out(want, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(want);
  const int rc = ::inflate(&zs, Z_SYNC_FLUSH);
  const size_t got = want - zs.avail_out;
  ::inflateEnd(&zs);
  if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) return std::nullopt;
  out.resize(got);
  return out;
}

// The tree a commit's content names on its first line, "tree <id>\n", with
// an id as long as the commit's own.
std::optional<std::string> tree_line(std::string_view body, size_t id_size) {
  if (!util::starts_with(body, "tree ") || body.size() < 5 + id_size + 1 || body[5 + id_size] != '\n')
    return std::nullopt;
  std::string tree(body.substr(5, id_size));
  if (!checks::is_tree_id(tree)) return std::nullopt;
  return tree;
}

std::optional<std::string> loose(const std::string& objects, const std::string& commit) {
  const File f(objects + "/" + commit.substr(0, 2) + "/" + commit.substr(2));
  if (f.fd < 0) return std::nullopt;
  const std::optional<std::string> head = inflate_head(f.read_at(0, kCompressedHead), kHead);
  if (!head || !util::starts_with(*head, "commit ")) return std::nullopt;
  const size_t nul = head->find('\0');
  if (nul == std::string::npos) return std::nullopt;
  return tree_line(std::string_view(*head).substr(nul + 1), commit.size());
}

uint32_t be32(const std::string& s, size_t at) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data() + at);
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

std::string unhex(const std::string& hex) {
  std::string out(hex.size() / 2, '\0');
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return out;
}

// Where the object `id` (raw bytes) starts in the pack of the version-2
// index `idx`; nullopt when the index does not list it or is not one.
std::optional<uint64_t> pack_offset(const File& idx, const std::string& id) {
  const std::string head = idx.read_at(0, 8 + 256 * 4);
  if (head.size() != 8 + 256 * 4 || head.compare(0, 4, "\377tOc") != 0 || be32(head, 4) != 2) return std::nullopt;
  const auto first = static_cast<unsigned char>(id[0]);
  const uint32_t count = be32(head, 8 + 255 * 4);
  const uint32_t from = first == 0 ? 0 : be32(head, 8 + (first - 1) * 4);
  const uint32_t to = be32(head, 8 + first * 4);
  const size_t n = id.size();
  // Each object takes n + 8 bytes of the index at least (id, CRC, offset):
  // a count the file cannot hold is a damaged index, not a read to try.
  if (from > to || to > count || 8 + 256 * 4 + uint64_t(count) * (n + 8) > idx.size()) return std::nullopt;
  // The ids of the fan-out's bucket, sorted: one read, then a search.
  const std::string ids = idx.read_at(8 + 256 * 4 + uint64_t(from) * n, size_t(to - from) * n);
  if (ids.size() != size_t(to - from) * n) return std::nullopt;
  size_t lo = 0, hi = to - from;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    const int c = ids.compare(mid * n, n, id);
    if (c == 0) {
      lo = mid;
      hi = mid + 1;
      break;
    }
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  if (lo >= hi || ids.compare(lo * n, n, id) != 0) return std::nullopt;
  const uint64_t offsets = 8 + 256 * 4 + uint64_t(count) * (n + 4);
  const std::string small = idx.read_at(offsets + (from + lo) * 4, 4);
  if (small.size() != 4) return std::nullopt;
  const uint32_t off = be32(small, 0);
  if (!(off & 0x80000000u)) return off;
  const std::string large = idx.read_at(offsets + uint64_t(count) * 4 + uint64_t(off & 0x7fffffffu) * 8, 8);
  if (large.size() != 8) return std::nullopt;
  return (uint64_t(be32(large, 0)) << 32) | be32(large, 4);
}

// A commit stored whole in one of the packs of `objects`.
std::optional<std::string> packed(const std::string& objects, const std::string& commit) {
  const std::string dir = objects + "/pack";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return std::nullopt;
  std::vector<std::string> indexes;
  while (const dirent* e = ::readdir(d))
    if (util::ends_with(std::string_view(e->d_name), ".idx")) indexes.emplace_back(e->d_name);
  ::closedir(d);
  const std::string id = unhex(commit);
  for (const std::string& name : indexes) {
    const File idx(dir + "/" + name);
    if (idx.fd < 0) continue;
    const std::optional<uint64_t> at = pack_offset(idx, id);
    if (!at) continue;
    const File pack(dir + "/" + name.substr(0, name.size() - 4) + ".pack");
    const std::string entry = pack.read_at(*at, kCompressedHead);
    // The entry's header: its type in bits 4-6 of the first byte, then
    // its size, 7 bits a byte while the top bit is set.
    size_t i = 0;
    if (entry.empty() || ((static_cast<unsigned char>(entry[0]) >> 4) & 7) != 1) return std::nullopt;  // a delta
    while (i < entry.size() && (static_cast<unsigned char>(entry[i]) & 0x80)) ++i;
    if (++i >= entry.size()) return std::nullopt;
    const std::optional<std::string> body = inflate_head(std::string_view(entry).substr(i), kHead);
    return body ? tree_line(*body, commit.size()) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> find_tree(const std::string& objects, const std::string& commit, int depth) {
  if (auto t = loose(objects, commit)) return t;
  if (auto t = packed(objects, commit)) return t;
  // git follows alternates five deep.
  if (depth >= 5) return std::nullopt;
  const File alternates(objects + "/info/alternates");
  if (alternates.fd < 0) return std::nullopt;
  for (const std::string& line : util::split_lines(alternates.read_at(0, 64 * 1024))) {
    if (line.empty() || line[0] == '#' || line[0] == '"') continue;  // quoted paths: git's to read
    const std::string other = line[0] == '/' ? line : objects + "/" + line;
    if (auto t = find_tree(other, commit, depth + 1)) return t;
  }
  return std::nullopt;
}

}  // namespace

std::optional<std::string> commit_tree(const std::string& objects_dir, const std::string& commit) {
  if (!checks::is_tree_id(commit)) return std::nullopt;
  try {
    return find_tree(objects_dir, commit, 0);
  } catch (const std::exception&) { return std::nullopt; }
}

}  // namespace phoenix::hook
