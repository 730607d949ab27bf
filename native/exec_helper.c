/* reapkit-exec: the pre-exec step that libuv's spawn lacks. Node spawns this helper; it prepares
 * the process and then execs the target in its place, so no extra process stays behind.
 *
 *   reapkit-exec [--cgroup DIR] [--pid-namespace] [--found PATH] GROUP SIGNAL PARENT REPORT FILE ARGV0 [ARGS...]
 *
 * DIR     Linux, cgroup v2: the cgroup (a directory spawn() made for this child) to join first,
 *         by writing our own pid into DIR/cgroup.procs. Joined before anything else runs, so the
 *         target and everything it starts are in it from their first instruction, and cannot
 *         leave it (a move needs write access to the common ancestor's cgroup.procs). Fails closed:
 *         a failed join is reported (step 'c') and the target never runs.
 * --pid-namespace  Linux: run FILE as the first process of a new PID namespace under a small init
 *         of ours, and stay outside as the process the parent sees (native/exec_pidns.c): the whole
 *         tree then ends when the parent dies, by any means. Needs SIGNAL 9 (SIGKILL): that death
 *         signal is the guarantee. A refused namespace is reported (step 'n') and FILE never runs.
 * PATH    the file the parent's search of PATH found for a bare FILE (lib/mechanisms/spawn-args.ts):
 *         exec'd first, saving a failed execve per PATH entry before it. Should that exec fail with
 *         an error execvp skips (a script whose interpreter is missing: ENOENT), FILE is then
 *         execvp'd, so the next entry runs, and the error is the one execvp ends with, as without it.
 * GROUP   1: become the leader of a new process group (setpgid(0, 0)); 0: stay in the parent's;
 *         2: as 1, and then take the foreground of the controlling terminal on fd 0 for the new
 *         group, when the parent's group holds it (spawn()'s foreground hand-over, lib/mechanisms/terminal.ts).
 * SIGNAL  Linux: the parent-death signal to arm (PR_SET_PDEATHSIG); 0: none. Ignored elsewhere.
 * PARENT  the pid the parent had when it spawned us. Checked after arming: if the parent is
 *         already gone, the kernel would never send the signal, so we deliver it ourselves.
 * REPORT  the fd of the write end of the parent's report pipe (native/exec_report.cc), or -1.
 * FILE    the program to exec, PATH-searched by glibc's execvp rules (native/exec_search.c, whatever
 *         libc this helper is linked with); ARGV0 its argv[0].
 *
 * The report: once the group is formed and the death signal armed, one byte 'R'. Then the exec:
 * the report fd is close-on-exec, so a successful exec closes it and the parent reads EOF. On a
 * failure we write one record (see REPORT_RECORD below: 'F', the step, the errno) and exit. The
 * parent waits for that EOF before spawn() returns, which is what makes spawnedInfo() true when it
 * is stated: the group exists and the target runs (libuv's own spawn gives the same "exec'd" promise
 * for the helper).
 *
 * Without a report fd, a failure prints one line to stderr; either way it exits 127 (126: not
 * executable, or a failed preparation step), like a shell.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

#include "exec_pidns.h" /* the steps' letters too */
#include "exec_search.h"
/* A failure record: 'F', the step, two bytes of padding, the errno as a native int32. */
#define REPORT_RECORD 8

static long number(const char *s) {
  char *end = NULL;
  if (s[0] == '\0') return -1;
  long v = strtol(s, &end, 10);
  return (end && *end == '\0') ? v : -1;
}

/* Writes all of buf, retrying on EINTR; the pipe's buffer always has room for a few bytes. */
static void write_all(int fd, const char *buf, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, buf, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    buf += n;
    len -= (size_t)n;
  }
}

/* Reports a failed step (to the pipe if there is one, else to stderr) and returns the exit code. */
static int fail(int report, char step, int err, const char *what) {
  if (err == 0) err = EIO; /* never "no error": the parent reports it as the spawn's error */
  if (report >= 0) {
    char record[REPORT_RECORD] = {'F', step, 0, 0};
    int32_t e = (int32_t)err;
    memcpy(record + 4, &e, sizeof e);
    write_all(report, record, sizeof record);
  } else {
    /* The number too: the text is the C library's (musl's and glibc's differ). */
    fprintf(stderr, "reapkit-exec: %s: %s (errno %d)\n", what, strerror(err), err);
  }
  if (step == STEP_EXEC) return err == ENOENT ? 127 : 126;
  return 126;
}

/* The death signal, with the re-check of the parent. Returns 0, or an errno (prctl failed). */
static int arm_death_signal(long sig, long parent) {
#if defined(__linux__)
  if (sig <= 0) return 0;
  if (prctl(PR_SET_PDEATHSIG, (unsigned long)sig, 0, 0, 0) != 0) return errno;
  /* Compare with the recorded parent, not with 1: under a subreaper the new parent is not 1. */
  if (parent > 0 && getppid() != (pid_t)parent) {
    kill(getpid(), (int)sig);
    _exit(128 + (int)sig); /* the signal was caught or ignored: still do not run the target */
  }
#else
  (void)sig;
  (void)parent;
#endif
  return 0;
}

/* Joins the cgroup DIR: our pid into DIR/cgroup.procs. Returns 0, or an errno. The file is opened
 * without following a symbolic link: DIR is a directory of the cgroup2 filesystem spawn() just made. */
