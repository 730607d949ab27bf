/* reapkit-exec: the pre-exec step that libuv's spawn lacks. Node spawns this helper; it prepares
 * the process and then execs the target in its place, so no extra process stays behind.
 *
 *   reapkit-exec GROUP SIGNAL PARENT FILE ARGV0 [ARGS...]
 *
 * GROUP   1: become the leader of a new process group (setpgid(0, 0)); 0: stay in the parent's.
 * SIGNAL  Linux: the parent-death signal to arm (PR_SET_PDEATHSIG); 0: none. Ignored elsewhere.
 * PARENT  the pid the parent had when it spawned us. Checked after arming: if the parent is
 *         already gone, the kernel would never send the signal, so we deliver it ourselves.
 * FILE    the program to exec (PATH-searched as execvp does); ARGV0 its argv[0].
 *
 * On exec failure it prints one line to stderr and exits 127 (126: not executable), like a shell.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

static long number(const char *s) {
  char *end = NULL;
  if (s[0] == '\0') return -1;
  long v = strtol(s, &end, 10);
  return (end && *end == '\0') ? v : -1;
}

int main(int argc, char **argv) {
  if (argc < 6) {
    fprintf(stderr, "reapkit-exec: usage: reapkit-exec GROUP SIGNAL PARENT FILE ARGV0 [ARGS...]\n");
    return 2;
  }
  long group = number(argv[1]), sig = number(argv[2]), parent = number(argv[3]);
  if (group < 0 || sig < 0 || sig > 64 || parent < 0) {
    fprintf(stderr, "reapkit-exec: bad arguments\n");
    return 2;
  }
  /* EPERM: already a session leader (spawned detached), hence already a group leader. */
  if (group == 1 && setpgid(0, 0) != 0 && errno != EPERM) {
    fprintf(stderr, "reapkit-exec: setpgid: %s\n", strerror(errno));
    return 126;
  }
#if defined(__linux__)
  if (sig > 0) {
    if (prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0) != 0) {
      fprintf(stderr, "reapkit-exec: prctl(PR_SET_PDEATHSIG): %s\n", strerror(errno));
      return 126;
    }
    /* Compare with the recorded parent, not with 1: under a subreaper the new parent is not 1. */
    if (parent > 0 && getppid() != (pid_t)parent) {
      kill(getpid(), (int)sig);
      return 128 + (int)sig; /* the signal was caught or ignored: still do not run the target */
    }
  }
#endif
  char *file = argv[4];
  execvp(file, argv + 5); /* argv[5] is argv0 exactly as the caller gave it, even "" */
  int err = errno;
  fprintf(stderr, "reapkit-exec: cannot execute %s: %s\n", file, strerror(err));
  return err == ENOENT ? 127 : 126;
}
