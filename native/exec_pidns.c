/* reapkit-exec --pid-namespace (Linux): the child's whole tree ends when its host dies, by any
 * means, SIGKILL included, done by the kernel. Three processes, as `reapkit --isolate` has them:
 *
 *   host (Node)
 *    `- OUTSIDE  this helper: the pid spawn() returns, the leader of the child's process group,
 *       |        with the parent-death signal SIGKILL; forwards signals, ends as the command ends
 *       `- INIT  PID 1 of a new PID namespace, in the same group, parent-death signal SIGKILL
 *           `- COMMAND  PID 2 there, a session and group of its own: the program spawn() was asked for
 *
 * When the host dies the kernel kills OUTSIDE (its death signal), then INIT (its own), and when a
 * namespace's init dies the kernel kills every process in the namespace: the command and whatever
 * it started, setsid'd or double-forked, included. No code of ours runs for that.
 *
 * Signals. OUTSIDE handles every catchable signal and passes it to INIT through a pipe. INIT sends
 * SIGTERM, SIGINT, SIGHUP and SIGQUIT to every process in the namespace (kill(-1): a stop reaches
 * what left the group too, as --isolate's init does), any other to the command's group. INIT has no
 * handler and keeps every signal blocked: the kernel never delivers a signal to a namespace's init
 * that has no handler for it, except SIGKILL (and SIGSTOP) from outside. So a signal to the whole
 * group (a stop's killpg) reaches the command once, through OUTSIDE, and the stop's SIGKILL ends
 * OUTSIDE and INIT at once, hence the namespace. The command has a group of its own for the same
 * reason: a group signal must not reach it twice. (A PID 1 without a handler ignores SIGTERM, which
 * is why the command is not the namespace's init itself.) Job control: that group is orphaned (its
 * parent, INIT, is of another session), so the kernel discards SIGTSTP/TTIN/TTOU left to their
 * default action; INIT sends SIGSTOP instead (see forward()), and wakes a stopped OUTSIDE should the
 * command end meanwhile (wake_outside()).
 *
 * Descriptors. After its fork, each of OUTSIDE and INIT keeps only its own pipes (0-2 on /dev/null):
 * the command's stdio and IPC channel are the command's alone, so their closing is seen at once.
 *
 * Exit. When the command exits, INIT writes its wait status to OUTSIDE and exits, which ends the
 * namespace (the kernel SIGKILLs what the command left running, and reaps it before INIT's exit
 * completes); OUTSIDE then ends the same way: the same exit code, or killed by the same signal. So
 * once the host sees OUTSIDE exit, no process of the tree exists anymore.
 */
#define _GNU_SOURCE
#include "exec_pidns.h"
#include "exec_search.h"

#include <errno.h>
#include <unistd.h>

#if defined(__linux__)
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* After its fork, neither OUTSIDE nor INIT keeps a copy of what the command was given (its stdio,
 * the IPC channel, any inherited fd): a command that closes its stdout or disconnects its IPC must be
 * seen doing so by the host at once, not at its exit. 0-2 become /dev/null (so that no later open of
 * ours takes their numbers); every other fd closes but the KEEP ones (sorted ascending). */
static void close_range_or_loop(unsigned lo, unsigned hi) {
  if (lo > hi) return;
#if defined(SYS_close_range)
  if (syscall(SYS_close_range, lo, hi, 0) == 0) return;
#endif
  /* No close_range (before Linux 5.9): the fds open, as /proc lists them. */
  DIR *dir = opendir("/proc/self/fd");
  if (dir == NULL) {
    for (unsigned fd = lo; fd <= hi && fd < 65536; fd++) close((int)fd);
    return;
  }
  int open_fds[1024];
  int n = 0, more = 1;
  while (more) { /* closing while reading the directory could skip entries: collect, close, again */
    n = 0;
    more = 0;
    rewinddir(dir);
    struct dirent *e;
    while ((e = readdir(dir)) != NULL) {
      long fd = strtol(e->d_name, NULL, 10);
      if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(dir) || fd < (long)lo || fd > (long)hi) continue;
      if (n == (int)(sizeof open_fds / sizeof open_fds[0])) {
        more = 1;
        break;
      }
      open_fds[n++] = (int)fd;
    }
    for (int i = 0; i < n; i++) close(open_fds[i]);
  }
  closedir(dir);
}

static void drop_inherited_fds(const int *keep, int count) {
  int null = open("/dev/null", O_RDWR | O_CLOEXEC);
  for (int fd = 0; fd <= 2; fd++) {
    if (null >= 0) dup2(null, fd); /* dup2 clears close-on-exec on 0-2: nothing of ours execs */
    else close(fd);
  }
  unsigned next = 3;
  for (int i = 0; i < count; i++) {
    if (keep[i] < (int)next) continue;
    close_range_or_loop(next, (unsigned)keep[i] - 1);
    next = (unsigned)keep[i] + 1;
  }
  close_range_or_loop(next, ~0U); /* /dev/null's own fd included, if above 2 */
}

