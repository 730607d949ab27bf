/* reapkit-supervise: the native supervisor behind the `reapkit` command.
 *
 *   reapkit [options] -- command [args...]
 *
 * It stays resident for the whole life of the command, once per server, so it is a small C program
 * (no Node: a resident Node process costs ~40 MiB, this one well under 4 MiB) that sleeps in poll()
 * with no timer while nothing happens. What it does:
 *
 * - runs the command as the leader of its own process group, with stdio inherited untouched, and
 *   (Linux) a kernel parent-death signal, so a SIGKILL of the supervisor still takes the command down;
 * - (Linux) becomes a child subreaper, so descendants that leave the group (setsid, double fork) are
 *   re-parented to it instead of escaping, and reaps every zombie it adopts;
 * - forwards SIGTERM, SIGINT, SIGHUP and SIGQUIT to the group and to every adopted descendant, and
 *   treats them as a request to stop: after the grace, SIGKILL what remains; handles every other
 *   catchable signal too (forwarded, or a stop), so that no signal ends it and orphans the tree;
 * - watches its own parent by kernel event (pidfd on Linux, kqueue elsewhere): when the host dies it
 *   gives the command the close timeout to leave on its own (its stdin has reached end-of-file), then
 *   runs the same bounded stop;
 * - when the command exits, stops whatever it left behind the same way, and exits with the command's
 *   status (128 + signal number for a signal death) once every descendant is gone;
 * - --isolate (Linux): runs the command inside a new PID namespace under a small init of our own
 *   (armed with a SIGKILL parent-death signal). When a PID namespace's init dies, for any reason,
 *   the kernel kills everything inside it: the guarantee for the whole tree even when the
 *   supervisor itself is SIGKILLed.
 *
 * Signalling is exact: a pid is only signalled while it is provably ours. The command's group is
 * signalled with killpg while the command is unreaped (its status is read with WNOWAIT and it is
 * reaped last, so its pid, which is the group id, cannot be reused); other descendants are found by
 * one /proc pass, pinned with a pidfd, re-checked by start time and signalled through the pidfd.
 *
 * Exit status: the command's; 125 for the supervisor's own errors (usage, --isolate refused), 126
 * when the command cannot be executed, 127 when it is not found (as env(1) and timeout(1)).
 */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__) && !defined(REAPKIT_FORCE_KQUEUE)
#define RK_LINUX 1
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#else
#define RK_LINUX 0
#endif
#if !RK_LINUX && (defined(__APPLE__) || defined(__FreeBSD__) || defined(__OpenBSD__) || \
                  defined(__NetBSD__) || defined(REAPKIT_FORCE_KQUEUE))
#define RK_KQUEUE 1
#include <sys/event.h>
#else
#define RK_KQUEUE 0
#endif

#ifndef REAPKIT_VERSION
#define REAPKIT_VERSION unknown
#endif
#define RK_STR2(x) #x
#define RK_STR(x) RK_STR2(x)

#define EXIT_OWN_ERROR 125
#define TICK_MS 20          /* rescan period while stopping: not every exit notifies us */
#define KILL_CONFIRM_MS 5000 /* after SIGKILL, how long to wait for the kernel to finish */
#define ISOLATE_MARGIN_MS 1000
#define MAX_CHAIN 17         /* our parent and up to 16 launchers above it */

/* ------------------------------------------------------------------------------------------------ */
/* options */

typedef struct {
  long grace_ms;
  long close_ms;
  int stop_signal;
  int subreaper;
  int isolate;
  int verbose;
  char **command;
} options_t;

static options_t opt = {9000, 2000, SIGTERM, 1, 0, 0, NULL};

/* Every signal by name (for --verbose); `stop`: accepted by --signal (it ends a process by default). */
static const struct {
  const char *name;
  int number;
  int stop;
} signal_names[] = {
    {"HUP", SIGHUP, 1},     {"INT", SIGINT, 1},       {"QUIT", SIGQUIT, 1},   {"KILL", SIGKILL, 1},
    {"USR1", SIGUSR1, 1},   {"USR2", SIGUSR2, 1},     {"TERM", SIGTERM, 1},   {"ALRM", SIGALRM, 1},
    {"PIPE", SIGPIPE, 1},   {"ILL", SIGILL, 0},       {"TRAP", SIGTRAP, 0},   {"ABRT", SIGABRT, 0},
    {"BUS", SIGBUS, 0},     {"FPE", SIGFPE, 0},       {"SEGV", SIGSEGV, 0},   {"CHLD", SIGCHLD, 0},
    {"CONT", SIGCONT, 0},   {"STOP", SIGSTOP, 0},     {"TSTP", SIGTSTP, 0},   {"TTIN", SIGTTIN, 0},
    {"TTOU", SIGTTOU, 0},   {"URG", SIGURG, 0},       {"XCPU", SIGXCPU, 0},   {"XFSZ", SIGXFSZ, 0},
    {"VTALRM", SIGVTALRM, 0}, {"PROF", SIGPROF, 0},   {"WINCH", SIGWINCH, 0}, {"IO", SIGIO, 0},
    {"SYS", SIGSYS, 0},
#ifdef SIGPWR
    {"PWR", SIGPWR, 0},
#endif
#ifdef SIGSTKFLT
    {"STKFLT", SIGSTKFLT, 0},
#endif
};

static const char *signal_name(int sig) {
  static char bufs[2][16]; /* two names may appear in one event */
  static int next = 0;
  char *buf = bufs[next++ & 1];
  for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
    if (signal_names[i].number == sig) {
      snprintf(buf, sizeof bufs[0], "SIG%s", signal_names[i].name);
      return buf;
    }
#ifdef SIGRTMIN
  if (sig >= SIGRTMIN && sig <= SIGRTMAX) {
    snprintf(buf, sizeof bufs[0], "SIGRTMIN+%d", sig - SIGRTMIN);
    return buf;
  }
#endif
  snprintf(buf, sizeof bufs[0], "%d", sig);
  return buf;
}

