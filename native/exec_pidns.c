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
 * is why the command is not the namespace's init itself.)
 *
 * Exit. When the command exits, INIT writes its wait status to OUTSIDE and exits, which ends the
 * namespace (the kernel SIGKILLs what the command left running, and reaps it before INIT's exit
 * completes); OUTSIDE then ends the same way: the same exit code, or killed by the same signal. So
 * once the host sees OUTSIDE exit, no process of the tree exists anymore.
 */
#define _GNU_SOURCE
#include "exec_pidns.h"

#include <errno.h>
#include <unistd.h>

#if defined(__linux__)
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
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

int enter_pid_namespace(void) {
  if (unshare(CLONE_NEWPID) == 0) return 0;
  int first = errno;
  if (first != EPERM) return first;
  /* Not root (or root without CAP_SYS_ADMIN, in a container): a user namespace first, where the
   * system allows one. The error stays the first refusal: that is what a person can act on. */
  return through_user_namespace() == 0 ? 0 : first;
}

/* ---- OUTSIDE ---- */

static int to_init = -1; /* write end (non-blocking) of the pipe OUTSIDE forwards signals through */

static int is_fault(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
}

static void on_signal(int sig, siginfo_t *si, void *uctx) {
  (void)uctx;
  int saved = errno;
  if (si != NULL && si->si_code > 0 && is_fault(sig)) {
    /* Raised by the kernel for this very process (a bug of ours), not sent: let it end us. */
    signal(sig, SIG_DFL);
    errno = saved;
    return;
  }
  unsigned char b = (unsigned char)sig;
  ssize_t n = write(to_init, &b, 1); /* a full pipe (thousands pending) drops it */
  (void)n;
  /* A job-control stop: the command's group was stopped (above); so are we, so that whoever stopped
   * us sees the job stopped. SIGCONT continues us, and is forwarded in turn. */
  if (sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU) raise(SIGSTOP);
  errno = saved;
}

static void handle_every_signal(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigfillset(&sa.sa_mask);
  for (int sig = 1; sig < NSIG; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP || sig == SIGCHLD) continue;
    /* SIGPIPE: our write to a gone INIT must not raise a signal we would forward again. */
    if (sig == SIGPIPE) signal(sig, SIG_IGN);
    else sigaction(sig, &sa, NULL); /* fails for the C library's own real-time signals: fine */
  }
}

/* Ends this process as the command ended: the same code, or killed by the same signal. */
static void __attribute__((noreturn)) end_like(int status) {
  if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
  struct rlimit none = {0, 0};
  setrlimit(RLIMIT_CORE, &none); /* the command dumped its own core, if it did; no second one of ours */
  signal(sig, SIG_DFL);
  sigset_t one;
  sigemptyset(&one);
  sigaddset(&one, sig);
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

static void forward(int sig, pid_t command) {
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) kill(-1, sig);
  else if (killpg(command, sig) != 0) kill(command, sig);
}

/* The namespace's own /proc, so that the command's tools (ps, /proc/<its pid>) see the namespace's
 * pids. Best effort, as --isolate's: some containers lock /proc; the guarantee does not need it.
 * Slave, not private (--isolate's): what the host mounts later (a disk, an automount) still reaches
 * the command; only our /proc, and what the command mounts itself, stay in its mount namespace. */
static void own_proc(void) {
  if (unshare(CLONE_NEWNS) != 0) return;
  if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) != 0) return;
  mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

static void __attribute__((noreturn))
run_init(int report, int from_outside, int to_outside, const char *file, char **argv, const sigset_t *original,
         report_failure fail) {
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* If OUTSIDE died before the line above, no death signal ever comes; its end of the pipe says so
   * (getppid() cannot: a parent outside the namespace reads as 0). */
  struct pollfd alive = {from_outside, POLLIN, 0};
  if (poll(&alive, 1, 0) > 0 && (alive.revents & (POLLHUP | POLLERR))) _exit(1);
  own_proc();
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
    execvp(file, argv);
    _exit(fail(report, STEP_EXEC, errno, file));
  }
  if (report >= 0) close(report); /* the command's exec closes the last copy: the report's EOF */
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
  sigfillset(&all);
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
  handle_every_signal();
  sigprocmask(SIG_SETMASK, &original, NULL);
  int ws = 0;
  while (waitpid(init, &ws, 0) < 0 && errno == EINTR) {
  }
  int status;
  ssize_t n;
  do n = read(back[0], &status, sizeof status);
  while (n < 0 && errno == EINTR);
  /* No status: INIT was killed before the command ended (a SIGKILL to it alone); say so as it was. */
  end_like(n == (ssize_t)sizeof status ? status : ws);
}

#else /* no PID namespaces */

int enter_pid_namespace(void) { return ENOSYS; }

void run_in_pid_namespace(int report, const char *file, char **argv, report_failure fail) {
  (void)file;
  (void)argv;
  _exit(fail(report, STEP_NAMESPACE, ENOSYS, "pid namespace"));
}

#endif
