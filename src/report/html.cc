// The morning page: one self-contained HTML file. No network: the style is
// inline, the timeline is inline SVG, pictures are data: URIs. Incident
// notes are rendered by cmark-gfm (CommonMark): raw HTML inside a note is
// shown as text, the last attempted diff is coloured line by line, the
// evidence has the failing test names picked out, and the visual check's
// pictures stand side by side.
#include <cmark-gfm.h>
#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "report/render.h"
#include "util/atomic_file.h"
#include "util/text.h"

namespace phoenix::report {

namespace fs = std::filesystem;

std::string html_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

namespace {

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int k = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(k < 0 ? 0 : static_cast<size_t>(k));
  return out;
}

std::string mime_of(const fs::path& p) {
  std::string ext = p.extension().string();
  if (ext == ".png") return "image/png";
  if (ext == ".jpg" || ext == ".jpeg") return "image/jpeg";
  if (ext == ".gif") return "image/gif";
  return "";
}

using Node = cmark_node;

std::string literal(Node* n) {
  const char* s = cmark_node_get_literal(n);
  return s ? s : "";
}

// Replaces `old` by a raw HTML block of ours.
void replace_with_html(Node* old, const std::string& h) {
  Node* b = cmark_node_new(CMARK_NODE_HTML_BLOCK);
  cmark_node_set_literal(b, h.c_str());
  cmark_node_replace(old, b);
  cmark_node_free(old);
}

std::string diff_html(const std::string& diff) {
  std::string h = "<pre class=\"diff\"><code>";
  for (const auto& line : util::split_lines(diff)) {
    const char* cls = "";
    if (line.rfind("+++", 0) == 0 || line.rfind("---", 0) == 0 || line.rfind("diff ", 0) == 0 ||
        line.rfind("index ", 0) == 0)
      cls = "file";
    else if (line.rfind("@@", 0) == 0) cls = "hunk";
    else if (!line.empty() && line[0] == '+') cls = "add";
    else if (!line.empty() && line[0] == '-') cls = "del";
    h += line.empty() || !*cls ? html_escape(line) + "\n"
                               : std::string("<span class=\"") + cls + "\">" + html_escape(line) + "</span>\n";
  }
  return h + "</code></pre>\n";
}

// The evidence: failing test names marked, failing lines tinted.
std::string evidence_html(const std::string& text, const std::vector<std::string>& tests) {
  std::string h = "<pre class=\"evidence\"><code>";
  for (const auto& line : util::split_lines(text)) {
    std::string e = html_escape(line);
    for (const auto& t : tests) {
      std::string et = html_escape(t);
      if (et.empty()) continue;
      std::string out;
      size_t at = 0;
      for (size_t f = e.find(et); f != std::string::npos; f = e.find(et, at)) {
        out += e.substr(at, f - at) + "<mark class=\"test\">" + et + "</mark>";
        at = f + et.size();
      }
      e = out + e.substr(at);
    }
    bool failing = line.find("FAIL") != std::string::npos || line.find("Error") != std::string::npos ||
                   line.find("error:") != std::string::npos;
    h += failing && !e.empty() ? "<span class=\"fail\">" + e + "</span>\n" : e + "\n";
  }
  return h + "</code></pre>\n";
}

}  // namespace

std::string render_commonmark(const std::string& md) {
  Node* doc = cmark_parse_document(md.c_str(), md.size(), CMARK_OPT_DEFAULT);
  char* out = cmark_render_html(doc, CMARK_OPT_DEFAULT, nullptr);  // raw HTML is replaced by a comment
  std::string h = out ? out : "";
  free(out);
  cmark_node_free(doc);
  return h;
}