static int parse_signal(const char *s) {
  if (isdigit((unsigned char)s[0])) {
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (*end != '\0') return -1;
    /* only the signals that end a process by default (not SIGCHLD, SIGSTOP, SIGCONT, ...) */
    for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
      if (signal_names[i].number == v && signal_names[i].stop) return (int)v;
    return -1;
  }
  if (strncasecmp(s, "SIG", 3) == 0) s += 3;
  for (size_t i = 0; i < sizeof signal_names / sizeof signal_names[0]; i++)
    if (signal_names[i].stop && strcasecmp(s, signal_names[i].name) == 0) return signal_names[i].number;
  return -1;
}

/* A whole number of milliseconds, or -1. */
static long parse_ms(const char *s) {
  if (!isdigit((unsigned char)s[0])) return -1;
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  return (errno == 0 && *end == '\0') ? v : -1;
}

/* The library's environment knobs, with the same ranges: a bad value never stops a shutdown path,
 * it is clamped (or replaced by the default) and reported on stderr. */
static long env_ms(const char *name, long fallback, long min, long max) {
  const char *raw = getenv(name);
  if (raw == NULL || raw[0] == '\0') return fallback;
  long v = parse_ms(raw);
  if (v < 0) {
    fprintf(stderr, "reapkit: %s=%s is not a number of milliseconds; using %ld\n", name, raw, fallback);
    return fallback;
  }
  long c = v < min ? min : v > max ? max : v;
  if (c != v) fprintf(stderr, "reapkit: %s=%s is outside %ld..%ld ms; using %ld\n", name, raw, min, max, c);
  return c;
}

static void usage(FILE *to) {
  fputs("usage: reapkit [options] -- command [args...]\n"
        "\n"
        "Runs the command in its own process group so that nothing it starts outlives it or its host.\n"
        "\n"
        "  --grace <ms>          stop signal -> SIGKILL grace (default 9000; env REAPKIT_KILL_GRACE_MS)\n"
        "  --signal <name>       signal for a stop the host did not send itself (default SIGTERM)\n"
        "  --close-timeout <ms>  after the host dies, time for the command to exit on its own, stdin at\n"
        "                        end-of-file, before it is signalled (default 2000; env\n"
        "                        REAPKIT_CLOSE_TIMEOUT_MS)\n"
        "  --no-subreaper        do not adopt descendants that leave the group (Linux)\n"
        "  --isolate             run the command in a new PID namespace (Linux; root or unprivileged\n"
        "                        user namespaces): the whole tree dies with the supervisor, always\n"
        "  --verbose             one JSON lifecycle event per line on stderr\n"
        "  --help, --version\n"
        "\n"
        "Exit status: the command's (128 + n when killed by signal n); 125 reapkit's own error,\n"
        "126 the command cannot be executed, 127 it was not found.\n",
        to);
}

static void die_usage(const char *fmt, const char *arg) {
  fputs("reapkit: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\nTry 'reapkit --help'.\n", stderr);
  exit(EXIT_OWN_ERROR);
}

static void parse_options(int argc, char **argv) {
  opt.grace_ms = env_ms("REAPKIT_KILL_GRACE_MS", 9000, 100, 300000);
  opt.close_ms = env_ms("REAPKIT_CLOSE_TIMEOUT_MS", 2000, 250, 30000);
  int i = 1;
  for (; i < argc; i++) {
    char *a = argv[i];
    if (strcmp(a, "--") == 0) {
      i++;
      break;
    }
    if (a[0] != '-') break; /* the command starts here (the `--` is recommended, not required) */
    char *value = NULL;
    char *eq = strchr(a, '=');
    int takes = strncmp(a, "--grace", 7) == 0 || strncmp(a, "--signal", 8) == 0 ||
                strncmp(a, "--close-timeout", 15) == 0;
    if (takes) {
      if (eq) {
        *eq = '\0';
        value = eq + 1;
      } else if (i + 1 < argc) {
        value = argv[++i];
      } else {
        die_usage("option %s needs a value", a);
      }
    }
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      usage(stdout);
      exit(0);
    } else if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
      printf("reapkit %s\n", RK_STR(REAPKIT_VERSION));
      exit(0);
    } else if (strcmp(a, "--grace") == 0) {
      long v = parse_ms(value);
      if (v < 100 || v > 300000) die_usage("--grace must be a whole number of milliseconds in 100..300000, not '%s'", value);
      opt.grace_ms = v;
    } else if (strcmp(a, "--close-timeout") == 0) {
      long v = parse_ms(value);
      if (v < 0 || v > 30000) die_usage("--close-timeout must be a whole number of milliseconds in 0..30000, not '%s'", value);
      opt.close_ms = v;
    } else if (strcmp(a, "--signal") == 0) {
      int s = parse_signal(value);
      if (s < 0) die_usage("--signal: '%s' is not a signal that stops a process (HUP INT QUIT KILL USR1 USR2 TERM ALRM PIPE, or its number)", value);
      opt.stop_signal = s;
    } else if (strcmp(a, "--no-subreaper") == 0) {
      opt.subreaper = 0;
    } else if (strcmp(a, "--isolate") == 0) {
      opt.isolate = 1;
    } else if (strcmp(a, "--verbose") == 0 || strcmp(a, "-v") == 0) {
      opt.verbose = 1;
    } else {
      die_usage("unknown option '%s'", a);
    }
  }
  if (i >= argc) die_usage("%s", "no command given: reapkit [options] -- command [args...]");
  opt.command = argv + i;
}

/* ------------------------------------------------------------------------------------------------ */
/* time and events */

static long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static long long started_ms;
static const char *role = "supervisor"; /* "init" inside the namespace of --isolate */

/* One JSON object per line on stderr, only with --verbose. `fields` is a JSON fragment. */
static void event(const char *name, const char *fields, ...) {
  if (!opt.verbose) return;
  char extra[512] = "";
  if (fields && fields[0]) {
    va_list ap;
    va_start(ap, fields);
    extra[0] = ',';
    vsnprintf(extra + 1, sizeof extra - 1, fields, ap);
    va_end(ap);
  }
  fprintf(stderr, "{\"source\":\"reapkit\",\"event\":\"%s\",\"role\":\"%s\",\"pid\":%d,\"ms\":%lld%s}\n", name,
          role, (int)getpid(), now_ms() - started_ms, extra);
}

