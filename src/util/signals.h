// Signal handling for the whole program: SIGINT, SIGTERM and SIGHUP only
// set a flag, which long waits poll (util/subprocess.h stops a running
// child's process group when it is set); SIGPIPE is ignored.
#pragma once

namespace phoenix::util {

// Installs the handlers. Call once from main.
void install_signal_handlers();
// The signal that interrupted Phoenix, or 0.
int interrupted_signal();

}  // namespace phoenix::util
