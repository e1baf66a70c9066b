// maxrss CMD ARGS...: runs a command, then prints "maxrss_kb=N exit=N" on
// stderr. Used by tests to bound Phoenix's peak memory.
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <cstdio>

extern char** environ;

int main(int argc, char** argv) {
  if (argc < 2) return 64;
  pid_t pid;
  if (posix_spawnp(&pid, argv[1], nullptr, nullptr, argv + 1, environ) != 0) return 127;
  int status = 0;
  struct rusage ru {};
  wait4(pid, &status, 0, &ru);
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  std::fprintf(stderr, "maxrss_kb=%ld exit=%d\n", ru.ru_maxrss, code);
  return code;
}