/* ------------------------------------------------------------------------------------------------ */
/* signals: handlers write the number into a self-pipe that the poll loop reads.
 *
 * Every catchable signal is handled (as tini and dumb-init do): a signal we left at its default
 * action would end the supervisor at once and leave the command to its parent-death SIGKILL and its
 * escaped descendants to nobody. What each one means (the README's table):
 *
 * - stop, the signal itself forwarded: SIGTERM, SIGINT, SIGHUP, SIGQUIT;
 * - stop with --signal (default SIGTERM), as a request to end: the signals that end a process "in
 *   error" when someone sends them (SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS,
 *   SIGSTKFLT, SIGXCPU, SIGXFSZ): forwarding a SIGSEGV would make the command dump core;
 * - forwarded to the command's group, no stop by itself: everything else (SIGUSR1, SIGUSR2,
 *   SIGALRM, SIGVTALRM, SIGPROF, SIGPWR, SIGIO, SIGURG, SIGWINCH and the real-time signals). When
 *   one ends the command, its exit starts the stop of what it left behind, with the grace;
 * - unchanged: SIGCHLD (reaping), SIGPIPE, SIGTTOU and SIGTTIN ignored (a --verbose line into a dead
 *   host's pipe, touching the terminal), SIGTSTP and SIGCONT at their defaults (job control).
 *
 * A fault the kernel raises in this very process (SIGSEGV from a bad pointer, SIGSYS from seccomp)
 * is not a request: its default action is restored and it ends the supervisor, as it should. So is
 * a kernel SIGXFSZ (a --verbose line past RLIMIT_FSIZE: the write fails, nothing else happens). */

static int sig_pipe[2] = {-1, -1};
static int pdeath_signal = 0; /* the real-time signal armed as our parent-death signal (old kernels) */

static int is_fault_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE || sig == SIGTRAP || sig == SIGSYS;
}

static void on_signal(int sig, siginfo_t *si, void *uctx) {
  (void)uctx;
  int saved = errno;
  /* si_code > 0: raised by the kernel for this process (a fault), not sent by anyone */
  if (si != NULL && si->si_code > 0 && (is_fault_signal(sig) || sig == SIGXFSZ)) {
    if (sig != SIGXFSZ) {
      struct sigaction dfl;
      memset(&dfl, 0, sizeof dfl);
      dfl.sa_handler = SIG_DFL;
      sigaction(sig, &dfl, NULL); /* the faulting instruction runs again and ends us */
    }
    errno = saved;
    return;
  }
  unsigned char b = (unsigned char)sig;
  ssize_t n = write(sig_pipe[1], &b, 1); /* full pipe: dropped, fine for SIGCHLD, rare otherwise */
  (void)n;
  errno = saved;
}

static int cloexec_pipe(int fds[2], int nonblock) {
  if (pipe(fds) != 0) return -1;
  for (int k = 0; k < 2; k++) {
    fcntl(fds[k], F_SETFD, FD_CLOEXEC);
    if (nonblock) fcntl(fds[k], F_SETFL, fcntl(fds[k], F_GETFL) | O_NONBLOCK);
  }
  return 0;
}

enum signal_action { SA_STOP_SAME, SA_STOP_DEFAULT, SA_FORWARD };

static enum signal_action signal_action_of(int sig) {
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) return SA_STOP_SAME;
  if (is_fault_signal(sig) || sig == SIGABRT || sig == SIGXCPU || sig == SIGXFSZ) return SA_STOP_DEFAULT;
#ifdef SIGSTKFLT
  if (sig == SIGSTKFLT) return SA_STOP_DEFAULT;
#endif
  return SA_FORWARD;
}

/* Not ours to handle: SIGKILL and SIGSTOP cannot be; the rest keep the dispositions set below. */
static int left_alone(int sig) {
  return sig == SIGKILL || sig == SIGSTOP || sig == SIGTSTP || sig == SIGCONT || sig == SIGPIPE || sig == SIGTTOU ||
         sig == SIGTTIN;
}

static void install_handlers(int parent_death_signal) {
  if (cloexec_pipe(sig_pipe, 1) != 0) {
    perror("reapkit: pipe");
    exit(EXIT_OWN_ERROR);
  }
  pdeath_signal = parent_death_signal;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_RESTART | SA_SIGINFO;
  sigfillset(&sa.sa_mask);
  sigset_t ours;
  sigemptyset(&ours);
  for (int sig = 1; sig < NSIG; sig++) {
    if (left_alone(sig)) continue;
    /* (the C library's own real-time signals refuse: EINVAL, fine) */
    if (sigaction(sig, &sa, NULL) == 0) sigaddset(&ours, sig);
  }
  /* A blocked mask survives exec: a host that spawned us with SIGCHLD blocked would leave us deaf. */
  sigprocmask(SIG_UNBLOCK, &ours, NULL);
  /* Our stderr may be a pipe to a host that has died: a --verbose line must not kill us (SIGPIPE)
   * in the middle of the very stop it reports. Nor may touching the terminal stop us. The command
   * gets default dispositions back before exec. */
  struct sigaction ign;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, NULL);
  sigaction(SIGTTOU, &ign, NULL);
  sigaction(SIGTTIN, &ign, NULL);
}

/* ------------------------------------------------------------------------------------------------ */
/* starting the command */

static int tty_fd = -1;          /* the terminal whose foreground we handed to the command */
static pid_t tty_restore_pgrp = 0;

static void restore_tty(void) {
  if (tty_fd < 0 || tty_restore_pgrp <= 0) return;
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTTOU); /* we are a background group now: tcsetpgrp would stop us */
  sigprocmask(SIG_BLOCK, &block, &old);
  tcsetpgrp(tty_fd, tty_restore_pgrp);
  sigprocmask(SIG_SETMASK, &old, NULL);
  tty_fd = -1;
}

/* fork + exec the command as a group leader; exits the supervisor if it cannot be executed. */
static pid_t start_command(char **argv) {
  int err_pipe[2];
  if (cloexec_pipe(err_pipe, 0) != 0) {
    perror("reapkit: pipe");
    exit(EXIT_OWN_ERROR);
  }
  /* Interactive use: a new group is a background group, which may not read the terminal. Hand it
   * the foreground, as a shell does, when we hold it ourselves. */
  int want_tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old); /* no handler may run in the child before exec */
  pid_t self = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(err_pipe[0]);
    setpgid(0, 0);
    /* Both sides hand over the terminal, so the command never reads it as a background group. */
    if (want_tty) tcsetpgrp(STDIN_FILENO, getpid());
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int s = 1; s < NSIG; s++)
      if (s != SIGKILL && s != SIGSTOP) sigaction(s, &dfl, NULL);
