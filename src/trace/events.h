// The trace's event names, one constant each, shared by the writers and
// the readers of the trace (trace/trace.h: a line is {seq, ts, event, data, ...}).
// The words are the trace's format: a name here never changes.
#pragma once

namespace phoenix::trace::event {

// One `phoenix run` (engine/cycle*.cc, engine/recover.cc); its events also reach
// the timeline (engine/timeline.cc) as {"event": ...}.
inline constexpr const char* kRunStart = "run.start";
inline constexpr const char* kState = "state";
inline constexpr const char* kExplain = "explain";
inline constexpr const char* kBlocked = "blocked";
inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kProposal = "proposal";
inline constexpr const char* kVerifySelected = "verify_selected";
inline constexpr const char* kVerdict = "verdict";
inline constexpr const char* kTestsBite = "tests_bite";
inline constexpr const char* kRestore = "restore";
inline constexpr const char* kRollback = "rollback";
inline constexpr const char* kIncident = "incident";
inline constexpr const char* kIncidentFailed = "incident.failed";
inline constexpr const char* kKnownGood = "known-good";
inline constexpr const char* kRunEnd = "run.end";
inline constexpr const char* kRecover = "recover";

// What setup or a check changed in the shared config and was put back (setup/guard.h).
inline constexpr const char* kGuardPutBack = "guard.put_back";

// The primitive commands' (cli/).
inline constexpr const char* kSense = "sense";
inline constexpr const char* kHeal = "heal";
inline constexpr const char* kSnapshot = "snapshot";
inline constexpr const char* kJournalPush = "journal.push";
inline constexpr const char* kJournalPull = "journal.pull";
inline constexpr const char* kJournalForget = "journal.forget";

// The pre-push hook (hook/pre_push*.cc) and the stop hook of agent sessions.
inline constexpr const char* kHookPrePush = "hook.pre-push";
inline constexpr const char* kHookVerdict = "hook.verdict";
inline constexpr const char* kHookAlsoFixed = "hook.also_fixed";
inline constexpr const char* kHookUnmeasuredPush = "hook.unmeasured_push";
inline constexpr const char* kHookSkippedPushMeasured = "hook.skipped_push_measured";
inline constexpr const char* kAgentStop = "agent.stop";

// phoenix-loop's (loop/).
inline constexpr const char* kLoopStart = "loop.start";
inline constexpr const char* kLoopBaseline = "loop.baseline";
inline constexpr const char* kLoopAgent = "loop.agent";
inline constexpr const char* kLoopPinned = "loop.pinned";
inline constexpr const char* kLoopSetup = "loop.setup";
inline constexpr const char* kLoopMeasure = "loop.measure";
inline constexpr const char* kLoopVerdict = "loop.verdict";
inline constexpr const char* kLoopKnownRed = "loop.known_red";
inline constexpr const char* kLoopAlsoFixed = "loop.also_fixed";
inline constexpr const char* kLoopAttempt = "loop.attempt";
inline constexpr const char* kLoopAttemptFailed = "loop.attempt_failed";
inline constexpr const char* kLoopTestsBite = "loop.tests_bite";
inline constexpr const char* kLoopIncident = "loop.incident";
inline constexpr const char* kLoopNoChange = "loop.no_change";
inline constexpr const char* kLoopTaskDone = "loop.task_done";
inline constexpr const char* kLoopTaskSkipped = "loop.task_skipped";
inline constexpr const char* kLoopTaskEscalated = "loop.task_escalated";
inline constexpr const char* kLoopTaskPushed = "loop.task_pushed";
inline constexpr const char* kLoopBranchPushed = "loop.branch_pushed";
inline constexpr const char* kLoopQueued = "loop.queued";
inline constexpr const char* kLoopQueueDropped = "loop.queue_dropped";
inline constexpr const char* kLoopMerge = "loop.merge";
inline constexpr const char* kLoopWorkerStart = "loop.worker_start";
inline constexpr const char* kLoopWait = "loop.wait";
inline constexpr const char* kLoopCap = "loop.cap";
inline constexpr const char* kLoopCapWarning = "loop.cap_warning";
inline constexpr const char* kLoopNotify = "loop.notify";
inline constexpr const char* kLoopWebhook = "loop.webhook";
inline constexpr const char* kLoopEnd = "loop.end";

}  // namespace phoenix::trace::event
