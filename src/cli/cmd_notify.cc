// `phoenix notify --test [--json]`: one test message to loop.notify as
// phoenix-loop would send it (loop/notify.h), tried once: its webhook (the
// status line and the head of the body that came back) and its command
// (run with PHOENIX_EVENT=test; its exit status and output). Exit 0 when
// each answered 2xx / exit 0, 1 otherwise; 78 when loop.notify is not set
// or the webhook's environment variables are not.
#include <iostream>

#include "checks/url.h"
#include "cli/app.h"
#include "config/config.h"
#include "loop/loop.h"
#include "loop/notify.h"
#include "util/error.h"

namespace phoenix::cli {

namespace {

loop::NotifyEvent test_event(const std::string& root) {
  loop::NotifyEvent e;
  e.kind = "test";
  e.summary = "phoenix notify --test: notifications from phoenix-loop reach this place";
  e.repository = root;
  return e;
}

void print_delivery(const config::Webhook& hook, const loop::Delivery& d) {
  std::cout << "POST " << checks::shown_url(hook.url) << " (" << config::webhook_format_name(hook.format) << ")\n";
  if (d.status == 0) {
    std::cout << "not delivered: " << d.error << "\n";
    return;
  }
  std::cout << "HTTP " << d.status << (d.reason.empty() ? "" : " " + d.reason) << "\n";
  if (!d.reply.empty()) std::cout << d.reply << (d.reply.back() == '\n' ? "" : "\n");
}

}  // namespace

int cmd_notify(const std::vector<std::string>& args) {
  po::options_description desc("notify options");
  desc.add_options()("test",
                     "send one test message to loop.notify (its webhook, its command) and print what came back");
  Parsed p;
  if (!parse_command("notify", desc, args, p, false)) return kExitOk;
  if (!p.vm.count("test")) throw UsageError("phoenix notify: give --test (send one test message)");
  config::Config cfg = config::load(p.ctx.root, true);
  if (!cfg.loop.webhook && cfg.loop.notify.empty())
    throw ConfigError("loop.notify: not set in " + cfg.path +
                      " (give loop.notify as {\"url\": \"https://...\", \"format\": \"ntfy\"} or a command)");
  util::Json out = util::Json::object();
  bool ok = true;
  if (cfg.loop.webhook) {
    config::Webhook hook = *cfg.loop.webhook;
    loop::webhook_secrets(hook);  // an unset variable: exit 78, naming the field
    hook.attempts = 1;
    loop::Delivery d = loop::deliver(hook, test_event(p.ctx.root), {});
    ok = d.ok;
    out = {{"url", checks::shown_url(hook.url)},
           {"format", hook.format},
           {"ok", d.ok},
           {"status", d.status},
           {"reason", d.reason},
           {"reply", d.reply},
           {"error", d.error}};
    if (!p.ctx.json) print_delivery(hook, d);
  }
  if (!cfg.loop.notify.empty()) {
    // The command as phoenix-loop runs it, with PHOENIX_EVENT=test.
    util::ProcessResult r =
        loop::run_notify_command(cfg.loop.notify, p.ctx.root, "test", "", layout::loop_state_file(p.ctx.root));
    ok = ok && r.exit_code == 0;
    out["command"] = {{"argv", cfg.loop.notify}, {"exit_code", r.exit_code}, {"output", r.output}};
    if (!p.ctx.json) {
      std::cout << "ran " << cfg.loop.notify[0] << " with PHOENIX_EVENT=test: exit " << r.exit_code << "\n";
      if (!r.output.empty()) std::cout << r.output << (r.output.back() == '\n' ? "" : "\n");
    }
  }
  if (p.ctx.json) print_json(p.ctx, out);
  return ok ? kExitOk : kExitRed;
}

}  // namespace phoenix::cli