#if RK_LINUX
    /* The kernel's guarantee: if the supervisor dies, even by SIGKILL, so does the command. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != self) _exit(EXIT_OWN_ERROR);
#else
    (void)self;
#endif
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execvp(argv[0], argv);
    int e = errno;
    ssize_t w = write(err_pipe[1], &e, sizeof e);
    (void)w;
    _exit(e == ENOENT ? 127 : 126);
  }
  int fork_errno = errno;
  if (pid > 0) {
    setpgid(pid, pid); /* both sides, so the group exists before either goes on (EACCES after exec) */
    if (want_tty && tcsetpgrp(STDIN_FILENO, pid) == 0) {
      tty_fd = STDIN_FILENO;
      /* Inside --isolate's namespace our group is not visible (0): the supervisor outside restores. */
      tty_restore_pgrp = strcmp(role, "init") != 0 ? getpgrp() : 0;
    }
  }
  sigprocmask(SIG_SETMASK, &old, NULL);
  close(err_pipe[1]);
  if (pid < 0) {
    fprintf(stderr, "reapkit: fork: %s\n", strerror(fork_errno));
    exit(EXIT_OWN_ERROR);
  }
  int child_errno = 0;
  ssize_t n;
  do n = read(err_pipe[0], &child_errno, sizeof child_errno);
  while (n < 0 && errno == EINTR);
  close(err_pipe[0]);
  if (n == (ssize_t)sizeof child_errno) {
    fprintf(stderr, "reapkit: cannot execute %s: %s\n", argv[0], strerror(child_errno));
    waitpid(pid, NULL, 0);
    restore_tty();
    exit(child_errno == ENOENT ? 127 : 126);
  }
  return pid;
}

/* ------------------------------------------------------------------------------------------------ */
/* the process table (Linux): one /proc pass */

typedef struct {
  pid_t pid, ppid, pgrp;
  unsigned long long start;
  char state;
} proc_t;

static proc_t *procs = NULL;
static size_t nprocs = 0, procs_cap = 0;

#if RK_LINUX
static int read_stat(pid_t pid, proc_t *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char *p = strrchr(buf, ')'); /* the command name may contain anything, even ')' */
  if (p == NULL) return -1;
  int ppid = 0, pgrp = 0;
  char state = 0;
  unsigned long long start = 0;
  if (sscanf(p + 1, " %c %d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu", &state,
             &ppid, &pgrp, &start) != 4)
    return -1;
  out->pid = pid;
  out->ppid = ppid;
  out->pgrp = pgrp;
  out->start = start;
  out->state = state;
  return 0;
}

static void scan_procs(void) {
  nprocs = 0;
  DIR *d = opendir("/proc");
  if (d == NULL) return;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (!isdigit((unsigned char)e->d_name[0])) continue;
    if (nprocs == procs_cap) {
      size_t cap = procs_cap ? procs_cap * 2 : 256;
      proc_t *p = realloc(procs, cap * sizeof *p);
      if (p == NULL) break;
      procs = p;
      procs_cap = cap;
    }
    if (read_stat((pid_t)atoi(e->d_name), &procs[nprocs]) == 0) nprocs++;
  }
  closedir(d);
}

/* Signal one process found by the scan, only if it is still that process: pin it with a pidfd,
 * re-check its start time, signal through the pidfd (no pid reuse can slip in between). */
static int signal_pinned(const proc_t *p, int sig) {
  proc_t again;
#if defined(SYS_pidfd_open) && defined(SYS_pidfd_send_signal)
  int fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
  if (fd >= 0) {
    int r = -1;
    if (read_stat(p->pid, &again) == 0 && again.start == p->start && again.state != 'Z')
      r = (int)syscall(SYS_pidfd_send_signal, fd, sig, NULL, 0);
    close(fd);
    return r;
  }
  if (errno != ENOSYS) return -1;
#endif
  if (read_stat(p->pid, &again) == 0 && again.start == p->start && again.state != 'Z') return kill(p->pid, sig);
  return -1;
}
#endif

/* ------------------------------------------------------------------------------------------------ */
/* the supervision loop */

enum mode { PLAIN, NS_INIT, OUTER };
enum phase { RUNNING, CLOSING, STOPPING, KILLING };
static const char *phase_names[] = {"running", "closing", "stopping", "killing"};

typedef struct {
  enum mode mode;
  pid_t main;          /* the command (PLAIN, NS_INIT) or our namespace init (OUTER) */
  int main_done;       /* its status is known */
  int main_reaped;
  int exit_code;
  enum phase phase;
  long long deadline;
  int parent_fd;       /* kqueue watching our parent (not Linux); -1 */
  pid_t parent;
  pid_t host;          /* the host as far as we can tell: our parent, or the first ancestor behind the
                        * launchers that does not share our stdin (npx) */
  int launchers;       /* how many launchers sit between that host and us */
  /* Linux: a pidfd on every process of the chain from our parent up to that host. The first of them
   * to die is taken for the host (a launcher outlives its host; a host that passes its own stdin on
   * looks like a launcher, so which one is the host cannot be told by the pipe alone). */
  int chain_fd[MAX_CHAIN];
  pid_t chain_pid[MAX_CHAIN];
  int nchain;
  pid_t gone;          /* which of them died (for the event) */
  int parent_gone;
  int stop_signal_in_use;
  int interrupts;      /* SIGINTs received: a second one means now */
  /* (pid, start) pairs already sent the stop signal, so a rescan does not send it twice */
  proc_t *signalled;
  size_t nsignalled, signalled_cap;
} state_t;

static state_t st;

/* The process table can be read and is our PID namespace's (Linux, /proc/self is us). A /proc of
 * another namespace would name other processes by our pids: then only the group is signalled. */
static int scan_ok = 0;