static int join_cgroup(const char *dir) {
  char path[PATH_MAX];
  int n = snprintf(path, sizeof path, "%s/cgroup.procs", dir);
  if (n < 0 || (size_t)n >= sizeof path) return ENAMETOOLONG;
  int fd;
  do fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) return errno;
  char pid[24];
  int len = snprintf(pid, sizeof pid, "%ld", (long)getpid());
  ssize_t w;
  do w = write(fd, pid, (size_t)len);
  while (w < 0 && errno == EINTR);
  int err = w == (ssize_t)len ? 0 : (w < 0 ? errno : EIO);
  close(fd);
  return err;
}

/* Gives the terminal on fd 0 to our new group, if the parent's group is its foreground
 * (checked here again: the parent may have been moved to the background since it looked). We are
 * not in the foreground yet, so tcsetpgrp would stop us with SIGTTOU unless it is blocked; the mask
 * is restored before the exec. Best effort: the parent checks the terminal's group after spawn. */
static void take_foreground(long parent) {
  pid_t theirs = getpgid((pid_t)parent);
  if (theirs < 0 || !isatty(0) || tcgetpgrp(0) != theirs) return;
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  sigprocmask(SIG_BLOCK, &ttou, &old);
  tcsetpgrp(0, getpgrp());
  sigprocmask(SIG_SETMASK, &old, NULL);
}

int main(int argc, char **argv) {
  const char *cgroup = NULL;
  int pid_namespace = 0;
  if (argc >= 3 && strcmp(argv[1], "--cgroup") == 0) {
    cgroup = argv[2];
    argv += 2;
    argc -= 2;
  }
  if (argc >= 2 && strcmp(argv[1], "--pid-namespace") == 0) {
    pid_namespace = 1;
    argv += 1;
    argc -= 1;
  }
  const char *found = NULL;
  if (argc >= 3 && strcmp(argv[1], "--found") == 0) {
    found = argv[2];
    argv += 2;
    argc -= 2;
  }
  if (argc < 7 || (pid_namespace && found != NULL) || (cgroup != NULL && cgroup[0] != '/')) {
    fprintf(stderr, "reapkit-exec: usage: reapkit-exec [--cgroup DIR] [--pid-namespace] [--found PATH] GROUP SIGNAL PARENT REPORT FILE ARGV0 [ARGS...]\n");
    return 2;
  }
  long group = number(argv[1]), sig = number(argv[2]), parent = number(argv[3]);
  long report = strcmp(argv[4], "-1") == 0 ? -1 : number(argv[4]);
  if (group < 0 || group > 2 || sig < 0 || sig > 64 || parent < 0 || (report < 0 && report != -1) || report > 65535 ||
      (pid_namespace && sig != 9)) {
    fprintf(stderr, "reapkit-exec: bad arguments\n");
    return 2;
  }
  int fd = (int)report;
  /* First, so that whatever happens next, the target never inherits the report pipe. */
  if (fd >= 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return fail(-1, STEP_REPORT, errno, "report fd");
  /* Before anything else: whatever we do next, and all the target starts, happens inside it. */
  if (cgroup != NULL) {
    int cerr = join_cgroup(cgroup);
    if (cerr != 0) return fail(fd, STEP_CGROUP, cerr, cgroup);
  }
  /* EPERM: already a session leader (spawned detached), hence already a group leader. */
  if (group >= 1 && setpgid(0, 0) != 0 && errno != EPERM) return fail(fd, STEP_SETPGID, errno, "setpgid");
  if (group == 2) take_foreground(parent);
  /* Before the death signal, though the kernel would keep one armed first (unshare(CLONE_NEWUSER)
   * does not clear it: the new namespace's credentials count as a subset of ours, and prctl says 9
   * after it, checked on 6.18): a refused namespace then fails before anything else is armed, and
   * the re-check of the parent stays the last step before the exec. */
  int through_user = 0;
  if (pid_namespace) {
    int nerr = enter_pid_namespace(&through_user);
    if (nerr != 0) return fail(fd, STEP_NAMESPACE, nerr, "unshare(CLONE_NEWPID)");
  }
  int err = arm_death_signal(sig, parent);
  if (err != 0) return fail(fd, STEP_PDEATHSIG, err, "prctl(PR_SET_PDEATHSIG)");
  if (fd >= 0) write_all(fd, "R", 1); /* the group exists and the signal is armed */
  /* The route to the PID namespace, for capabilities().pidNamespace.userNamespace: the kernel's
   * answer, not a guess from the uid map (which looks the same inside a user namespace of ours). */
  if (fd >= 0 && through_user) write_all(fd, "u", 1);
  char *file = argv[5];
  if (pid_namespace) run_in_pid_namespace(fd, file, argv + 6, fail); /* does not return */
  if (found != NULL) {
    exec_search(found, argv + 6); /* a path (it has a slash): one execve, or /bin/sh for a script without #! */
    if (!exec_search_skips(errno)) return fail(fd, STEP_EXEC, errno, file);
  }
  exec_search(file, argv + 6); /* argv[6] is argv0 exactly as the caller gave it, even "" */
  return fail(fd, STEP_EXEC, errno, file);
}