static void sort_fds(int *fds, int count) {
  for (int i = 1; i < count; i++)
    for (int j = i; j > 0 && fds[j - 1] > fds[j]; j--) {
      int t = fds[j];
      fds[j] = fds[j - 1];
      fds[j - 1] = t;
    }
}

/* The unprivileged route: a user namespace that maps our own uid and gid only, in which we hold the
 * capability a PID namespace needs. The command then sees its own uid and gid as before, its other
 * groups as the overflow group (nogroup), and may not call setgroups. */
static int through_user_namespace(void) {
  uid_t uid = geteuid();
  gid_t gid = getegid();
  if (unshare(CLONE_NEWUSER) != 0) return -1;
  char map[64];
  write_file("/proc/self/setgroups", "deny"); /* absent before Linux 3.19: then not needed */
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  if (write_file("/proc/self/uid_map", map) != 0) return -1;
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  if (write_file("/proc/self/gid_map", map) != 0) return -1;
  return unshare(CLONE_NEWPID);
}

int enter_pid_namespace(int *through_user) {
  *through_user = 0;
  if (unshare(CLONE_NEWPID) == 0) return 0;
  int first = errno;
  if (first != EPERM) return first;
  /* Not root (or root without CAP_SYS_ADMIN, in a container): a user namespace first, where the
   * system allows one. The error stays the first refusal: that is what a person can act on. */
  if (through_user_namespace() != 0) return first;
  *through_user = 1;
  return 0;
}

/* ---- OUTSIDE ---- */

static int to_init = -1; /* write end (non-blocking) of the pipe OUTSIDE forwards signals through */

/* Every signal, 1 to 64, in a mask: musl's sigfillset leaves out 32-34 (its own) and glibc's 32-33,
 * but a command may be sent any of them (34 is glibc's SIGRTMIN). The kernel ignores SIGKILL and
 * SIGSTOP in a mask. Both libcs pass the set to rt_sigprocmask and signalfd as it is. */
static void fill_every_signal(sigset_t *set) {
  memset(set, 0xff, sizeof *set);
}

/* Forwards one signal to INIT; a job-control stop stops us too (see relay_signals). */
static void relay(int sig) {
  unsigned char b = (unsigned char)sig;
  ssize_t n = write(to_init, &b, 1); /* a full pipe (thousands pending) drops it */
  (void)n;
  /* A job-control stop: INIT stops the command's group (SIGSTOP if it leaves the signal to its
   * default); so do we, so that whoever stopped us sees the job stopped. SIGCONT continues us, and is
   * forwarded in turn; INIT continues us itself if the command ends while we are stopped. */
  if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) raise(SIGSTOP);
}

/* Reads every signal sent to us from a signalfd (all are blocked: see fill_every_signal; handlers
 * would not do, musl's sigaction refuses 32-34) and forwards it to INIT, until INIT has exited;
 * returns its wait status. A fault the kernel raises for our own code is not blocked by the mask
 * (the kernel forces it), so a bug of ours still ends us rather than being forwarded. SIGPIPE
 * stays ignored: our write to a gone INIT must not raise a signal we would forward again. */
static int relay_signals(pid_t init) {
  signal(SIGPIPE, SIG_IGN);
  sigset_t every;
  fill_every_signal(&every);
  sigdelset(&every, SIGPIPE);
  int sfd = signalfd(-1, &every, SFD_CLOEXEC);
  int ws = 0;
  for (;;) {
    if (waitpid(init, &ws, WNOHANG) == init) break; /* before each read: a SIGCHLD may be merged */
    if (sfd < 0) { /* no signalfd (out of descriptors): wait without forwarding, as a last resort */
      while (waitpid(init, &ws, 0) < 0 && errno == EINTR) {
      }
      break;
    }
    struct signalfd_siginfo si;
    ssize_t n = read(sfd, &si, sizeof si);
    if (n != (ssize_t)sizeof si) continue; /* EINTR (a stop and continue) */
    if ((int)si.ssi_signo != SIGCHLD) relay((int)si.ssi_signo);
  }
  if (sfd >= 0) close(sfd);
  return ws;
}

/* Ends this process as the command ended: the same code, or killed by the same signal. */
static void __attribute__((noreturn)) end_like(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  struct rlimit none = {0, 0};
  setrlimit(RLIMIT_CORE, &none); /* the command dumped its own core, if it did; no second one of ours */
  signal(sig, SIG_DFL); /* SIGPIPE was ignored; the rest were never caught (musl refuses 32-34 here: fine) */
  sigset_t one;
  sigemptyset(&one);
  /* The bit itself: musl's sigaddset refuses 32-34. Both libcs lay a sigset_t out as the kernel does. */
  unsigned long *words = (unsigned long *)(void *)&one;
  words[(sig - 1) / (8 * sizeof(unsigned long))] |= 1UL << ((sig - 1) % (8 * sizeof(unsigned long)));
  sigprocmask(SIG_UNBLOCK, &one, NULL);
  kill(getpid(), sig);
  _exit(128 + sig); /* not reached for a signal whose default is to end the process */
}