static void check_proc(void) {
#if RK_LINUX
  char buf[32];
  ssize_t n = readlink("/proc/self", buf, sizeof buf - 1);
  if (n > 0) {
    buf[n] = '\0';
    scan_ok = atoi(buf) == (int)getpid();
  }
#endif
}

static int code_of(int how, int status) {
  return how == CLD_EXITED ? status : 128 + status;
}

static void note_main_exit(int code, int by_signal, int sig) {
  st.main_done = 1;
  st.exit_code = code;
  if (by_signal)
    event("child-exit", "\"child\":%d,\"signal\":\"%s\",\"code\":%d", (int)st.main, signal_name(sig), code);
  else
    event("child-exit", "\"child\":%d,\"code\":%d", (int)st.main, code);
}

/* Reap every zombie we own except the command, whose status is read without reaping it (it keeps
 * the group id pinned until we are done). */
static void reap(void) {
  if (st.mode == NS_INIT || st.mode == OUTER || !scan_ok) {
    /* Inside the namespace we signal with kill(-1), outside only our init: no pin is needed.
     * Without a process table (not Linux, or a /proc of another PID namespace) the command is
     * reaped at once too: the group then stays pinned only while it has members. */
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == st.main) {
        st.main_reaped = 1;
        if (WIFSIGNALED(status))
          note_main_exit(128 + WTERMSIG(status), 1, WTERMSIG(status));
        else
          note_main_exit(WEXITSTATUS(status), 0, 0);
      } else {
        event("reaped", "\"child\":%d", (int)pid);
      }
    }
    return;
  }
#if RK_LINUX
  /* (scan_ok) Our children, other than the command: adopted orphans. The kernel's list is cheap; without it
   * (CONFIG_PROC_CHILDREN off) one /proc pass. */
  char path[64];
  snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf - 1)) > 0) {
      buf[n] = '\0';
      /* a pid split across two reads is only delayed: it is reaped at the next event or tick */
      char *s = buf, *end;
      for (;;) {
        long v = strtol(s, &end, 10);
        if (end == s) break;
        s = end;
        if (v > 0 && (pid_t)v != st.main && waitpid((pid_t)v, NULL, WNOHANG) > 0) event("reaped", "\"child\":%ld", v);
      }
    }
    close(fd);
  } else {
    scan_procs();
    for (size_t i = 0; i < nprocs; i++)
      if (procs[i].ppid == getpid() && procs[i].pid != st.main && procs[i].state == 'Z' &&
          waitpid(procs[i].pid, NULL, WNOHANG) > 0)
        event("reaped", "\"child\":%d", (int)procs[i].pid);
  }
#endif
  if (!st.main_done) {
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int exited = waitid(P_PID, (id_t)st.main, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == st.main &&
                 (si.si_code == CLD_EXITED || si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED);
    if (exited) note_main_exit(code_of(si.si_code, si.si_status), si.si_code != CLD_EXITED, si.si_status);
  }
}

static int already_signalled(const proc_t *p) {
  for (size_t i = 0; i < st.nsignalled; i++)
    if (st.signalled[i].pid == p->pid && st.signalled[i].start == p->start) return 1;
  return 0;
}

static void remember_signalled(const proc_t *p) {
  if (st.nsignalled == st.signalled_cap) {
    size_t cap = st.signalled_cap ? st.signalled_cap * 2 : 32;
    proc_t *n = realloc(st.signalled, cap * sizeof *n);
    if (n == NULL) return;
    st.signalled = n;
    st.signalled_cap = cap;
  }
  st.signalled[st.nsignalled++] = *p;
}

/* Send `sig` to everything that is ours (`fresh_only`: only to what has not had it yet;
 * `group_covered`: a killpg has just sent it to the group, so members are only remembered).
 * Returns how many live processes remain ours besides the command's zombie. */
static int signal_ours_ex(int sig, int fresh_only, int group_covered) {
  int remaining = 0;
  if (st.mode == NS_INIT) {
    /* init of a PID namespace: kill(-1) reaches every process in it but ourselves. Something
     * remains while we have a child: every process in the namespace descends from us. */
    if (sig && !(fresh_only && st.stop_signal_in_use)) kill(-1, sig); /* once per stop: see begin_stop */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 ? 1 : 0;
  }
  if (st.mode == OUTER) {
    if (!st.main_reaped) {
      if (sig && !(fresh_only && st.stop_signal_in_use)) kill(st.main, sig);
      return 1;
    }
    return 0;
  }
  /* PLAIN: the group (pinned by the unreaped command), then every descendant found in /proc. */
  pid_t pgid = st.main;
  if (!scan_ok) {
    /* The group only (no subreaper exists elsewhere to adopt escapees; without a trustworthy table
     * we cannot find them). Zombies of ours are reaped at once here, so a live member remains
     * while the group can be signalled. */
    int members = killpg(pgid, 0) == 0;
    if (members && sig && !(fresh_only && st.stop_signal_in_use)) killpg(pgid, sig);
    return members;
  }
  if (sig && !fresh_only && !st.main_reaped) killpg(pgid, sig);
#if RK_LINUX
  scan_procs();
  pid_t self = getpid();
  /* Mark our descendants: repeat parent->child passes until nothing changes (the table is small). */
  char *mine = calloc(nprocs ? nprocs : 1, 1);
  if (mine == NULL) return 1;
  for (size_t i = 0; i < nprocs; i++) mine[i] = procs[i].ppid == self;
  for (int changed = 1; changed;) {
    changed = 0;
    for (size_t i = 0; i < nprocs; i++) {
      if (mine[i]) continue;
      for (size_t j = 0; j < nprocs; j++)
        if (mine[j] && procs[j].pid == procs[i].ppid) {
          mine[i] = 1;
          changed = 1;
          break;
        }
    }
  }
  for (size_t i = 0; i < nprocs; i++) {
    proc_t *p = &procs[i];
    if (p->pid == self || p->state == 'Z') continue;
    int in_group = !st.main_reaped && p->pgrp == pgid;
    if (!mine[i] && !in_group) continue;
    remaining++;
    if (!sig) continue;
    if (fresh_only) {
      if (already_signalled(p)) continue;
      remember_signalled(p);
      if (group_covered && in_group) continue;
    }
    signal_pinned(p, sig);
  }
  free(mine);
#else
  (void)group_covered;
#endif
  return remaining;
}

