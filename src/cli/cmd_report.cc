// `phoenix report [--since WHEN] [--json] [--html FILE]`: what happened, read
// back from .phoenix/trace.jsonl (the loop's and the engine's events) — tasks
// done and skipped, each heal (check, fixer, attempts, duration, replayed
// from the journal or not), each incident (check, signature, why, the sha it
// rolled back to), time spent in runs and loops, agent runs and the cost the
// CLIs reported. A cost no CLI reported is null ("unknown"), never 0.
//
// The HTML page is one self-contained file: no external style, script or
// image; each incident note is shown in full and the images it links (the
// visual-diff PNGs beside it in incidents/) are embedded as data: URIs.
#include <openssl/evp.h>

#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/app.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/text.h"

namespace phoenix::cli {

namespace {

using nlohmann::json;

// "24h", "30m", "7d" back from now, or an ISO-8601 UTC date/time.
long long parse_since(const std::string& w) {
  if (w.size() >= 2) {
    char unit = w.back();
    std::string num = w.substr(0, w.size() - 1);
    bool digits = !num.empty() && num.find_first_not_of("0123456789") == std::string::npos;
    long long mult = unit == 'm' ? 60'000LL : unit == 'h' ? 3'600'000LL : unit == 'd' ? 86'400'000LL : 0;
    if (digits && mult) return util::now_ms() - std::stoll(num) * mult;
  }
  std::string full = w;
  if (full.size() == 10) full += "T00:00:00";
  long long t = util::iso8601_ms(full);
  if (t < 0) throw UsageError("report: --since " + w + ": expected 24h, 30m, 7d or an ISO-8601 time (UTC)");
  return t;
}

std::string html_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '<') o += "&lt;";
    else if (c == '>') o += "&gt;";
    else if (c == '&') o += "&amp;";
    else if (c == '"') o += "&quot;";
    else o += c;
  }
  return o;
}

json build(const std::string& trace_path, long long since) {
  json done = json::array(), skipped = json::array(), incidents = json::array(), heal_list = json::array();
  std::map<std::string, json> detected;  // check -> its last DETECTED event (elapsed_ms, signature)
  int model_calls = 0;
  std::map<std::string, int> heals_by_check;
  int heals = 0, escalations = 0, loops = 0, runs = 0, iterations = 0;
  double cost = 0;
  int costed = 0, uncosted = 0;
  long long busy_ms = 0, loop_start = -1, run_start = -1;
  for (const auto& line : util::split_lines(util::read_file(trace_path))) {
    if (line.empty()) continue;
    json e;
    try {
      e = json::parse(line);
    } catch (const json::exception&) {
      continue;  // a torn last line: `phoenix trace verify` reports it
    }
    long long t = util::iso8601_ms(e.value("ts", ""));
    if (t < since) continue;
    std::string ev = e.value("event", "");
    const json& d = e.contains("data") ? e["data"] : json::object();
    if (ev == "loop.start") {
      ++loops;
      loop_start = t;
    } else if (ev == "loop.end" && loop_start >= 0) {
      busy_ms += t - loop_start;
      loop_start = -1;
    } else if (ev == "run.start") {
      ++runs;
      run_start = t;
    } else if (ev == "run.end" && run_start >= 0) {
      if (loop_start < 0) busy_ms += t - run_start;  // a loop's runs are inside its time
      run_start = -1;
    } else if (ev == "loop.task_done") {
      done.push_back({{"task", d.value("task", json())}, {"head", d.value("head", "")},
                      {"healed", d.value("healed", false)}, {"at", e.value("ts", "")}});
    } else if (ev == "loop.task_skipped") {
      skipped.push_back({{"task", d.value("task", json())}, {"incident", d.value("incident", "")}, {"at", e.value("ts", "")}});
    } else if (ev == "loop.agent") {
      ++iterations;
      if (d.value("status", "") != "unavailable") ++model_calls;
      if (d.contains("cost_usd") && d["cost_usd"].is_number()) {
        cost += d["cost_usd"].get<double>();
        ++costed;
      } else {
        ++uncosted;
      }
    } else if (ev == "proposal" && d.value("model_calls", 0) > 0) {
      model_calls += d.value("model_calls", 0);
      if (d.contains("cost_usd") && d["cost_usd"].is_number()) {
        cost += d["cost_usd"].get<double>();
        ++costed;
      } else {
        ++uncosted;
      }
    } else if (ev == "state") {
      std::string st = d.value("state", "");
      std::string check = d.value("check", "");
      if (st == "DETECTED") detected[check] = d;
      if (st == "HEALED") {
        ++heals;
        ++heals_by_check[check];
        const json det = detected.count(check) ? detected[check] : json::object();
        long long dur = d.value("elapsed_ms", 0LL) - det.value("elapsed_ms", 0LL);
        std::string fixer = d.value("fixer", "");
        heal_list.push_back({{"check", check}, {"fixer", fixer}, {"attempts", d.value("attempts", 0)},
                             {"duration_ms", dur < 0 ? 0 : dur}, {"replayed", fixer == "journal"},
                             {"signature", det.value("signature", "")}, {"commit", d.value("commit", "")},
                             {"at", e.value("ts", "")}});
      } else if (st == "ESCALATED") {
        ++escalations;
      }
    } else if (ev == "incident" || ev == "loop.incident") {
      // The loop copies the engine's note to the user's incidents/: list the copy.
      if (ev == "loop.incident" && !incidents.empty() && incidents.back()["path"] == d.value("from", ""))
        incidents.back()["path"] = d.value("path", "");
      else if (ev == "incident") {
        std::string check = d.value("check", "");
        std::string sig = detected.count(check) ? detected[check].value("signature", "") : "";
        incidents.push_back({{"path", d.value("path", "")}, {"check", check}, {"why", d.value("why", "")},
                             {"signature", sig}, {"rolled_back_to", nullptr}, {"at", e.value("ts", "")}});
      }
    } else if (ev == "rollback" && !incidents.empty() && incidents.back()["rolled_back_to"].is_null()) {
      incidents.back()["rolled_back_to"] = d.value("to", "");
    }
  }
  json j = {{"tasks_done", done}, {"tasks_skipped", skipped}, {"heals", heals}, {"heal_list", heal_list},
            {"heals_by_check", heals_by_check}, {"model_calls", model_calls},
            {"escalations", escalations}, {"incidents", incidents}, {"loops", loops}, {"runs", runs},
            {"iterations", iterations}, {"time_s", static_cast<double>(busy_ms) / 1000.0},
            {"cost_usd", costed ? json(cost) : json(nullptr)}, {"calls_without_cost", uncosted}};
  return j;
}