namespace {

// A note as an <article>: headings moved under the page's, raw HTML shown
// as text, the diff and the evidence ours, pictures inline side by side.
std::string incident_article(const Escalation& x) {
  std::string path = x.incident_abs;
  if (path.empty() || !util::path_exists(path))
    return "<p class=\"missing\">The note " + html_escape(x.incident) + " is gone.</p>\n";
  std::string md = util::read_file(path);
  std::vector<std::string> tests;
  for (const auto& line : util::split_lines(md)) {
    const std::string key = "- failing test: `";
    if (line.rfind(key, 0) == 0 && line.size() > key.size() + 1)
      tests.push_back(line.substr(key.size(), line.size() - key.size() - 1));
  }
  Node* doc = cmark_parse_document(md.c_str(), md.size(), CMARK_OPT_DEFAULT);
  std::vector<Node*> headings, raw, code, images;
  cmark_iter* it = cmark_iter_new(doc);
  for (cmark_event_type ev; (ev = cmark_iter_next(it)) != CMARK_EVENT_DONE;) {
    if (ev != CMARK_EVENT_ENTER) continue;
    Node* n = cmark_iter_get_node(it);
    switch (cmark_node_get_type(n)) {
      case CMARK_NODE_HEADING: headings.push_back(n); break;
      case CMARK_NODE_HTML_BLOCK:
      case CMARK_NODE_HTML_INLINE: raw.push_back(n); break;
      case CMARK_NODE_CODE_BLOCK: code.push_back(n); break;
      case CMARK_NODE_IMAGE: images.push_back(n); break;
      default: break;
    }
  }
  cmark_iter_free(it);
  for (Node* h : headings) cmark_node_set_heading_level(h, std::min(6, cmark_node_get_heading_level(h) + 2));
  for (Node* r : raw) {
    // A note's own HTML is text, never markup.
    bool block = cmark_node_get_type(r) == CMARK_NODE_HTML_BLOCK;
    Node* t = cmark_node_new(block ? CMARK_NODE_CODE_BLOCK : CMARK_NODE_TEXT);
    cmark_node_set_literal(t, literal(r).c_str());
    cmark_node_replace(r, t);
    cmark_node_free(r);
  }
  for (Node* c : code) {
    const char* info = cmark_node_get_fence_info(c);
    std::string lang = info ? info : "";
    if (lang == "diff") replace_with_html(c, diff_html(literal(c)));
    else replace_with_html(c, evidence_html(literal(c), tests));
  }
  // Pictures: one row of figures where the first of them stood.
  std::string row;
  Node* first_para = nullptr;
  std::string stem = fs::path(path).stem().string() + "-";
  for (Node* img : images) {
    const char* u = cmark_node_get_url(img);
    std::string rel = u ? u : "";
    fs::path file = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(path).parent_path() / rel;
    std::string caption = fs::path(rel).stem().string();
    if (caption.rfind(stem.substr(0, stem.size() - 1), 0) == 0 && caption.size() > stem.size())
      caption = caption.substr(stem.size());
    std::string mime = mime_of(file);
    std::error_code ec;
    if (mime.empty() || !fs::is_regular_file(file, ec))
      row += "<figure class=\"missing\"><figcaption>" + html_escape(caption) + ": " + html_escape(rel) +
             " is missing</figcaption></figure>";
    else
      row += "<figure><img alt=\"" + html_escape(caption) + "\" src=\"data:" + mime + ";base64," +
             base64(util::read_file(file.string())) + "\"><figcaption>" + html_escape(caption) +
             "</figcaption></figure>";
    Node* para = cmark_node_parent(img);
    if (para && cmark_node_get_type(para) == CMARK_NODE_PARAGRAPH) {
      if (!first_para) first_para = para;
      else {
        cmark_node_unlink(para);
        cmark_node_free(para);
      }
    }
  }
  if (first_para) replace_with_html(first_para, "<div class=\"pictures\">" + row + "</div>\n");
  char* out = cmark_render_html(doc, CMARK_OPT_UNSAFE, nullptr);  // our blocks only: the note's HTML became text above
  std::string h = out ? out : "";
  free(out);
  cmark_node_free(doc);
  return h;
}

std::string tick_label(long long ms, long long step) {
  std::string c = clock(ms);
  if (step < 60'000) {
    char b[8];
    std::snprintf(b, sizeof b, ":%02lld", (ms / 1000) % 60);
    c += b;
  }
  return c;
}

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", v);
  return b;
}

}  // namespace

