// `phoenix report` after a real night: phoenix-loop drives the scripted
// agent through tasks done, a task healed, a rate limit waited out and an
// escalation that stops the loop; then the terminal and Markdown reports
// are read line by line and the HTML page is rendered by headless chromium
// at 1200 and 400 px wide. (tests/unit/report_test.cc covers a night with
// bisect and journal heals and a visual check's pictures, event by event.)
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "image/image.h"
#include "test_util.h"
#include "util/json.h"
#include "util/subprocess.h"
#include "util/text.h"

#ifdef PHOENIX_LOOP_BIN

namespace phoenix::test {
namespace {

namespace fs = std::filesystem;
using util::Json;

const std::vector<std::pair<std::string, std::string>> kUtc = {{"TZ", "UTC"}, {"NO_COLOR", "1"}};

size_t columns(const std::string& line) {
  size_t w = 0;
  for (unsigned char c : line) w += (c & 0xC0) != 0x80;
  return w;
}

// Where `want` lines appear, in order, among `got` (each a prefix match).
void expect_in_order(const std::vector<std::string>& got, const std::vector<std::string>& want,
                     const std::string& all) {
  size_t at = 0;
  for (const auto& w : want) {
    size_t i = at;
    while (i < got.size() && got[i].rfind(w, 0) != 0) ++i;
    EXPECT_LT(i, got.size()) << "missing (in order): \"" << w << "\" in\n" << all;
    if (i < got.size()) at = i + 1;
  }
}

class ReportNight : public ::testing::Test {
 protected:
  static inline ScopedTempDir* tmp = nullptr;
  static inline std::string repo;
  static inline CliRun night{0, ""};

  // One night for the whole suite: a real loop takes seconds.
  static void SetUpTestSuite() {
    tmp = new ScopedTempDir();
    repo = init_repo(*tmp / "repo");
    write(repo, "src.txt", "fine\n");
    write(repo, ".gitignore", ".phoenix/*\n!.phoenix/baselines/\n");
    // The chart the visual check photographs (a copy of a picture in the
    // tree), its approved baseline, and the picture the last task paints.
    image::Image blue{48, 32, {}}, red{48, 32, {}};
    for (int i = 0; i < 48 * 32; ++i) {
      blue.rgba.insert(blue.rgba.end(), {40, 90, 200, 255});
      red.rgba.insert(red.rgba.end(), {i % 48 < 24 ? std::uint8_t(40) : std::uint8_t(220), 90, 60, 255});
    }
    fs::create_directories(repo + "/.phoenix/baselines");
    fs::create_directories(repo + "/assets");
    image::write_png(repo + "/chart.png", blue);
    image::write_png(repo + "/.phoenix/baselines/chart.png", blue);
    image::write_png(repo + "/assets/red.png", red);
    write(repo, "TASKS.md",
          "# Tonight\n\n- [ ] easy: add a line\n- [ ] healable: add a feature\n- [ ] easy: add another line\n"
          "- [ ] unfixable: recolour the chart\n");
    std::string counter = *tmp / "limit-counter";
    std::string script = "first 1 " + counter +
                         " rate-limit 1;"
                         "if-prompt \"" +
                         kTaskIs +
                         "easy\" append work.txt 'x\\n';"
                         "if-prompt \"" +
                         kTaskIs +
                         "healable\" write src.txt 'BROKEN\\n';"
                         "if-prompt \"" +
                         kTaskIs +
                         "healable\" write feature.txt 'feature\\n';"
                         "if-prompt \"" +
                         kTaskIs + "unfixable\" copy assets/red.png chart.png";
    Json cfg = {
        {"checks",
         {{{"id", "nobreak"},
           {"kind", "regex_in_file"},
           {"target", "src.txt"},
           {"pattern", "BROKEN"},
           {"expect", "absent"},
           {"editable", {"src.txt"}}},
          {{"id", "chart"},
           {"kind", "visual"},
           {"target", "chart.png"},
           {"screenshot", {"cp", "chart.png", "{out}"}},
           {"editable", {"chart.png"}}}}},
        {"fixers", {"journal", "bisect", "harness"}},
        {"harness",
         {{"command", {test_tool("scripted_agent"), "--prompt-file", "{prompt_file}"}},
          {"timeout_s", 60},
          {"env", {{"PHOENIX_AGENT_SCRIPT", script}}}}},
        {"loop", {{"tasks", "TASKS.md"}, {"heartbeat_s", 0.05}, {"no_progress_limit", 3}, {"on_escalate", "stop"}}}};
    write(repo, "phoenix.json", cfg.dump(2));
    commit_all(repo, "initial");
    run_phoenix(repo, {"run"});  // green: the first commit is known-good
    // Before the night, a change of the user's breaks `nobreak`: the loop's
    // baseline is red, and bisect finds and reverts it. The healable task
    // breaks it the same way again: the journal replays that fix.
    write(repo, "notes.txt", "a note\n");
    commit_all(repo, "notes");
    write(repo, "src.txt", "BROKEN\n");
    commit_all(repo, "a change that breaks nobreak");
    write(repo, "more.txt", "more\n");
    commit_all(repo, "more");
    auto r = run({PHOENIX_LOOP_BIN, "--branch", "phoenix/loop-test"}, repo, {}, 180);
    night = {r.exit_code, r.output};
  }
  static void TearDownTestSuite() {
    delete tmp;
    tmp = nullptr;
  }