/* ---- INIT ---- */

static void tell_outside(int fd, int status) {
  ssize_t n;
  do n = write(fd, &status, sizeof status);
  while (n < 0 && errno == EINTR);
}

/* The command's pid as the /proc mounted here names it: its own pid when own_proc() mounted the
 * namespace's /proc; else (the outer /proc is seen) the pid a pidfd's fdinfo gives; -1 if unknown. */
static pid_t command_in_proc = -1;

static pid_t pid_in_mounted_proc(pid_t pid, int proc_is_ours) {
  if (proc_is_ours) return pid;
#if defined(SYS_pidfd_open)
  int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
  if (pfd < 0) return -1;
  char path[64], text[512];
  snprintf(path, sizeof path, "/proc/self/fdinfo/%d", pfd);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  if (fd >= 0) close(fd);
  close(pfd);
  if (n <= 0) return -1;
  text[n] = 0;
  const char *line = strstr(text, "\nPid:");
  return line != NULL ? (pid_t)strtol(line + 5, NULL, 10) : -1;
#else
  return -1;
#endif
}

/* Whether the command leaves SIG to its default action (neither caught nor ignored), as its
 * /proc/<pid>/status says; unknown counts as default. */
static int default_action(int sig) {
  if (command_in_proc <= 0) return 1;
  char path[64], text[4096];
  snprintf(path, sizeof path, "/proc/%d/status", (int)command_in_proc);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 1;
  ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return 1;
  text[n] = 0;
  unsigned long long bit = 1ULL << (sig - 1);
  const char *caught = strstr(text, "\nSigCgt:");
  const char *ignored = strstr(text, "\nSigIgn:");
  if (caught != NULL && (strtoull(caught + 8, NULL, 16) & bit)) return 0;
  if (ignored != NULL && (strtoull(ignored + 8, NULL, 16) & bit)) return 0;
  return 1;
}

/* Set while OUTSIDE stopped itself for a job-control stop it forwarded, until a SIGCONT. */
static int outside_stopped = 0;

static void forward(int sig, pid_t command) {
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) {
    kill(-1, sig);
    return;
  }
  if (killpg(command, sig) != 0) kill(command, sig);
  if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) {
    outside_stopped = 1;
    /* The command leads a session of its own under us, of another session: its group is orphaned,
     * and the kernel discards these three for a process that leaves them to their default action.
     * Their default is to stop: so stop it, as a terminal's Ctrl-Z would. (A handler of its own gets
     * the signal itself, above: a program that cleans up first, then stops itself.) */
    if (default_action(sig) && killpg(command, SIGSTOP) != 0) kill(command, SIGSTOP);
  } else if (sig == SIGCONT) {
    outside_stopped = 0;
  }
}

/* The namespace's own /proc, so that the command's tools (ps, /proc/<its pid>) see the namespace's
 * pids. Best effort, as --isolate's: some containers lock /proc; the guarantee does not need it.
 * Slave, not private (--isolate's): what the host mounts later (a disk, an automount) still reaches
 * the command; only our /proc, and what the command mounts itself, stay in its mount namespace. */
static int own_proc(void) {
  if (unshare(CLONE_NEWNS) != 0) return 0;
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) return 0;
  return mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0;
}

/* OUTSIDE forwarded a stop and stopped itself, and the command ended since: continue OUTSIDE, so that
 * its host learns the exit now and exactly (a stopped OUTSIDE reports nothing, and a SIGKILL to it
 * then would lose the code). We cannot name it (it is outside our namespace), but we are in its
 * group: kill(0) reaches it. Its SIGCONT handler forwards a SIGCONT back, which says it is awake; until
 * then, again (our first may have come between its forward and its stop, and been undone by it). */
static void wake_outside(int from_outside) {
  for (int tries = 0; tries < 100; tries++) { /* 2 s at most */
    kill(0, SIGCONT);
    struct pollfd p = {from_outside, POLLIN, 0};
    if (poll(&p, 1, 20) <= 0) continue;
    unsigned char sigs[64];
    ssize_t n = read(from_outside, sigs, sizeof sigs);
    if (n == 0) return; /* OUTSIDE is gone */
    for (ssize_t i = 0; i < n; i++)
      if (sigs[i] == SIGCONT) return;
  }
}

