#include "checks/visual.h"

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <future>

#include "checks/http.h"
#include "image/image.h"
#include "layout/paths.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"
#include "util/format.h"

namespace phoenix::checks {

namespace fs = std::filesystem;

namespace {

using util::secs;

std::string size_of(const image::Image& i) { return std::to_string(i.width) + "x" + std::to_string(i.height); }

// A private folder for one screenshot, removed afterwards.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "phoenix-shot-XXXXXX").string();
    if (!::mkdtemp(tmpl.data()))
      throw_errno("cannot create a folder for a screenshot in " + fs::temp_directory_path().string());
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

using util::replace_all;

// The picture to judge, or false with r filled in.
bool take_picture(const CheckSpec& c, const std::string& root, std::string& bytes, std::string& source,
                  SenseResult& r) {
  if (!c.screenshot.empty()) {
    TempDir dir;
    std::string out = dir.path + "/screenshot.png";
    util::ProcessOptions o;
    for (const auto& a : c.screenshot) o.argv.push_back(replace_all(replace_all(a, "{out}", out), "{url}", c.url));
    o.cwd = root;
    o.timeout_s = c.timeout_s;
    o.head_bytes = 2048;
    o.tail_bytes = 8192;
    source = "screenshot `" + util::join_argv(c.screenshot) + "`";
    util::ProcessResult p = util::run_process(o);
    std::string tail = util::to_valid_utf8(p.output.substr(p.output.size() > 4096 ? p.output.size() - 4096 : 0));
    if (p.not_found || p.not_executable) {
      r.signal = "screenshot command not found: " + c.screenshot[0];
      r.evidence = "no executable '" + c.screenshot[0] + "' for " + source + "\n";
      return false;
    }
    if (p.interrupted) {
      r.interrupted = true;
      r.signal = "interrupted";
      return false;
    }
    if (p.timed_out || p.exit_code != 0) {
      r.signal = p.timed_out ? "screenshot timeout after " + secs(c.timeout_s) + "s"
                             : "screenshot failed: exit=" + std::to_string(p.exit_code);
      r.evidence = source + "\n--- output (tail) ---\n" + tail;
      return false;
    }
    std::error_code ec;
    if (!fs::is_regular_file(out, ec)) {
      r.signal = "screenshot wrote no file";
      r.evidence = source + " exited 0 but wrote nothing at {out}\n--- output (tail) ---\n" + tail;
      return false;
    }
    bytes = util::read_file(out);
    return true;
  }
  source = "GET " + c.url;
  HttpRequest rq;
  rq.url = c.url;
  rq.read_timeout_s = c.timeout_s;
  rq.max_body_bytes = 128u << 20;
  try {
    HttpResponse res = http_request(rq);
    if (res.status != 200) {
      r.signal = "status " + std::to_string(res.status);
      r.evidence = source + " answered " + std::to_string(res.status) + ", not a picture\n" +
                   util::to_valid_utf8(util::utf8_head(res.body, 512)) + "\n";
      return false;
    }
    bytes = std::move(res.body);
  } catch (const HttpError& e) {
    r.signal = "unreachable: " + c.url;
    r.evidence = std::string(e.what()) + "\n";
    return false;
  }
  return true;
}

// No baseline in the work tree: record the picture, unless the baseline
// was deleted or the check never records.
SenseResult record_baseline(const CheckSpec& c, const std::string& root, const std::string& rel,
                            const std::string& bytes, const std::string& source, const image::Image& actual) {
  SenseResult r;
  std::string where;
  Missing m = missing_recording(c, root, rel, &where);
  if (m == Missing::kDeleted) {
    r.signal = "baseline deleted: " + rel;
    r.evidence = rel + " is in git (" + where + ") but missing from the work tree: restore it (git checkout -- " + rel +
                 "), or commit a new picture there to approve it.\n";
    r.artifacts.push_back({"actual.png", bytes});
    return r;
  }
  if (m == Missing::kRecordNever) {
    r.signal = "no baseline: " + rel;
    r.evidence = rel + " does not exist and the check says \"record\": \"never\".\n";
    r.artifacts.push_back({"actual.png", bytes});
    return r;
  }
  const std::string abs = root + "/" + rel;
  fs::create_directories(fs::path(abs).parent_path());
  util::write_file_atomic(abs, bytes);
  r.ok = true;
  r.signal = "recorded " + rel + " (" + size_of(actual) + ")";
  r.evidence = "recorded the picture from " + source + " as " + rel + " (commit it to approve it)\n";
  return r;
}

// The picture held against its baseline, with the three pictures beside
// the incident when they differ.
void compare_to_baseline(SenseResult& r, const CheckSpec& c, const std::string& rel, const image::Image& expected,
                         const std::string& baseline_bytes, const image::Image& actual, const std::string& bytes,
                         const std::string& source) {
  image::CompareOptions opt;
  opt.tolerance = c.tolerance;
  opt.detect_aa = c.ignore_anti_aliasing;
  image::CompareResult cmp = image::compare(expected, actual, opt, true);
  r.ok = !cmp.size_mismatch && cmp.ratio <= c.max_ratio;
  char pct[64];
  std::snprintf(pct, sizeof pct, "%.2f%%", cmp.ratio * 100);
  if (cmp.size_mismatch) r.signal = "size changed: " + size_of(expected) + " → " + size_of(actual);
  else
    r.signal = std::string(r.ok ? "pixels match: " : "pixels differ: ") + pct + " (" + std::to_string(cmp.differing) +
               " of " + std::to_string(cmp.total) + ")";
  char limits[128];
  std::snprintf(limits, sizeof limits, "tolerance %g, max_ratio %g, anti-aliasing %s", c.tolerance, c.max_ratio,
                c.ignore_anti_aliasing ? "ignored" : "counted");
  r.evidence = "baseline " + rel + " (" + size_of(expected) + ") vs " + source + " (" + size_of(actual) + ")\n" +
               limits + "\ndiffering pixels: " + std::to_string(cmp.differing) + " of " + std::to_string(cmp.total) +
               " (" + pct + ")\n";
  if (!r.ok) {
    r.artifacts.push_back({"expected.png", baseline_bytes});
    r.artifacts.push_back({"actual.png", bytes});
    if (!cmp.diff.rgba.empty()) r.artifacts.push_back({"diff.png", image::encode_png(cmp.diff)});
    r.evidence += "pictures: expected.png, actual.png" + std::string(cmp.diff.rgba.empty() ? "" : ", diff.png") +
                  " (beside the incident note)\n";
  }
}

}  // namespace

std::string baseline_path(const CheckSpec& spec) { return layout::baseline_file(spec.id); }

SenseResult sense_visual(const CheckSpec& c, const std::string& root) {
  SenseResult r;
  std::unique_ptr<Server> server;
  if (!boot_server(c, root, server, r)) return r;
  std::string bytes, source;
  bool got = take_picture(c, root, bytes, source, r);
  if (!got && server) r.evidence += "--- server log (tail) ---\n" + util::to_valid_utf8(server->log_tail());
  if (server) server->stop();
  if (!got) return r;

  // The baseline is decoded on a second thread beside the picture just
  // taken: at 4K decoding is most of a comparison's time.
  const std::string rel = baseline_path(c);
  const std::string abs = root + "/" + rel;
  std::string baseline_bytes;
  std::future<image::Image> baseline;
  if (util::path_exists(abs)) {
    baseline_bytes = util::read_file(abs);
    baseline = std::async(std::launch::async,
                          [&baseline_bytes, &rel] { return image::decode_png(baseline_bytes, "baseline " + rel); });
  }
  image::Image actual;
  try {
    actual = image::decode_png(bytes, "actual image from " + source);
  } catch (const image::ImageError& e) {
    r.signal = "bad image: actual";
    r.evidence = std::string(e.what()) + "\n(" + std::to_string(bytes.size()) + " bytes from " + source + ")\n";
    return r;  // `baseline`'s destructor waits for its thread
  }
  if (!baseline.valid()) return record_baseline(c, root, rel, bytes, source, actual);

  image::Image expected;
  try {
    expected = baseline.get();
  } catch (const image::ImageError& e) {
    r.signal = "bad image: baseline";
    r.evidence = std::string(e.what()) + "\n";
    return r;
  }
  compare_to_baseline(r, c, rel, expected, baseline_bytes, actual, bytes, source);
  return r;
}

}  // namespace phoenix::checks