std::string timeline_svg(const Night& n, int W, const std::string& id) {
  const char* lanes[] = {"iteration", "check", "heal", "wait", "escalation"};
  const char* names[] = {n.loop ? "iterations" : "runs", "checks", "heals", "waits", "escalation"};
  // Narrow (a phone): the same drawing with a smaller label column and
  // fewer ticks, so that its text keeps its size instead of shrinking.
  const bool narrow = W < 600;
  const int L = 5, left = narrow ? 78 : 110, right = narrow ? 12 : 20, top = 10, lane_h = 34, axis = 30;
  const long long max_ticks = narrow ? 4 : 8;
  const int H = top + L * lane_h + axis;
  long long t0 = n.start_ms, t1 = std::max(n.end_ms, n.start_ms + 1000);
  double span = static_cast<double>(t1 - t0), px = W - left - right;
  auto x_of = [&](long long t) { return left + px * static_cast<double>(std::clamp(t, t0, t1) - t0) / span; };
  std::string s = "<svg id=\"" + id + "\" class=\"timeline " + (narrow ? "narrow" : "wide") + "\" viewBox=\"0 0 " +
                  std::to_string(W) + " " + std::to_string(H) +
                  "\" width=\"100%\" role=\"img\" aria-label=\"timeline of the night\">\n";
  for (int i = 0; i < L; ++i) {
    int y = top + i * lane_h;
    s += "<rect class=\"lane\" x=\"" + std::to_string(left) + "\" y=\"" + std::to_string(y + 4) + "\" width=\"" +
         num(px) + "\" height=\"" + std::to_string(lane_h - 8) + "\"/>";
    s += "<text class=\"lane-label\" x=\"" + std::to_string(left - 8) + "\" y=\"" + std::to_string(y + lane_h / 2 + 5) +
         "\" text-anchor=\"end\">" + names[i] + "</text>\n";
  }
  // Axis ticks at a round step, at most about eight of them.
  const long long steps[] = {1000,    5000,    10'000,    30'000,    60'000,    300'000,
                             600'000, 900'000, 1'800'000, 3'600'000, 7'200'000, 10'800'000};
  long long step = steps[11];
  for (long long st : steps)
    if ((t1 - t0) / st <= max_ticks) {
      step = st;
      break;
    }
  int ay = top + L * lane_h;
  for (long long t = (t0 / step + 1) * step; t < t1; t += step) {
    double x = x_of(t);
    if (x > W - right - (narrow ? 26 : 30)) break;  // its label would be cut at the edge
    s += "<line class=\"tick\" x1=\"" + num(x) + "\" y1=\"" + std::to_string(top) + "\" x2=\"" + num(x) + "\" y2=\"" +
         std::to_string(ay + 4) + "\"/><text class=\"tick-label\" x=\"" + num(x) + "\" y=\"" + std::to_string(ay + 20) +
         "\" text-anchor=\"middle\">" + tick_label(t, step) + "</text>\n";
  }
  for (const auto& m : n.marks) {
    int lane = 0;
    for (int i = 0; i < L; ++i)
      if (m.kind == lanes[i]) lane = i;
    int y = top + lane * lane_h;
    std::string tip = "<title>" +
                      html_escape(m.label + " · " + clock(m.at_ms) +
                                  (m.end_ms > m.at_ms ? ", " + duration(m.end_ms - m.at_ms) : "")) +
                      "</title>";
    std::string cls = "mark " + m.kind + (m.ok ? " ok" : " bad");
    if (m.kind == "check" || m.kind == "escalation") {
      double cx = x_of(m.at_ms), cy = y + lane_h / 2.0, r = m.kind == "escalation" ? 9 : 6;
      s += "<path class=\"" + cls + "\" data-kind=\"" + m.kind + "\" d=\"M" + num(cx) + " " + num(cy - r) + " L" +
           num(cx + r) + " " + num(cy) + " L" + num(cx) + " " + num(cy + r) + " L" + num(cx - r) + " " + num(cy) +
           " Z\">" + tip + "</path>\n";
    } else {
      double x0 = x_of(m.at_ms), x1 = std::max(x_of(m.end_ms), x0 + 4);
      s += "<rect class=\"" + cls + "\" data-kind=\"" + m.kind + "\" x=\"" + num(x0) + "\" y=\"" +
           std::to_string(y + 7) + "\" width=\"" + num(x1 - x0) + "\" height=\"" + std::to_string(lane_h - 14) +
           "\" rx=\"2\">" + tip + "</rect>\n";
    }
  }
  return s + "</svg>\n";
}