  // HH:MM (UTC) of the first trace event named `event`.
  static std::string at(const std::string& event) {
    for (const auto& line : util::split_lines(read(repo + "/.phoenix/trace.jsonl"))) {
      if (line.empty()) continue;
      Json e = Json::parse(line);
      if (e["event"] == event) return e["ts"].get<std::string>().substr(11, 5);
    }
    return "??:??";
  }

  static std::string note() {
    for (const auto& e : fs::directory_iterator(repo + "/incidents"))
      if (e.path().extension() == ".md") return "incidents/" + e.path().filename().string();
    return "";
  }

  static std::string verdict() {
    return "3 of 4 tasks done, 1 escalated, 0 open, 1 healed by bisect, 1 replayed from the journal, the last "
           "escalation at " +
           at("incident") + ": the loop stopped; known-good is " +
           util::trim(git(repo, {"rev-parse", "--short=7", "refs/phoenix/known-good/phoenix/loop-test"})) + ".";
  }
};

TEST_F(ReportNight, TheNightRanAsPlanned) {
  ASSERT_EQ(night.code, 2) << night.out;
  EXPECT_NE(note(), "");
}

TEST_F(ReportNight, TerminalReportLineByLine) {
  ASSERT_EQ(night.code, 2) << night.out;
  CliRun r = run_phoenix(repo, {"report"}, 60, kUtc);
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<std::string> lines = util::split_lines(r.out);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  ASSERT_GT(lines.size(), 10u) << r.out;
  EXPECT_EQ(lines[0], "Phoenix: the night on phoenix/loop-test");
  EXPECT_EQ(lines[1].substr(0, 11), util::now_iso8601().substr(0, 10) + " ") << "local date first";
  EXPECT_NE(lines[1].find(" +00:00 to "), std::string::npos) << lines[1];
  // The verdict, word-wrapped at 80 columns, up to the blank line.
  std::string v;
  size_t i = 3;
  for (; i < lines.size() && !lines[i].empty(); ++i) v += (v.empty() ? "" : " ") + lines[i];
  EXPECT_EQ(v, verdict());
  expect_in_order(
      lines,
      {"Needs a person first", "  1. Read " + note() + ": `chart` on \"unfixable: recolour the",
       "     chart\" escalated (the same failure again (signature ", "Tasks",
       "  done      easy: add a line", "            1 commit ", "  healed    healable: add a feature",
       "            1 commit ", "  done      easy: add another line", "  escalated unfixable: recolour the chart",
       "Heals", "Rate-limit waits", "  " + at("loop.wait") + "  rate-limited, waited ", "Escalations",
       "  " + at("incident") + "  chart: ", "Totals", "  5 iterations, ", "Next: phoenix report --html night.html"},
      r.out);
  bool bisect = false, replayed = false;
  for (const auto& l : lines) {
    bisect |= l.find("  nobreak by bisect, 1 attempt, ") == 7;
    replayed |= l.find("  nobreak replayed from the journal, 1 attempt, ") == 7;
  }
  EXPECT_TRUE(bisect) << r.out;
  EXPECT_TRUE(replayed) << r.out;
  // The baseline the loop healed needs nobody.
  EXPECT_EQ(r.out.find("Red before the first iteration"), std::string::npos) << r.out;
  EXPECT_EQ(lines.back(), "Next: phoenix report --html night.html");
  for (const auto& l : lines) EXPECT_LE(columns(l), 80u) << l;
  EXPECT_EQ(r.out.find(repo), std::string::npos) << "paths relative to the repository:\n" << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << "no colour off a terminal";
  EXPECT_NE(r.out.find("· cost unknown: the agent CLI"), std::string::npos) << "and why\n" << r.out;
}

TEST_F(ReportNight, MarkdownLineByLine) {
  ASSERT_EQ(night.code, 2) << night.out;
  CliRun r = run_phoenix(repo, {"report", "--md"}, 60, kUtc);
  ASSERT_EQ(r.code, 0) << r.out;
  std::vector<std::string> lines = util::split_lines(r.out);
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  ASSERT_GT(lines.size(), 10u) << r.out;
  EXPECT_EQ(lines[0], "# Phoenix: the night on phoenix/loop-test");
  EXPECT_EQ(lines[4], "**" + verdict() + "**");
  expect_in_order(lines,
                  {"## Needs a person first",
                   "1. Read " + note() + ": `chart` on \"unfixable: recolour the chart\" escalated",
                   "## Tasks",
                   "| task | outcome | commits | duration | turns | cost |",
                   "|---|---|---|---|---|---|",
                   "| easy: add a line | done | ",
                   "| healable: add a feature | healed by journal, 2 attempts | ",
                   "| easy: add another line | done | ",
                   "| unfixable: recolour the chart | escalated, 2 attempts ([note](" + note() + ")) | — | ",
                   "## Heals",
                   "| at | check | fixer | attempts | duration | replayed | fix |",
                   "|---|---|---|---|---|---|---|",
                   "| ",
                   "## Rate-limit waits",
                   "- " + at("loop.wait") + ": rate-limited, waited ",
                   "## Escalations",
                   "- " + at("incident") + ": `chart`: ",
                   "## Totals",
                   "5 iterations, ",
                   "Next: `phoenix report --html night.html`"},
                  r.out);
  EXPECT_NE(r.out.find(" | `nobreak` | bisect | 1 | "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" | `nobreak` | journal | 1 | "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(repo), std::string::npos) << r.out;
}

// Chromium renders the page; a script added to a copy of it writes what the
// page shows into the DOM, which --dump-dom prints.
struct Shown {
  int scroll_width = -1, svg_width = -1, iteration_marks = -1, heading_h3 = -1, heading_h4 = -1;
  std::string verdict;
  std::string over;                   // the first element past the window's right edge, if any
  std::vector<std::string> pictures;  // the incident's pictures that loaded: "alt@top"
  bool ok = false;
  std::string raw;
};

Shown render(const std::string& chromium, const std::string& html_path, int width, const std::string& work) {
  std::string probe = work + "/probe-" + std::to_string(width) + ".html";
  std::string page = read(html_path);
  const std::string script =
      std::string() +
      // Headless chromium will not make a window narrower than 500 px: the
      // body is held to the width under test instead.
      "<script>window.addEventListener('load',()=>{document.body.style.width='" + std::to_string(width) +
      "px';"
      "const v=document.getElementById('verdict');"
      "const tl=[...document.querySelectorAll('svg.timeline')].find(e=>e.getBoundingClientRect().width>0);"
      "const s=tl.getBoundingClientRect();"
      // The innermost element whose content spills out of its own box
      // (a scrolling container, a table's or a diff's, may be wider).
      "const over=[...document.querySelectorAll('main *')].reverse().find(e=>e.scrollWidth>e.clientWidth+1&&"
      "getComputedStyle(e).overflowX==='visible'&&!e.closest('.scroll,pre')&&!(e instanceof SVGElement));"
      "const r=v.getBoundingClientRect();"
      "document.body.setAttribute('data-probe',JSON.stringify({scroll:Math.max(document.body.scrollWidth,document.querySelector('main').scrollWidth),"
      "svg:Math.round(s.width),marks:tl.querySelectorAll('[data-kind=iteration]').length,"
      "over:over?over.tagName+'.'+over.className+' '+over.scrollWidth+' px in '+over.clientWidth+': '+over.textContent.slice(0,60):'',"
      "pics:[...document.querySelectorAll('article.incident .pictures img')].filter(i=>i.complete&&i.naturalWidth>0).map(i=>"
      "i.alt+'@'+Math.round(i.getBoundingClientRect().top)),"
      "h3:document.querySelectorAll('article.incident h3').length,h4:document.querySelectorAll('article.incident h4').length,"
      "verdict:(r.width>0&&r.height>0)?v.innerText:''}));});</script>";
  size_t end = page.rfind("</body>");
  page.insert(end, script);
  std::ofstream(probe) << page;
  util::ProcessOptions po;
  po.argv = {chromium,
             "--headless",
             "--no-sandbox",
             "--disable-gpu",
             "--hide-scrollbars",
             "--window-size=" + std::to_string(width) + ",2000",
             "--user-data-dir=" + work + "/profile-" + std::to_string(width),
             "--virtual-time-budget=2000",
             "--dump-dom",
             "file://" + probe};
  po.cwd = work;
  po.timeout_s = 90;
  po.env = {{"HOME", work}};
  util::ProcessResult r = util::run_process(po);
  Shown s;
  s.raw = r.output;
  size_t at = r.output.find("data-probe=\"");
  if (at == std::string::npos) return s;
  at += 12;
  std::string j = r.output.substr(at, r.output.find('"', at) - at);
  for (auto [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"&quot;", "\""}, {"&lt;", "<"}, {"&gt;", ">"}, {"&amp;", "&"}}) {
    for (size_t p = j.find(from); p != std::string::npos; p = j.find(from, p + to.size()))
      j.replace(p, from.size(), to);
  }
  Json v = Json::parse(j);
  s.scroll_width = v["scroll"];
  s.svg_width = v["svg"];
  s.iteration_marks = v["marks"];
  s.heading_h3 = v["h3"];
  s.heading_h4 = v["h4"];
  s.verdict = v["verdict"];
  s.over = v["over"];
  for (const auto& p : v["pics"]) s.pictures.push_back(p.get<std::string>());
  s.ok = true;
  return s;
}

TEST_F(ReportNight, HtmlPageInChromiumAt1200And400Pixels) {
  ASSERT_EQ(night.code, 2) << night.out;
  std::string html_path = *tmp / "night.html";
  CliRun r = run_phoenix(repo, {"report", "--html", html_path}, 60, kUtc);
  ASSERT_EQ(r.code, 0) << r.out;
  std::string h = read(html_path);
  EXPECT_EQ(h.find("src=\"http"), std::string::npos) << "self-contained";
  EXPECT_EQ(h.find("<link"), std::string::npos);
  EXPECT_EQ(h.find(repo + "/"), std::string::npos) << "paths relative to the repository";
  size_t iterations = 0;
  for (size_t at = h.find("data-kind=\"iteration\""); at != std::string::npos;
       at = h.find("data-kind=\"iteration\"", at + 1))
    ++iterations;
  EXPECT_EQ(iterations, 10u) << "one mark per iteration, in the wide drawing and the phone's";

  const std::string chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium))
    GTEST_SKIP() << "no " << chromium << " (Debian package chromium): the page was not rendered";
  std::string work = *tmp / "chromium";
  fs::create_directories(work);
  for (int width : {1200, 400}) {
    Shown s = render(chromium, html_path, width, work);
    ASSERT_TRUE(s.ok) << "chromium showed nothing at " << width << " px:\n" << s.raw.substr(0, 2000);
    EXPECT_EQ(s.verdict, verdict()) << width << " px";
    EXPECT_EQ(s.iteration_marks, 5) << width << " px";
    EXPECT_EQ(s.heading_h3, 1) << "the note's title is a heading at " << width << " px";
    EXPECT_GE(s.heading_h4, 7) << "the note's sections are headings at " << width << " px";
    // The visual check's three pictures, drawn (inline data), side by side
    // on a wide window: one row, the same top.
    ASSERT_EQ(s.pictures.size(), 3u) << width << " px: " << s.raw.substr(0, 400);
    if (width >= 1200)
      for (const auto& p : s.pictures)
        EXPECT_EQ(p.substr(p.find('@')), s.pictures[0].substr(s.pictures[0].find('@'))) << p;
    EXPECT_LE(s.scroll_width, width) << "nothing wider than the window at " << width << " px";
    EXPECT_EQ(s.over, "") << "past the right edge at " << width << " px";
    EXPECT_GT(s.svg_width, width / 2) << "the timeline spans the page at " << width << " px";
    EXPECT_LE(s.svg_width, width);
  }
  // And a picture of it, for a person to look at (docs/morning.png comes from the demo's night).
  std::string shot = work + "/night-400.png";
  util::ProcessOptions po;
  po.argv = {chromium,
             "--headless",
             "--no-sandbox",
             "--disable-gpu",
             "--hide-scrollbars",
             "--window-size=400,1600",
             "--user-data-dir=" + work + "/profile-shot",
             "--screenshot=" + shot,
             "file://" + html_path};
  po.cwd = work;
  po.timeout_s = 90;
  po.env = {{"HOME", work}};
  util::run_process(po);
  EXPECT_TRUE(fs::exists(shot));
}

// Debian's HTML validator at hand (HTML Tidy, which knows HTML5 and inline
// SVG) finds neither an error nor a warning in the page.
TEST_F(ReportNight, HtmlPassesTidy) {
  ASSERT_EQ(night.code, 2) << night.out;
  if (!fs::exists("/usr/bin/tidy"))
    GTEST_SKIP() << "no /usr/bin/tidy (Debian package tidy): the page was not validated";
  std::string html_path = *tmp / "tidy.html";
  CliRun r = run_phoenix(repo, {"report", "--html", html_path}, 60, kUtc);
  ASSERT_EQ(r.code, 0) << r.out;
  auto t = run({"/usr/bin/tidy", "-errors", "-quiet", html_path}, tmp->path(), {}, 60);
  EXPECT_EQ(t.exit_code, 0) << "0: no warnings, 1: warnings, 2: errors\n" << t.output;
  EXPECT_EQ(util::trim(t.output), "");
}

}  // namespace
}  // namespace phoenix::test

#endif  // PHOENIX_LOOP_BIN
