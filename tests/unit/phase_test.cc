// engine/phase.h: phoenix-loop's phases and their words. The words are what
// loop-state.json, the trace's loop.end and the morning report say, so they
// are pinned here one by one, and against the state file's schema.
#include "engine/phase.h"

#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "test_util.h"
#include "util/json.h"

namespace phoenix::engine {
namespace {

using util::Json;

const std::vector<std::pair<Phase, std::string>>& every_phase() {
  static const std::vector<std::pair<Phase, std::string>> v{
      {Phase::kStarting, "starting"}, {Phase::kBaseline, "baseline"},   {Phase::kAgent, "agent"},
      {Phase::kChecking, "checking"}, {Phase::kHealing, "healing"},     {Phase::kCommitting, "committing"},
      {Phase::kWaiting, "waiting"},   {Phase::kMerging, "merging"},     {Phase::kComplete, "complete"},
      {Phase::kStopped, "stopped"},   {Phase::kEscalated, "escalated"}, {Phase::kInterrupted, "interrupted"},
      {Phase::kFailed, "failed"}};
  return v;
}

TEST(Phase, EveryPhaseRoundTripsThroughItsWord) {
  for (const auto& [phase, word] : every_phase()) {
    EXPECT_EQ(phase_name(phase), word);
    EXPECT_EQ(parse_phase(word), phase) << word;
    EXPECT_EQ(Json(phase), Json(word)) << word;
    const Json in_object{{"phase", phase}};
    EXPECT_EQ(in_object.dump(), "{\"phase\":\"" + word + "\"}");
    std::ostringstream out;
    out << phase;
    EXPECT_EQ(out.str(), word);
  }
}

TEST(Phase, AnyOtherWordIsNoPhase) {
  for (const char* word : {"", "Agent", "AGENT", "done", "escalated ", "heal", "ESCALATED"})
    EXPECT_EQ(parse_phase(word), std::nullopt) << "'" << word << "'";
}

// templates/loop-state.schema.json lists the words a poller may read in
// "phase" (and a worker's): each is a phase, and each phase is listed.
TEST(Phase, TheStateFilesSchemaListsExactlyThePhases) {
  const Json schema = Json::parse(test::read(PHOENIX_SOURCE_DIR "/templates/loop-state.schema.json"));
  std::set<std::string> listed;
  for (const auto& w : schema["properties"]["phase"]["enum"]) {
    EXPECT_TRUE(parse_phase(w.get<std::string>())) << w;
    listed.insert(w.get<std::string>());
  }
  for (const auto& [phase, word] : every_phase()) EXPECT_TRUE(listed.count(phase_name(phase))) << word;
  for (const auto& w : schema["properties"]["workers"]["items"]["properties"]["phase"]["enum"])
    EXPECT_TRUE(parse_phase(w.get<std::string>())) << w;
}

}  // namespace
}  // namespace phoenix::engine