static void __attribute__((noreturn))
run_init(int report, int from_outside, int to_outside, const char *file, char **argv, const sigset_t *original,
         report_failure fail) {
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* If OUTSIDE died before the line above, no death signal ever comes; its end of the pipe says so
   * (getppid() cannot: a parent outside the namespace reads as 0). */
  struct pollfd alive = {from_outside, POLLIN, 0};
  if (poll(&alive, 1, 0) > 0 && (alive.revents & (POLLHUP | POLLERR))) _exit(1);
  int proc_is_ours = own_proc();
  /* Said on the report, after the helper's 'R': spawnedInfo().ownProc. A /proc the system would not
   * let us mount (a locked one, in some containers) is the outer one: the command's tools then see
   * the host's pids, not the namespace's. */
  if (report >= 0) {
    ssize_t said = write(report, proc_is_ours ? "p" : "o", 1);
    (void)said;
  }
  sigset_t chld;
  sigemptyset(&chld);
  sigaddset(&chld, SIGCHLD);
  int sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK); /* every signal stays blocked here */
  if (sfd < 0) {
    tell_outside(to_outside, fail(report, STEP_FORK, errno, "signalfd") << 8);
    _exit(0);
  }
  pid_t command = fork();
  if (command < 0) {
    tell_outside(to_outside, fail(report, STEP_FORK, errno, "fork") << 8);
    _exit(0);
  }
  if (command == 0) {
    setsid(); /* a group of its own: see the top of this file */
    sigprocmask(SIG_SETMASK, original, NULL);
    exec_search(file, argv);
    _exit(fail(report, STEP_EXEC, errno, file));
  }
  if (report >= 0) close(report); /* the command's exec closes the last copy: the report's EOF */
  command_in_proc = pid_in_mounted_proc(command, proc_is_ours);
  int keep[3] = {sfd, from_outside, to_outside};
  sort_fds(keep, 3);
  drop_inherited_fds(keep, 3);
  for (;;) {
    struct pollfd fds[2] = {{sfd, POLLIN, 0}, {from_outside, POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) continue; /* EINTR only: nothing is delivered here, all is blocked */
    if (fds[0].revents) {
      struct signalfd_siginfo si[8];
      while (read(sfd, si, sizeof si) > 0) {
      }
      int status;
      pid_t pid;
      while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        if (pid != command) continue; /* an orphan of the namespace, reaped */
        tell_outside(to_outside, status);
        if (outside_stopped) wake_outside(from_outside);
        _exit(0); /* ends the namespace: the kernel kills what is left */
      }
    }
    if (fds[1].revents) {
      unsigned char sigs[64];
      ssize_t n = read(from_outside, sigs, sizeof sigs);
      if (n == 0) _exit(1); /* OUTSIDE is gone (its death signal ends us too) */
      for (ssize_t i = 0; i < n; i++) forward(sigs[i], command);
    }
  }
}

void run_in_pid_namespace(int report, const char *file, char **argv, report_failure fail) {
  sigset_t all, original;
  fill_every_signal(&all);
  /* Until the handlers are in place, a signal waits (pending) rather than ends us. */
  sigprocmask(SIG_SETMASK, &all, &original);
  int to[2], back[2];
  if (pipe2(to, O_CLOEXEC) != 0) _exit(fail(report, STEP_FORK, errno, "pipe"));
  if (pipe2(back, O_CLOEXEC) != 0) _exit(fail(report, STEP_FORK, errno, "pipe"));
  pid_t init = fork(); /* PID 1 of the namespace enter_pid_namespace() made */
  if (init < 0) _exit(fail(report, STEP_FORK, errno, "fork"));
  if (init == 0) {
    close(to[1]);
    close(back[0]);
    run_init(report, to[0], back[1], file, argv, &original, fail);
  }
  close(to[0]);
  close(back[1]);
  if (report >= 0) close(report);
  to_init = to[1];
  fcntl(to_init, F_SETFL, fcntl(to_init, F_GETFL) | O_NONBLOCK);
  int keep[2] = {to[1], back[0]};
  sort_fds(keep, 2);
  drop_inherited_fds(keep, 2);
  int ws = relay_signals(init); /* every signal stays blocked: they are read, not delivered */
  int status;
  ssize_t n;
  do n = read(back[0], &status, sizeof status);
  while (n < 0 && errno == EINTR);
  /* No status: INIT was killed before the command ended (a SIGKILL to it alone); say so as it was. */
  end_like(n == (ssize_t)sizeof status ? status : ws);
}

#else /* no PID namespaces */

int enter_pid_namespace(int *through_user) {
  *through_user = 0;
  return ENOSYS;
}

void run_in_pid_namespace(int report, const char *file, char **argv, report_failure fail) {
  (void)file;
  (void)argv;
  _exit(fail(report, STEP_NAMESPACE, ENOSYS, "pid namespace"));
}

#endif