static int signal_ours(int sig, int fresh_only) {
  return signal_ours_ex(sig, fresh_only, 0);
}

static void begin_stop(int sig, const char *why) {
  st.phase = STOPPING;
  long long grace = opt.grace_ms + (st.mode == OUTER ? ISOLATE_MARGIN_MS : 0);
  st.deadline = now_ms() + grace;
  event("stop", "\"why\":\"%s\",\"signal\":\"%s\",\"graceMs\":%lld", why, signal_name(sig), grace);
  int covered = 0;
  if (st.mode == PLAIN && scan_ok && !st.main_reaped)
    covered = killpg(st.main, sig) == 0; /* the group at once: members forked mid-scan get it too */
  int remaining = signal_ours_ex(sig, 1, covered);
  st.stop_signal_in_use = sig;
  event("signalled", "\"signal\":\"%s\",\"remaining\":%d", signal_name(sig), remaining);
}

static void begin_kill(const char *why) {
  st.phase = KILLING;
  st.deadline = now_ms() + KILL_CONFIRM_MS;
  int remaining = signal_ours(SIGKILL, 0);
  event("escalate", "\"why\":\"%s\",\"signal\":\"SIGKILL\",\"remaining\":%d", why, remaining);
}

static void finish(int survivors) {
  restore_tty();
  if (!st.main_reaped) {
    int status;
    if (waitpid(st.main, &status, st.main_done ? 0 : WNOHANG) == st.main && !st.main_done)
      st.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  }
  if (survivors) {
    fprintf(stderr, "reapkit: %d process(es) did not die within %d ms of SIGKILL (uninterruptible?)\n", survivors,
            KILL_CONFIRM_MS);
  }
  int code = st.main_done ? st.exit_code : EXIT_OWN_ERROR;
  event("exit", "\"code\":%d,\"survivors\":%d", code, survivors);
  exit(code);
}

static void on_parent_gone(void) {
  if (st.parent_gone) return;
  st.parent_gone = 1;
  event("parent-exit", "\"host\":%d,\"phase\":\"%s\"", (int)(st.gone ? st.gone : st.host ? st.host : st.parent),
        phase_names[st.phase]);
  if (st.parent_fd >= 0) {
    close(st.parent_fd);
    st.parent_fd = -1;
  }
  for (int i = 0; i < st.nchain; i++) close(st.chain_fd[i]);
  st.nchain = 0;
  if (st.phase == RUNNING) {
    /* The host is gone, so is its end of the command's stdin: give the command the close timeout
     * to notice end-of-file and leave on its own, then stop it. */
    st.phase = CLOSING;
    st.deadline = now_ms() + opt.close_ms;
  }
}

static void on_signal_received(int sig) {
  if (sig == SIGCHLD) return; /* reaped at the top of the loop */
  enum signal_action action = signal_action_of(sig);
  if (action == SA_FORWARD) {
    /* not a stop: pass it on; if it ends the command, its exit starts the stop of the rest */
    event("forward", "\"signal\":\"%s\"", signal_name(sig));
    if (st.mode == OUTER) {
      if (!st.main_reaped) kill(st.main, sig); /* our init passes it to the command's group */
    } else if (!st.main_reaped) {
      killpg(st.main, sig);
    }
    return;
  }
  if (action == SA_STOP_DEFAULT) {
    /* a request to end, sent as a fault signal: the command gets the stop signal, not the fault */
    event("signal", "\"signal\":\"%s\",\"as\":\"%s\"", signal_name(sig), signal_name(opt.stop_signal));
    if (st.phase == RUNNING || st.phase == CLOSING) begin_stop(opt.stop_signal, "signal");
    return;
  }
  if (sig == SIGINT && ++st.interrupts >= 2 && st.phase == STOPPING) {
    /* Ctrl+C twice: a person wants it over now. */
    begin_kill("second SIGINT");
    return;
  }
  if (st.phase == RUNNING || st.phase == CLOSING) {
    event("signal", "\"signal\":\"%s\"", signal_name(sig));
    begin_stop(sig, "signal");
  } else if (st.phase == STOPPING) {
    /* Already stopping: forward it all the same (the host may send stdin end, then SIGTERM, then
     * SIGINT); the grace is not restarted. */
    event("signal", "\"signal\":\"%s\",\"phase\":\"stopping\"", signal_name(sig));
    if (st.mode == PLAIN && (!st.main_reaped || !scan_ok)) killpg(st.main, sig);
    else if (st.mode == OUTER && !st.main_reaped) kill(st.main, sig);
    else if (st.mode == NS_INIT) kill(-1, sig);
  }
}

/* Interactive use: Ctrl+Z stopped the command (its group has the terminal). Behave as a job: take
 * the terminal back and stop ourselves, so the shell sees its job stopped; on fg (SIGCONT and the
 * terminal handed to our group) give the terminal back and continue the command. */
static void follow_job_control(void) {
  if (st.mode != PLAIN || tty_fd < 0 || tty_restore_pgrp <= 0 || st.main_done) return;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, (id_t)st.main, &si, WSTOPPED | WNOHANG) != 0 || si.si_pid != st.main || si.si_code != CLD_STOPPED)
    return;
  event("job-stop", "\"signal\":\"%d\"", si.si_status);
  tcsetpgrp(tty_fd, tty_restore_pgrp);
  raise(SIGSTOP); /* returns once we are continued (fg or bg) */
  if (tcgetpgrp(tty_fd) == getpgrp()) tcsetpgrp(tty_fd, st.main); /* fg: the command reads again */
  killpg(st.main, SIGCONT);
  event("job-continue", "");
}

