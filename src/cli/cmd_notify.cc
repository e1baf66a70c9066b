// `phoenix notify --test [--json]`: one test message to loop.notify's
// webhook, as phoenix-loop would send it (loop/notify.h), tried once; prints
// the status line and the head of the body that came back. Exit 0 on a 2xx,
// 1 otherwise; 78 when loop.notify has no webhook or its environment
// variables are not set.
#include <iostream>

#include "checks/url.h"
#include "cli/app.h"
#include "config/config.h"
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
  std::cout << "POST " << checks::shown_url(hook.url) << " (" << hook.format << ")\n";
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
  desc.add_options()("test", "send one test message to the webhook of loop.notify and print what came back");
  Parsed p;
  if (!parse_command("notify", desc, args, p, false)) return kExitOk;
  if (!p.vm.count("test")) throw UsageError("phoenix notify: give --test (send one test message)");
  config::Config cfg = config::load(p.ctx.root, true);
  if (!cfg.loop.webhook)
    throw ConfigError("loop.notify.url: no webhook in " + cfg.path +
                      " (give loop.notify as {\"url\": \"https://...\", \"format\": \"ntfy\"})");
  config::Webhook hook = *cfg.loop.webhook;
  loop::webhook_secrets(hook);  // an unset variable: exit 78, naming the field
  hook.attempts = 1;
  loop::Delivery d = loop::deliver(hook, test_event(p.ctx.root), {});
  if (p.ctx.json)
    print_json(p.ctx, {{"url", checks::shown_url(hook.url)},
                       {"format", hook.format},
                       {"ok", d.ok},
                       {"status", d.status},
                       {"reason", d.reason},
                       {"reply", d.reply},
                       {"error", d.error}});
  else print_delivery(hook, d);
  return d.ok ? kExitOk : kExitRed;
}

}  // namespace phoenix::cli