namespace {

const char* kStyle = R"(
:root{--fg:#1d2125;--dim:#5b636b;--ok:#1a7f37;--bad:#d0181c;--warn:#9a6700;--line:#d0d7de;--bg2:#f6f8fa}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:#fff}
main{max-width:60rem;margin:0 auto;padding:1rem;overflow-wrap:break-word}
h1{font-size:1.5rem;margin:.2rem 0}h2{font-size:1.2rem;border-bottom:1px solid var(--line);padding-bottom:.2rem;margin-top:2rem}
.period{color:var(--dim);margin:0}
.verdict{font-size:1.25rem;font-weight:600;padding:.8rem 1rem;border-left:.4rem solid var(--ok);background:var(--bg2);margin:1rem 0}
.verdict.escalated{border-left-color:var(--bad)}
.needs li{margin:.3rem 0}
code{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:.9em;overflow-wrap:anywhere}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%}td,th{text-align:left;padding:.3rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
.outcome-done,.outcome-healed{color:var(--ok);font-weight:600}.outcome-skipped,.outcome-escalated{color:var(--bad);font-weight:600}
.dash{color:var(--dim)}
svg text{font:13px system-ui,sans-serif;fill:var(--dim)}
svg .lane{fill:var(--bg2)}svg .tick{stroke:var(--line)}
svg .iteration.ok,svg .run.ok{fill:#4c8bf5}svg .iteration.bad{fill:#9db9ec}svg .run.bad{fill:#e5534b}
svg .check.ok{fill:var(--ok)}svg .check.bad{fill:var(--bad)}
svg .heal{fill:#8250df}svg .wait{fill:#d4a72c}svg .escalation{fill:var(--bad)}
.legend{color:var(--dim);font-size:.9rem}
article.incident{border-left:.3rem solid var(--bad);padding:0 0 0 1rem;margin:1rem 0}
article.incident h3{margin-top:.5rem}
.meta{color:var(--dim)}
pre{background:var(--bg2);padding:.6rem;overflow-x:auto;font-size:.85rem;line-height:1.35}
pre.diff .add{color:#116329;background:#dafbe1;display:inline-block;min-width:100%}
pre.diff .del{color:#82071e;background:#ffebe9;display:inline-block;min-width:100%}
pre.diff .hunk{color:#0550ae}pre.diff .file{font-weight:600}
pre.evidence .fail{color:var(--bad)}mark.test{background:#fff8c5;color:#82071e;font-weight:700;padding:0 .15em}
.pictures{display:flex;flex-wrap:wrap;gap:.8rem}
.pictures figure{margin:0;flex:1 1 10rem;max-width:100%}
.pictures img{width:100%;height:auto;border:1px solid var(--line);image-rendering:pixelated}
.pictures figcaption{text-align:center;color:var(--dim)}
footer{margin:2rem 0 1rem;padding-top:.6rem;border-top:1px solid var(--line)}
svg.timeline{display:block}svg.timeline.narrow{display:none}
@media (max-width:40rem){main{padding:.6rem}.verdict{font-size:1.1rem}
svg.timeline.wide{display:none}svg.timeline.narrow{display:block}
table,tbody,tr,td{display:block;width:100%}thead{display:none}
tr{border-bottom:1px solid var(--line);padding:.35rem 0}
td{border:0;padding:.05rem 0 .05rem 6.5rem;position:relative;overflow-wrap:anywhere}
td::before{content:attr(data-label);color:var(--dim);font-weight:400;position:absolute;left:0}}
)";

// `x` (the shared words quote check names so) as <code>x</code>.
std::string code_spans(const std::string& escaped) {
  std::string out;
  size_t at = 0;
  for (size_t open = escaped.find('`'); open != std::string::npos; open = escaped.find('`', at)) {
    size_t close = escaped.find('`', open + 1);
    if (close == std::string::npos) break;
    out += escaped.substr(at, open - at) + "<code>" + escaped.substr(open + 1, close - open - 1) + "</code>";
    at = close + 1;
  }
  return out + escaped.substr(at);
}

std::string dash() { return "<span class=\"dash\">" + std::string(kDash) + "</span>"; }

std::string href(const std::string& from_dir, const std::string& target_abs, const std::string& shown) {
  if (from_dir.empty() || target_abs.empty()) return shown;
  std::error_code ec;
  fs::path rel = fs::relative(target_abs, from_dir, ec);
  if (ec || rel.empty()) return shown;
  return rel.string();
}

// The sessions the stop hook judged (none: no section).
std::string agent_sessions_section(const Night& n) {
  if (n.agent_sessions.empty()) return "";
  std::string h = "<section id=\"agent-sessions\">\n<h2>Agent sessions</h2>\n<ul>\n";
  for (const auto& a : n.agent_sessions)
    h += "<li>" + clock(a.end_ms) + ": " + html_escape(a.agent) + " <code>" + html_escape(a.session) +
         "</code>: " + html_escape(agent_session_text(a)) + "</li>\n";
  return h + "</ul>\n</section>\n";
}

// Flaky tests (failed, then passed run again) and what tasks also fixed.
std::string flaky_section(const Night& n) {
  std::string h;
  if (n.flaky.empty() && n.also_fixed.empty()) return h;  // a night without them reads as it always did
  h += "<section id=\"flaky\">\n<h2>Flaky tests</h2>\n";
  {
    h += "<ul>\n";
    for (const auto& f : n.flaky)
      h += "<li><code>" + html_escape(f.check) + "</code>: <code>" + html_escape(f.test) +
           "</code> failed, then passed " + "run again (" + std::to_string(f.times) +
           (f.times == 1 ? " time" : " times") + "); not counted</li>\n";
    for (const auto& a : n.also_fixed) h += "<li>" + html_escape(a) + "</li>\n";
    h += "</ul>\n";
  }
  h += "</section>\n";
  return h;
}

// The page's top: its <head> and the header (title, period, verdict, the
// known red), then what needs a person first.
std::string header_section(const Night& n) {
  const std::string title = report::title(n);
  std::string h =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>" +
      html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<main>\n";
  h += "<header>\n<h1>" + html_escape(title) + "</h1>\n<p class=\"period\">" + html_escape(period(n)) + "</p>\n";
  h += "<p id=\"verdict\" class=\"verdict" + std::string(n.escalations.empty() ? "" : " escalated") + "\">" +
       html_escape(verdict(n)) + "</p>\n";
  for (const auto& line : known_red_lines(n)) h += "<p class=\"known-red\">" + code_spans(html_escape(line)) + "</p>\n";
  h += "</header>\n";
  h += "<section id=\"needs\" class=\"needs\">\n<h2>Needs a person first</h2>\n<ol>\n";
  for (const auto& line : needs_person(n)) h += "<li>" + code_spans(html_escape(line)) + "</li>\n";
  return h + "</ol>\n</section>\n";
}

std::string timeline_section(const Night& n) {
  std::string h = "<section id=\"timeline\">\n<h2>Timeline</h2>\n";
  if (n.marks.empty()) return h + "<p>" + dash() + "</p>\n</section>\n";
  h += timeline_svg(n, 1000, "timeline-svg") + timeline_svg(n, 420, "timeline-svg-narrow");
  h += "<p class=\"legend\">Time runs left to right (" + html_escape(utc_offset(n.start_ms)) +
       "): " + (n.loop ? plural(n.iterations, "agent iteration", "agent iterations") : plural(n.runs, "run", "runs")) +
       ", " + plural(static_cast<long long>(n.heals.size()), "heal", "heals") + ", " +
       plural(static_cast<long long>(n.waits.size()), "rate-limit wait", "rate-limit waits") + ", " +
       plural(static_cast<long long>(n.escalations.size()), "escalation", "escalations") +
       ". Hover over or tap a mark for its time.</p>\n";
  return h + "</section>\n";
}

std::string task_row(const Task& t) {
  std::string commits;
  for (const auto& c : t.commits)
    commits += (commits.empty() ? "" : " ") + ("<code title=\"" + c + "\">" + short_sha(c) + "</code>");
  std::string outcome = html_escape(outcome_text(t));
  if (!t.incident.empty()) outcome += " (<a href=\"#" + html_escape(t.incident) + "\">note</a>)";
  std::string cost = t.cost_usd ? html_escape(money(t.cost_usd)) +
                                      (t.cost_why.empty() ? "" : " <small>(+ " + html_escape(t.cost_why) + ")</small>")
                                : dash() + " <small>" + html_escape(t.cost_why) + "</small>";
  return "<tr><td data-label=\"task\">" + html_escape(t.title) + "</td><td data-label=\"outcome\" class=\"outcome-" +
         outcome_name(t.outcome) + "\">" + outcome + "</td><td data-label=\"commits\">" +
         (commits.empty() ? dash() : commits) + "</td><td data-label=\"duration\">" + duration(t.end_ms - t.start_ms) +
         "</td><td data-label=\"turns\">" + std::to_string(t.turns) + "</td><td data-label=\"cost\">" + cost +
         "</td></tr>\n";
}

std::string tasks_section(const Night& n) {
  std::string h = "<section id=\"tasks\">\n<h2>Tasks</h2>\n";
  if (n.tasks.empty()) return h + "<p>" + dash() + "</p>\n</section>\n";
  h +=
      "<div class=\"scroll\"><table>\n<thead><tr><th>task</th><th>outcome</th><th>commits</th><th>duration</th><th>turns</th><th>cost</th></tr></thead>\n<tbody>\n";
  for (const auto& t : n.tasks) h += task_row(t);
  return h + "</tbody></table></div>\n</section>\n";
}

std::string heals_section(const Night& n) {
  std::string h = "<section id=\"heals\">\n<h2>Heals</h2>\n";
  if (n.heals.empty()) return h + "<p>" + dash() + "</p>\n</section>\n";
  h +=
      "<div class=\"scroll\"><table>\n<thead><tr><th>at</th><th>check</th><th>fixer</th><th>attempts</th><th>duration</th><th>replayed</th><th>fix</th></tr></thead>\n<tbody>\n";
  for (const auto& x : n.heals)
    h += "<tr><td data-label=\"at\">" + clock(x.end_ms) + "</td><td data-label=\"check\"><code>" +
         html_escape(x.check) + "</code></td><td data-label=\"fixer\">" + html_escape(x.fixer) +
         "</td><td data-label=\"attempts\">" + std::to_string(x.attempts) + "</td><td data-label=\"duration\">" +
         duration(x.end_ms - x.start_ms) + "</td><td data-label=\"replayed\">" +
         (x.replayed ? "from the journal" : "no") + "</td><td data-label=\"fix\">" +
         (x.commit.empty() ? dash() : "<code title=\"" + x.commit + "\">" + short_sha(x.commit) + "</code>") +
         "</td></tr>\n";
  return h + "</tbody></table></div>\n</section>\n";
}

std::string waits_section(const Night& n) {
  std::string h = "<section id=\"waits\">\n<h2>Rate-limit waits</h2>\n";
  if (n.waits.empty()) return h + "<p>" + dash() + "</p>\n</section>\n";
  h += "<ul>\n";
  for (const auto& w : n.waits)
    h += "<li>" + clock(w.at_ms) + ": " + html_escape(w.status) + ", waited " + duration(w.wait_ms) +
         (w.detail.empty() ? "" : " (" + html_escape(w.detail) + ")") + "</li>\n";
  return h + "</ul>\n</section>\n";
}

// Each escalation's note, rendered, with where it rolled back to and where
// the abandoned work is; links relative to out_dir.
std::string incidents_section(const Night& n, const std::string& out_dir) {
  std::string h = "<section id=\"incidents\">\n<h2>Incidents</h2>\n";
  if (n.escalations.empty()) h += "<p>" + dash() + "</p>\n";
  for (const auto& x : n.escalations) {
    h += "<article class=\"incident\" id=\"" + html_escape(x.incident) + "\">\n<p class=\"meta\">Note <a href=\"" +
         html_escape(href(out_dir, x.incident_abs, x.incident)) + "\"><code>" + html_escape(x.incident) + "</code></a>";
    if (!x.task.empty()) h += " · task “" + html_escape(x.task) + "”";
    if (!x.rolled_back_to.empty())
      h += " · rolled back to <code title=\"" + x.rolled_back_to + "\">" + short_sha(x.rolled_back_to) + "</code>";
    if (!x.abandoned_ref.empty()) h += " · abandoned work in <code>" + html_escape(x.abandoned_ref) + "</code>";
    else if (!x.abandoned.empty()) h += " · abandoned head <code>" + short_sha(x.abandoned) + "</code>";
    h += "</p>\n" + incident_article(x) + "</article>\n";
  }
  return h + "</section>\n";
}

}  // namespace

std::string html(const Night& n, const std::string& out_dir) {
  return header_section(n) + timeline_section(n) + tasks_section(n) + heals_section(n) + flaky_section(n) +
         waits_section(n) + agent_sessions_section(n) + incidents_section(n, out_dir) +
         "<section id=\"totals\">\n<h2>Totals</h2>\n<p>" + html_escape(totals(n)) + "</p>\n</section>\n" +
         "<footer>Next: <code>" + html_escape(next_command(n)) + "</code></footer>\n</main>\n</body>\n</html>\n";
}

}  // namespace phoenix::report