static void supervise(void) {
  for (;;) {
    reap();
    follow_job_control();
    long long now = now_ms();
    if (st.main_done) {
      /* Stop what the command left behind; leave once nothing of it remains. */
      int remaining = signal_ours(0, 0);
      if (remaining == 0) finish(0);
      if (st.phase == RUNNING || st.phase == CLOSING) begin_stop(opt.stop_signal, "child-exit");
    }
    if (st.phase != RUNNING && now >= st.deadline) {
      if (st.phase == CLOSING) {
        begin_stop(opt.stop_signal, "parent-exit");
      } else if (st.phase == STOPPING) {
        begin_kill("grace");
      } else {
        finish(signal_ours(SIGKILL, 0));
      }
      continue;
    }
    /* While stopping, processes started after the stop signal (a server's own cleanup helpers) are
     * left alone until the grace ends; SIGKILL then takes everything. */
    if (st.phase == KILLING) signal_ours(SIGKILL, 0);

    int timeout = -1; /* idle: no timer at all */
    if (st.phase != RUNNING) {
      long long left = st.deadline - now_ms();
      if (left < 0) left = 0;
      /* While stopping, not every exit notifies us (a grandchild reaped by its own parent): tick. */
      if (st.phase != CLOSING && left > TICK_MS) left = TICK_MS;
      timeout = (int)left;
    }
#if !RK_LINUX && !RK_KQUEUE
    /* No kernel event for the parent here: poll getppid once a second. */
    if (!st.parent_gone && st.parent > 1 && (timeout < 0 || timeout > 1000)) timeout = 1000;
#endif
    struct pollfd fds[2 + MAX_CHAIN];
    int nfds = 0;
    fds[nfds].fd = sig_pipe[0];
    fds[nfds].events = POLLIN;
    nfds++;
    if (st.parent_fd >= 0) {
      fds[nfds].fd = st.parent_fd;
      fds[nfds].events = POLLIN;
      nfds++;
    }
    int chain_at = nfds;
    for (int i = 0; i < st.nchain; i++) {
      fds[nfds].fd = st.chain_fd[i];
      fds[nfds].events = POLLIN;
      nfds++;
    }
    int r = poll(fds, (nfds_t)nfds, timeout);
    if (r < 0 && errno != EINTR) {
      perror("reapkit: poll");
      begin_kill("internal error");
      continue;
    }
    if (r > 0 && (fds[0].revents & POLLIN)) {
      unsigned char buf[64];
      ssize_t n;
      while ((n = read(sig_pipe[0], buf, sizeof buf)) > 0)
        for (ssize_t k = 0; k < n; k++) {
          if (pdeath_signal > 0 && buf[k] == (unsigned char)pdeath_signal) {
            /* fires when the parent *thread* that forked us exits: only a changed parent counts */
            if (getppid() != st.parent) on_parent_gone();
            continue;
          }
          on_signal_received(buf[k]);
        }
    }
    if (r > 0 && st.parent_fd >= 0 && fds[1].revents) on_parent_gone();
    for (int i = chain_at; r > 0 && i < nfds && !st.parent_gone; i++)
      if (fds[i].revents) {
        st.gone = st.chain_pid[i - chain_at];
        on_parent_gone();
      }
#if !RK_LINUX && !RK_KQUEUE
    if (!st.parent_gone && st.parent > 1 && getppid() != st.parent) on_parent_gone();
#endif
  }
}

#if RK_LINUX
/*
 * The host behind launchers. `npx -y reapkit -- cmd` runs us under `npm exec` and `sh -c`, which
 * outlive the host that started them: watching our parent alone would never see the host die. A
 * launcher passes its stdin (the host's pipe) on to us, and keeps it: so walk up while the parent
 * holds the very pipe (or socket) that is our stdin; the first ancestor that does not is the host as
 * far as the pipe can tell. It cannot tell for sure: a host that was itself given a pipe as stdin and
 * passes it on to us (`sh -c 'producer | node host.js'`, stdio 'inherit') looks like a launcher. So
 * every process of the chain is watched, and the first death among them is taken for the host's: a
 * launcher never ends before the host it launched for.
 * Fills `chain` (our parent first) and returns its length; `*launchers` is length - 1.
 */
static int find_chain(pid_t parent, pid_t *chain, int *launchers) {
  struct stat mine;
  int n = 0;
  chain[n++] = parent;
  *launchers = 0;
  if (!scan_ok || fstat(STDIN_FILENO, &mine) != 0 || !(S_ISFIFO(mine.st_mode) || S_ISSOCK(mine.st_mode))) return n;
  pid_t p = parent;
  while (n < MAX_CHAIN && p > 1) {
    char path[64];
    struct stat theirs;
    proc_t row;
    snprintf(path, sizeof path, "/proc/%d/fd/0", (int)p);
    if (stat(path, &theirs) != 0 || theirs.st_dev != mine.st_dev || theirs.st_ino != mine.st_ino) break;
    if (read_stat(p, &row) != 0 || row.ppid <= 1) break;
    p = row.ppid;
    chain[n++] = p;
    ++*launchers;
  }
  return n;
}

/* Is chain[i] still where we found it (the parent of chain[i - 1], or ours)? After the pidfd pinned
 * it: not a recycled pid. */
static int chain_linked(const pid_t *chain, int i) {
  if (i == 0) return getppid() == chain[0];
  proc_t row;
  return read_stat(chain[i - 1], &row) == 0 && row.ppid == chain[i];
}
#endif

/* Watch the host (our parent, and the processes behind our launchers) by kernel event: pidfds into
 * st.chain_fd on Linux, a kqueue into st.parent_fd elsewhere; on Linux without pidfd_open, a
 * parent-death signal. Sets st.parent_gone when one is already gone. */
