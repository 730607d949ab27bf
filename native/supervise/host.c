/* Watching the host (and the launchers between it and us) by kernel event. */

#include "supervise.h"

void on_parent_gone(void) {
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
void watch_parent(pid_t parent) {
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
