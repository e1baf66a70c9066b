// phoenix-hook's main (hook_main.cc says what it does), in phoenix_lite so
// that the thin binary's main() is one line.
#pragma once

namespace phoenix::cli {

// Returns the green path's exit code, or replaces the process with
// `phoenix hook run pre-push ...` (it never returns then).
int phoenix_hook_main(int argc, char** argv);

}  // namespace phoenix::cli