static void watch_parent(pid_t parent) {
  if (parent <= 1) return; /* started by init (or already orphaned): nothing to watch */
#if RK_LINUX
#if defined(SYS_pidfd_open)
  pid_t chain[MAX_CHAIN];
  int n = find_chain(parent, chain, &st.launchers);
  st.host = chain[n - 1];
  for (int i = 0; i < n; i++) {
    int fd = (int)syscall(SYS_pidfd_open, chain[i], 0);
    if (fd < 0) {
      /* ESRCH (or EINVAL, the kernel's race for a process without tasks): gone before we pinned it.
       * Anything else (no pidfd_open, out of descriptors) is no death: watch what we have, and
       * without even our parent's pidfd fall back to the parent-death signal below. */
      if (errno != ESRCH && errno != EINVAL) break;
      st.parent_gone = 1;
      st.gone = chain[i];
      return;
    }
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    st.chain_fd[st.nchain] = fd;
    st.chain_pid[st.nchain] = chain[i];
    st.nchain++;
    if (!chain_linked(chain, i)) { /* died (and maybe recycled) before the pidfd pinned it */
      st.parent_gone = 1;
      st.gone = chain[i];
      return;
    }
  }
  if (st.nchain > 0) {
    st.host = st.chain_pid[st.nchain - 1];
    st.launchers = st.nchain - 1;
    return;
  }
  st.host = 0;
  st.launchers = 0;
#endif
  /* Kernels before 5.3: the parent-death signal (a real-time one nobody else uses). It fires when
   * the parent *thread* that forked us exits, which pidfd does not suffer from. */
  pdeath_signal = SIGRTMIN + 1;
  prctl(PR_SET_PDEATHSIG, pdeath_signal, 0, 0, 0);
  if (getppid() != parent) st.parent_gone = 1;
#elif RK_KQUEUE
  int kq = kqueue();
  if (kq < 0) return;
  fcntl(kq, F_SETFD, FD_CLOEXEC);
  struct kevent ev;
  EV_SET(&ev, (uintptr_t)parent, EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, NULL);
  if (kevent(kq, &ev, 1, NULL, 0, NULL) != 0 || getppid() != parent) st.parent_gone = 1;
  st.parent_fd = kq;
#endif
}

/* ------------------------------------------------------------------------------------------------ */
/* --isolate (Linux) */

#if RK_LINUX
static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Enter a new PID namespace for our next child; unprivileged, through a user namespace first. */
static void unshare_pid_namespace(void) {
  if (unshare(CLONE_NEWPID) == 0) return;
  int first = errno;
  if (first == EPERM && geteuid() != 0) {
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER) == 0) {
      char map[64];
      write_file("/proc/self/setgroups", "deny");
      snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
      int ok = write_file("/proc/self/uid_map", map) == 0;
      snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
      ok = ok && write_file("/proc/self/gid_map", map) == 0;
      if (ok && unshare(CLONE_NEWPID) == 0) return;
    }
    first = errno;
  }
  fprintf(stderr,
          "reapkit: --isolate: the kernel refused a new PID namespace (%s); it needs root or unprivileged "
          "user namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces > 0)\n",
          strerror(first));
  exit(EXIT_OWN_ERROR);
}

/* Our init inside the namespace (pid 1 there): dies with the supervisor, which kills the namespace. */
static void become_namespace_init(int alive_fd) {
  role = "init";
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  /* Our parent is outside the namespace (getppid() says 0), so check it through the pipe it holds. */
  struct pollfd p = {alive_fd, POLLIN, 0};
  if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLIN))) _exit(EXIT_OWN_ERROR);
  /* A /proc of our own, so the command's tools (ps, /proc/self) see the namespace's pids. Best
   * effort: some containers lock /proc. */
  int proc_ok = unshare(CLONE_NEWNS) == 0 && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
                mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) == 0;
  event("namespace", "\"proc\":%s", proc_ok ? "true" : "false");
}
#endif

/* ------------------------------------------------------------------------------------------------ */

int main(int argc, char **argv) {
  started_ms = now_ms();
  parse_options(argc, argv);
  check_proc();
  memset(&st, 0, sizeof st);
  st.mode = PLAIN;
  st.parent_fd = -1;
  st.parent = getppid();

  install_handlers(0);
  watch_parent(st.parent);

  if (opt.isolate) {
#if RK_LINUX
    unshare_pid_namespace();
    int alive[2];
    if (cloexec_pipe(alive, 0) != 0) {
      perror("reapkit: pipe");
      return EXIT_OWN_ERROR;
    }
    int had_tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp(); /* before init takes it */
    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, &old);
    pid_t init = fork();
    if (init == 0) {
      close(alive[1]);
      if (st.parent_fd >= 0) close(st.parent_fd);
      st.parent_fd = -1;
      for (int i = 0; i < st.nchain; i++) close(st.chain_fd[i]);
      st.nchain = 0;
      st.parent = 0; /* the supervisor watches the host; init dies with the supervisor */
      close(sig_pipe[0]); /* a self-pipe of our own: the supervisor's is not ours to read */
      close(sig_pipe[1]);
      install_handlers(0);
      sigprocmask(SIG_SETMASK, &old, NULL);
      become_namespace_init(alive[0]);
      st.mode = NS_INIT;
      st.main = start_command(opt.command);
      event("start", "\"child\":%d,\"isolate\":true", (int)st.main);
      supervise();
    }
    int fork_errno = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    close(alive[0]); /* alive[1] stays open (close-on-exec) for as long as we live */
    if (init < 0) {
      fprintf(stderr, "reapkit: --isolate: fork: %s\n", strerror(fork_errno));
      return EXIT_OWN_ERROR;
    }
    st.mode = OUTER;
    st.main = init;
    event("start", "\"init\":%d,\"isolate\":true,\"parent\":%d,\"host\":%d,\"launchers\":%d", (int)init,
          (int)st.parent, (int)(st.host ? st.host : st.parent), st.launchers);
    /* Our init hands the terminal to the command; we take it back at the end. */
    if (had_tty) {
      tty_fd = STDIN_FILENO;
      tty_restore_pgrp = getpgrp();
    }
#else
    fprintf(stderr, "reapkit: --isolate: PID namespaces exist only on Linux\n");
    return EXIT_OWN_ERROR;
#endif
  } else {
#if RK_LINUX
    int subreaper = opt.subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
#else
    int subreaper = 0;
#endif
    st.main = start_command(opt.command);
    event("start",
          "\"child\":%d,\"pgid\":%d,\"subreaper\":%s,\"parent\":%d,\"host\":%d,\"launchers\":%d,"
          "\"parentWatch\":\"%s\",\"procTable\":%s",
          (int)st.main, (int)st.main, subreaper ? "true" : "false", (int)st.parent, (int)(st.host ? st.host : st.parent),
          st.launchers, st.nchain > 0 ? "pidfd" : st.parent_fd >= 0 ? "kqueue" : (st.parent > 1 ? "signal" : "none"),
          scan_ok ? "true" : "false");
  }
  if (st.parent_gone) {
    st.parent_gone = 0;
    on_parent_gone();
  }
  supervise();
  return EXIT_OWN_ERROR; /* not reached */
}
