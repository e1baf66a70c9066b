// Incident notes: what a person reads in the morning. Written and fsynced
// before any rollback starts (invariant 10, docs/invariants.md).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "checks/check_spec.h"

namespace phoenix::engine {

struct IncidentAttempt {
  int number = 0;
  std::string fixer;
  std::string outcome;  // "red: exit=1", "rejected (protected): ...", "timeout"
  std::string attempt_signature;
};

struct Incident {
  std::string when;  // "YYYY-MM-DD HH:MM" (UTC); empty: now
  std::string failure_type;
  std::string check_id;
  std::string check_description;  // kind and target
  std::string signal;
  std::vector<IncidentAttempt> attempts;
  std::string issue_signature;
  std::vector<std::string> failing_tests;
  std::string last_diff;  // the last attempted patch, or empty
  std::string evidence;
  std::string why_escalated;   // "budget of 3 for unit spent", "circuit breaker", ...
  std::string rolled_back_to;  // sha, or empty with not_rolled_back_why
  std::string not_rolled_back_why;
  std::vector<std::string> images;  // files beside the note (visual diffs)
  // Evidence files (name, bytes), written beside the note as
  // <note-stem>-<name> and shown in its Evidence section.
  std::vector<std::pair<std::string, std::string>> artifacts;
};

// A check as its note's "## Check" names it: its kind and what it runs or
// reads ("command_exit `sh -c 'make test'`", "visual `chart.png`").
std::string describe_check(const checks::CheckSpec& check);

// The note's Markdown.
std::string render_incident(const Incident& inc);

// Writes <dir>/YYYY-MM-DD-HH-MM[-N].md (never overwriting an earlier note)
// durably and returns its path.
std::string write_incident(const std::string& dir, const Incident& inc);

// Rewrites the "## State" section of an existing note once the rollback is
// known (the note itself was written before the rollback started).
void set_incident_state(const std::string& path, const std::string& state_line);

}  // namespace phoenix::engine
