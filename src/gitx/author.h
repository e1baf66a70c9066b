// The author (and committer) of every commit Phoenix makes: checkpoints,
// heals, phoenix-loop's tasks and attempts, the data kept under refs, a
// sandbox's own history. One name, so `git log --author=phoenix` finds
// them all.
#pragma once

namespace phoenix::gitx {

struct Author {
  const char* name;
  const char* email;
};

inline constexpr Author kPhoenixAuthor{"phoenix", "phoenix@localhost"};

}  // namespace phoenix::gitx
