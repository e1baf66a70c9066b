#include "cli/check_args.h"

#include <iostream>

#include "trace/events.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::cli {

checks::CheckSpec resolve_check(const config::Config& cfg, const std::string& arg) {
  std::string t = util::trim(arg);
  if (!t.empty() && t[0] == '{') return checks::parse_check_text(t);
  if (const checks::CheckSpec* c = cfg.find(t)) return *c;
  std::string near = util::nearest(t, cfg.check_ids());
  if (cfg.path.empty())
    throw UsageError("no check '" + t + "': there is no phoenix.json here (give --check '{\"kind\":...}')");
  throw UsageError("no check '" + t + "' in " + cfg.path + (near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

void print_sense(const Context& ctx, const checks::SenseResult& r, bool to_stderr) {
  std::ostream& out = to_stderr ? std::cerr : std::cout;
  std::string mark = r.ok ? green(ctx, "ok ", to_stderr) : red(ctx, "RED", to_stderr);
  out << mark << "  " << bold(ctx, r.id, to_stderr) << "  " << r.signal
      << dim(ctx, "  (" + (r.cached.empty() ? std::to_string(r.duration_ms) + " ms" : "cached: " + r.cached) + ")",
             to_stderr)
      << "\n";
  if (r.ok || r.evidence.empty()) return;
  // The last 30 lines of evidence are what a person reads first.
  auto lines = util::split_lines(r.evidence);
  size_t from = lines.size() > 30 ? lines.size() - 30 : 0;
  if (from > 0) out << dim(ctx, "     | ... (" + std::to_string(from) + " lines above)", to_stderr) << "\n";
  for (size_t i = from; i < lines.size(); ++i) out << dim(ctx, "     | ", to_stderr) << lines[i] << "\n";
}

void trace_sense(Context& ctx, const checks::CheckSpec& spec, const checks::SenseResult& r, bool durable) {
  try {
    ctx.trace().append(
        trace::event::kSense,
        {{"check", spec.id}, {"kind", spec.kind}, {"ok", r.ok}, {"signal", r.signal}, {"duration_ms", r.duration_ms}},
        durable);
  } catch (const Error& e) {
    // A measurement stands without its trace line (a read-only checkout,
    // a full disk): said once, never a red check.
    static bool said = false;
    if (!said) std::cerr << "phoenix: note: not traced: " << e.what() << "\n";
    said = true;
  }
}

}  // namespace phoenix::cli
