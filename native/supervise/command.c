/* Starting the command: fork + exec as a group leader, with the terminal handed over. */

#include "supervise.h"

/* Waits for the command's exec: EOF on its close-on-exec pipe (0 returned), or its errno (the size
 * of an int returned). A command stopped before its exec (SIGSTOP, or a Ctrl+Z landing as its mask
 * is restored) never gets there until it is continued: waiting on, we would answer no signal and no
 * host death meanwhile. So the wait polls, and once the command is seen stopped it returns at once
 * (0) and leaves the pipe open: the loop then forwards the SIGCONT that continues it, and an exec
 * that fails after that still ends the command with 126/127 (its write to the pipe succeeds). */
static ssize_t await_exec(pid_t pid, int fd, int *child_errno) {
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    int ready = poll(&p, 1, 50);
    if (ready > 0) {
      ssize_t n;
      do n = read(fd, child_errno, sizeof *child_errno);
      while (n < 0 && errno == EINTR);
      close(fd);
      return n;
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (ready == 0 && waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid &&
        si.si_code == CLD_STOPPED)
      return 0; /* the fd stays open for as long as we live: see above */
  }
}

/* fork + exec the command as a group leader; exits the supervisor if it cannot be executed. */
pid_t start_command(char **argv) {
  int err_pipe[2];
  if (cloexec_pipe(err_pipe, 0) != 0) {
    perror("reapkit: pipe");
    exit(EXIT_OWN_ERROR);
  }
  /* Interactive use: a new group is a background group, which may not read the terminal. Hand it
   * the foreground, as a shell does, when we hold it ourselves. */
  int want_tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
#if RK_LINUX
  /* A cgroup of its own (cgroup_where.c): the child waits, before its exec, for us to move it in
   * (its parent knows at once whether that worked, and falls back to the subreaper if not). */
  int go[2] = {-1, -1};
  if (cg.active && cloexec_pipe(go, 0) != 0) cgroup_drop("pipe");
#endif
  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old); /* no handler may run in the child before exec */
  pid_t self = getpid();
  pid_t pid = fork();
  if (pid == 0) {
    close(err_pipe[0]);
    setpgid(0, 0);
#if RK_LINUX
    if (go[0] >= 0) {
      char b;
      close(go[1]);
      while (read(go[0], &b, 1) < 0 && errno == EINTR) {
      } /* EOF once the parent has moved us (or given up): bounded by the parent, and by its death */
      close(go[0]);
    }
#endif
    /* Both sides hand over the terminal, so the command never reads it as a background group. */
    if (want_tty) tcsetpgrp(STDIN_FILENO, getpid());
    /* Our handlers go; what the caller ignored stays ignored (the mask is restored below). */
    restore_inherited_dispositions();
#if RK_LINUX
    /* The kernel's guarantee: if the supervisor dies, even by SIGKILL, so does the command. */
    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (getppid() != self) _exit(EXIT_OWN_ERROR);
#else
    (void)self;
#endif
    /* The caller's blocked mask, as tini does, except the signals a stop sends: a command that
     * could not receive its stop signal could only ever be SIGKILLed. */
    sigset_t mask = inherited_mask;
    int stop_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGCONT, opt.stop_signal};
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++) sigdelset(&mask, stop_signals[i]);
    sigprocmask(SIG_SETMASK, &mask, NULL);
    execvp(argv[0], argv);
    int e = errno;
    ssize_t w = write(err_pipe[1], &e, sizeof e);
    (void)w;
    _exit(e == ENOENT ? 127 : 126);
  }
  int fork_errno = errno;
#if RK_LINUX
  if (go[0] >= 0) {
    close(go[0]);
    if (pid > 0 && cgroup_join(pid) != 0) cgroup_drop("cannot move the command into its cgroup");
    close(go[1]); /* the child goes on to its exec */
  }
#endif
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
  ssize_t n = await_exec(pid, err_pipe[0], &child_errno);
  if (n == (ssize_t)sizeof child_errno) {
    fprintf(stderr, "reapkit: cannot execute %s: %s\n", argv[0], strerror(child_errno));
    waitpid(pid, NULL, 0);
    restore_tty();
    exit(child_errno == ENOENT ? 127 : 126);
  }
  leave_start_folder();
  return pid;
}

/* The command has its own working folder now; ours would only keep the starting folder busy (it
 * could not be unmounted while we run), so we move to / as dumb-init does. Nothing of ours uses a
 * relative path after this. */
void leave_start_folder(void) {
  if (chdir("/") != 0) {
    /* stays where it was: harmless */
  }
}
