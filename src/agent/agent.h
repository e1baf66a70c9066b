// What Phoenix knows about agent CLIs (claude, codex, aider, opencode,
// gemini, or any command), in one place, for the harness fixer and the
// loop alike (docs/agents.md):
//   - the presets: one table of argv, how the prompt travels, the env each
//     CLI needs, each flag with the CLI version it was checked against;
//   - an invocation: the argv with the prompt put in (argument, file or
//     stdin), its environment;
//   - their reports: claude's JSON, codex's, opencode's and gemini's JSON
//     lines (cost, turns, the CLI's own verdict, its error texts);
//   - the class of a finished run, first match wins:
//       kUnavailable  not installed / not executable;
//       kCrashed      Phoenix was interrupted during the run;
//       kQuota        credit or billing exhausted ("credit balance is too
//                     low", "insufficient_quota"): the fixer stops for the run;
//       kRateLimited  HTTP 429, "rate limit", usage windows ("usage limit",
//                     "5-hour limit", "hit your limit") — with the reset time
//                     when the CLI printed one;
//       kUnreachable  connection refused, DNS or TLS failure, HTTP 5xx, 529,
//                     "overloaded", "Unable to connect", codex's
//                     "Reconnecting... waiting for network";
//       kTimeout      killed at its timeout (a run that timed out while the
//                     CLI was saying one of the three above is that class);
//       kProposed     files changed;
//       kCrashed      no change and a non-zero exit, a signal or is_error
//                     (the detail keeps the first error line and the last
//                     lines, bounded);
//       kNothing      no change, exit 0.
//     The three limit classes are read only when the run failed, changed
//     nothing or timed out, never from a JSON report that says is_error
//     false, never from lines that repeat the prompt;
//   - waits: backoff with jitter, or the reset time the CLI printed;
//   - the prompt's {{placeholders}}.
#pragma once

#include "agent/classify.h"
#include "agent/invocation.h"
#include "agent/limits.h"
#include "agent/presets.h"
#include "agent/report.h"