std::string base64(const std::string& bytes) {
  std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), reinterpret_cast<const unsigned char*>(bytes.data()),
                          static_cast<int>(bytes.size()));
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

// The note as HTML: its text verbatim, then each image it links
// ("![alt](file.png)", relative to the note) inline as a data: URI.
std::string incident_html(const std::string& path) {
  namespace fs = std::filesystem;
  if (!util::path_exists(path)) return "<p><em>(the note " + html_escape(path) + " is gone)</em></p>\n";
  std::string note = util::read_file(path);
  std::string h = "<pre>" + html_escape(note) + "</pre>\n";
  for (size_t at = note.find("!["); at != std::string::npos; at = note.find("![", at + 2)) {
    size_t close = note.find("](", at);
    size_t end = close == std::string::npos ? close : note.find(')', close);
    if (end == std::string::npos) break;
    std::string alt = note.substr(at + 2, close - at - 2), rel = note.substr(close + 2, end - close - 2);
    fs::path img = fs::path(rel).is_absolute() ? fs::path(rel) : fs::path(path).parent_path() / rel;
    std::string ext = img.extension().string();
    std::string mime = ext == ".png" ? "image/png" : ext == ".jpg" || ext == ".jpeg" ? "image/jpeg" : "";
    if (mime.empty() || !util::path_exists(img.string())) {
      h += "<p><em>image " + html_escape(rel) + " is missing</em></p>\n";
      continue;
    }
    h += "<figure><img alt=\"" + html_escape(alt) + "\" src=\"data:" + mime + ";base64," + base64(util::read_file(img.string())) +
         "\"><figcaption>" + html_escape(rel) + "</figcaption></figure>\n";
  }
  return h;
}

std::string task_title(const json& t) {
  return t.is_object() ? t.value("title", "") : std::string();
}

}  // namespace

