/* Signals: which ones we handle and what each means; handlers feed a self-pipe the loop reads. */

#include "supervise.h"

/* signals: handlers write the number into a self-pipe that the poll loop reads.
 *
 * Every catchable signal is handled (as tini and dumb-init do): a signal we left at its default
 * action would end the supervisor at once and leave the command to its parent-death SIGKILL and its
 * escaped descendants to nobody. What each one means (the table in docs/cli.md):
 *
 * - stop, the signal itself forwarded: SIGTERM, SIGINT, SIGHUP, SIGQUIT;
 * - stop with --signal (default SIGTERM), as a request to end: the signals that end a process "in
 *   error" when someone sends them (SIGABRT, SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS,
 *   SIGSTKFLT, SIGXCPU, SIGXFSZ): forwarding a SIGSEGV would make the command dump core;
 * - forwarded to the command's group, no stop by itself: everything else (SIGUSR1, SIGUSR2,
 *   SIGALRM, SIGVTALRM, SIGPROF, SIGPWR, SIGIO, SIGURG, SIGWINCH and the real-time signals). When
 *   one ends the command, its exit starts the stop of what it left behind, with the grace;
 * - forwarded too: SIGCONT (the kernel continues us whatever we do; the command's group is
 *   continued with us, as tini and dumb-init do);
 * - unchanged: SIGCHLD (reaping), SIGPIPE, SIGTTOU and SIGTTIN ignored (a --verbose line into a dead
 *   host's pipe, touching the terminal), SIGTSTP at its default (job control).
 *
 * What the caller ignored stays ignored, for us and for the command (`nohup reapkit -- cmd`, a
 * `cmd &` of a non-interactive shell that ignores SIGINT and SIGQUIT): no handler is installed for
 * an inherited SIG_IGN (a signal we must handle excepted: SIGCHLD), and the command starts with the
 * caller's ignored set and blocked mask, as tini does; everything else at its default.
 *
 * A fault the kernel raises in this very process (SIGSEGV from a bad pointer, SIGSYS from seccomp)
 * is not a request: its default action is restored and it ends the supervisor, as it should. So is
 * a kernel SIGXFSZ (a --verbose line past RLIMIT_FSIZE: the write fails, nothing else happens). */

int sig_pipe[2] = {-1, -1};
sigset_t inherited_ignored; /* the caller's SIG_IGN set, recorded before we change anything */
sigset_t inherited_mask;    /* the caller's blocked mask */
static int inherited_recorded = 0;
int pdeath_signal = 0; /* the real-time signal armed as our parent-death signal (old kernels) */

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

int cloexec_pipe(int fds[2], int nonblock) {
  if (pipe(fds) != 0) return -1;
  for (int k = 0; k < 2; k++) {
    fcntl(fds[k], F_SETFD, FD_CLOEXEC);
    if (nonblock) fcntl(fds[k], F_SETFL, fcntl(fds[k], F_GETFL) | O_NONBLOCK);
  }
  return 0;
}

enum signal_action signal_action_of(int sig) {
  if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP || sig == SIGQUIT) return SA_STOP_SAME;
  if (is_fault_signal(sig) || sig == SIGABRT || sig == SIGXCPU || sig == SIGXFSZ) return SA_STOP_DEFAULT;
#ifdef SIGSTKFLT
  if (sig == SIGSTKFLT) return SA_STOP_DEFAULT;
#endif
  return SA_FORWARD;
}

/* Not ours to handle: SIGKILL and SIGSTOP cannot be; the rest keep the dispositions set below. */
static int left_alone(int sig) {
  return sig == SIGKILL || sig == SIGSTOP || sig == SIGTSTP || sig == SIGPIPE || sig == SIGTTOU || sig == SIGTTIN;
}

/* Once per process tree (an --isolate init inherits the record from the supervisor it forks from). */
static void record_inherited(void) {
  if (inherited_recorded) return;
  inherited_recorded = 1;
  sigemptyset(&inherited_ignored);
  sigprocmask(SIG_SETMASK, NULL, &inherited_mask);
  for (int sig = 1; sig < NSIG; sig++) {
    struct sigaction old;
    if (sig == SIGKILL || sig == SIGSTOP || sigaction(sig, NULL, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) sigaddset(&inherited_ignored, sig);
  }
}

/* An ignored signal the caller handed us stays ignored, except the one we cannot do without. */
static int keeps_caller_ignore(int sig) {
  return sig != SIGCHLD && sigismember(&inherited_ignored, sig);
}

/* In a child of ours before exec (the command, an engine call): every disposition back to its
 * default, except what our caller ignored, which stays ignored (`nohup reapkit -- cmd`). Exec resets
 * our handlers, but until then (and after a failed exec) they would write into our self-pipe; and
 * exec keeps our own SIG_IGN of SIGPIPE, SIGTTOU and SIGTTIN, which the child must not inherit.
 * The blocked mask is the caller's to set. */
void restore_inherited_dispositions(void) {
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  for (int s = 1; s < NSIG; s++) {
    if (s == SIGKILL || s == SIGSTOP) continue;
    dfl.sa_handler = sigismember(&inherited_ignored, s) ? SIG_IGN : SIG_DFL;
    sigaction(s, &dfl, NULL);
  }
}

void install_handlers(int parent_death_signal) {
  record_inherited();
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
    if (left_alone(sig) || keeps_caller_ignore(sig)) continue;
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
