/* --isolate (Linux): a PID namespace of our own, under a small init of ours. */

#include "supervise.h"

#if RK_LINUX
static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

static int own_pidns_fd = -1; /* our own PID namespace, for children forked after the init's */

/* Enter a new PID namespace for our next child; unprivileged, through a user namespace first. */
void unshare_pid_namespace(void) {
  own_pidns_fd = open("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
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
void become_namespace_init(int alive_fd) {
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

/* A container run: the engine calls we make later must run in our own PID namespace, not in the
 * command's (the kernel puts every child we fork after unshare there: its init's kill(-1) would
 * reach them, they would fail once it is gone, and podman cannot see its conmon from there). Going
 * back needs CAP_SYS_ADMIN over our namespace: without it (the unprivileged route), the container
 * is left to the plain stop of the client, said on stderr. */
static void engine_calls_outside(void) {
  if (!ctr.active) return;
  if (own_pidns_fd >= 0 && setns(own_pidns_fd, CLONE_NEWPID) == 0) return;
  fprintf(stderr, "reapkit: --isolate: cannot return to our own PID namespace for the engine's calls (%s): the "
          "container will not be stopped through %s\n", strerror(own_pidns_fd >= 0 ? errno : EBADF), ctr.engine);
  ctr.active = 0;
}

/* Start the command under an init of ours in a new PID namespace; we stay outside (OUTER) and
 * watch the host. Exits 125 when the kernel refuses. */
void start_isolated(void) {
  unshare_pid_namespace();
  int alive[2];
  if (cloexec_pipe(alive, 0) != 0) {
    perror("reapkit: pipe");
    exit(EXIT_OWN_ERROR);
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
    exit(EXIT_OWN_ERROR);
  }
  st.mode = OUTER;
  st.main = init;
  engine_calls_outside();
  leave_start_folder();
  event("start", "\"init\":%d,\"isolate\":true,\"parent\":%d,\"host\":%d,\"launchers\":%d", (int)init,
        (int)st.parent, (int)(st.host ? st.host : st.parent), st.launchers);
  /* Our init hands the terminal to the command; we take it back at the end. */
  if (had_tty) {
    tty_fd = STDIN_FILENO;
    tty_restore_pgrp = getpgrp();
  }
}
#endif