int cmd_report(const std::vector<std::string>& args) {
  po::options_description desc("report options");
  desc.add_options()
      ("since", po::value<std::string>(), "only events since WHEN: 24h, 30m, 7d or ISO-8601 (UTC)")
      ("html", po::value<std::string>(), "also write the report as an HTML page to FILE");
  Parsed p;
  if (!parse_command("report", desc, args, p, false)) return kExitOk;
  std::string path = p.ctx.trace_path();
  if (!util::path_exists(path)) {
    std::cerr << "phoenix: nothing to report: " << path << " is missing\n";
    return kExitRed;
  }
  long long since = p.vm.count("since") ? parse_since(p.vm["since"].as<std::string>()) : 0;
  json r = build(path, since);
  std::string cost = r["cost_usd"].is_null() ? "unknown" : "$" + [&] {
    char b[32];
    std::snprintf(b, sizeof b, "%.4f", r["cost_usd"].get<double>());
    return std::string(b);
  }();
  if (r["calls_without_cost"].get<int>() > 0 && !r["cost_usd"].is_null())
    cost += " (+" + std::to_string(r["calls_without_cost"].get<int>()) + " runs that reported none)";
  if (p.ctx.json) {
    print_json(p.ctx, r);
  } else {
    std::cout << "tasks done:    " << r["tasks_done"].size() << "\n";
    for (const auto& t : r["tasks_done"])
      std::cout << "  " << green(p.ctx, "done") << "     " << task_title(t["task"]) << (t["healed"].get<bool>() ? " (healed)" : "") << "\n";
    std::cout << "tasks skipped: " << r["tasks_skipped"].size() << "\n";
    for (const auto& t : r["tasks_skipped"])
      std::cout << "  " << red(p.ctx, "skipped") << "  " << task_title(t["task"]) << " — " << t.value("incident", "") << "\n";
    std::cout << "heals:         " << r["heals"] << "\n";
    for (const auto& x : r["heal_list"])
      std::cout << "  " << green(p.ctx, "healed") << "   " << x.value("check", "") << " by " << x.value("fixer", "") << ", "
                << x.value("attempts", 0) << " attempt(s), " << x.value("duration_ms", 0LL) << " ms"
                << (x.value("replayed", false) ? ", replayed from the journal" : "") << "\n";
    std::cout << "escalations:   " << r["escalations"] << "\n";
    std::cout << "incidents:     " << r["incidents"].size() << "\n";
    for (const auto& i : r["incidents"])
      std::cout << "  " << i.value("path", "") << " (" << i.value("check", "") << ", signature " << i.value("signature", "")
                << ", rolled back to "
                << (i["rolled_back_to"].is_string() ? i["rolled_back_to"].get<std::string>().substr(0, 12) : std::string("-"))
                << ")\n";
    std::cout << "loops / runs:  " << r["loops"] << " / " << r["runs"] << ", " << r["iterations"] << " agent iterations, "
              << r["model_calls"] << " model calls\n";
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", r["time_s"].get<double>() / 60.0);
    std::cout << "time:          " << b << " min\ncost:          " << cost << "\n";
  }
  if (p.vm.count("html")) {
    std::string h = "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Phoenix report</title>\n"
                    "<style>body{font-family:sans-serif;max-width:50em;margin:2em auto}td,th{padding:.2em .8em;text-align:left}"
                    ".done{color:#070}.skipped{color:#a00}.incident{border-left:.4em solid #c00;padding-left:1em}"
                    "pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}img{max-width:100%;border:1px solid #999}</style></head><body>\n<h1>Phoenix report</h1>\n<table>\n";
    auto row = [&](const std::string& k, const std::string& v) { h += "<tr><th>" + html_escape(k) + "</th><td>" + html_escape(v) + "</td></tr>\n"; };
    row("tasks done", std::to_string(r["tasks_done"].size()));
    row("tasks skipped", std::to_string(r["tasks_skipped"].size()));
    row("heals", r["heals"].dump());
    row("escalations", r["escalations"].dump());
    row("model calls", r["model_calls"].dump());
    row("time (min)", std::to_string(r["time_s"].get<double>() / 60.0));
    row("cost", cost);
    h += "</table>\n<h2>Tasks</h2>\n<ul>\n";
    for (const auto& t : r["tasks_done"]) h += "<li class=\"done\">done: " + html_escape(task_title(t["task"])) + "</li>\n";
    for (const auto& t : r["tasks_skipped"])
      h += "<li class=\"skipped\">skipped: " + html_escape(task_title(t["task"])) + " — " + html_escape(t.value("incident", "")) + "</li>\n";
    h += "</ul>\n<h2>Heals</h2>\n<table>\n<tr><th>check</th><th>fixer</th><th>attempts</th><th>duration (ms)</th><th>replayed</th></tr>\n";
    for (const auto& x : r["heal_list"])
      h += "<tr><td>" + html_escape(x.value("check", "")) + "</td><td>" + html_escape(x.value("fixer", "")) + "</td><td>" +
           std::to_string(x.value("attempts", 0)) + "</td><td>" + std::to_string(x.value("duration_ms", 0LL)) + "</td><td>" +
           (x.value("replayed", false) ? "yes" : "no") + "</td></tr>\n";
    h += "</table>\n<h2>Incidents</h2>\n";
    for (const auto& i : r["incidents"]) {
      h += "<section class=\"incident\"><h3>" + html_escape(i.value("path", "")) + "</h3>\n<p>check <b>" +
           html_escape(i.value("check", "")) + "</b>, signature <code>" + html_escape(i.value("signature", "")) +
           "</code>, rolled back to <code>" +
           html_escape(i["rolled_back_to"].is_string() ? i["rolled_back_to"].get<std::string>() : "-") + "</code>, " +
           html_escape(i.value("at", "")) + "</p>\n" + incident_html(i.value("path", "")) + "</section>\n";
    }
    h += "</body></html>\n";
    util::write_file_atomic(p.vm["html"].as<std::string>(), h);
  }
  return kExitOk;
}

}  // namespace phoenix::cli
