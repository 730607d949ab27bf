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
 * - a container run (`docker run`, `podman run`, `nerdctl run`, not detached): the container is the
 *   engine's, out of reach of any signal, so it is labelled with its run and owner (container.c) and
 *   every stop path ends it through the engine first, bounded (engine.c);
 * - --isolate (Linux): runs the command inside a new PID namespace under a small init of our own
 *   (armed with a SIGKILL parent-death signal). When a PID namespace's init dies, for any reason,
 *   the kernel kills everything inside it: the guarantee for the whole tree even when the
 *   supervisor itself is SIGKILLed.
 *
 * Signalling is exact: a pid is only signalled while it is provably ours. The command's group is
 * signalled with killpg only while the command is unreaped (alive, or a zombie we keep), so its
 * pid, which is the group id, cannot be reused; other descendants are found by walking our own tree
 * down the kernel's children lists (or, without a subreaper, by one /proc pass), pinned with a
 * pidfd, re-checked by start time and signalled through the pidfd.
 *
 * Once a stop has begun it waits by event (stop.c): SIGCHLD for our children (every orphan of the
 * tree is one: we are its subreaper), a pidfd for a group member that is not; it ticks every
 * TICK_MS only where no event can say what changed (no subreaper, no children list, --isolate).
 *
 * Exit status: the command's; 123 when a container of the run was not confirmed gone (its id on
 * stderr); 125 for the supervisor's own errors (usage, --isolate refused), 126
 * when the command cannot be executed, 127 when it is not found (as env(1) and timeout(1)).
 */

#include "supervise.h"

void supervise(void) {
  for (;;) {
    reap();
    follow_job_control();
    long long now = now_ms();
    if (st.main_done) {
      /* Stop what the command left behind; leave once nothing of it remains. */
      int remaining = ours_remaining();
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
    if (st.phase == KILLING) kill_new();

    int timeout = -1; /* idle: no timer at all */
    if (st.phase != RUNNING) {
      long long left = st.deadline - now_ms();
      if (left < 0) left = 0;
      /* While stopping, an exit that matters reaches us as an event: SIGCHLD from one of our
       * children (every orphan of the tree is one, we are its subreaper), or the pidfd of a group
       * member that is not. Without those (no subreaper, no children list, too many to pin), not
       * every exit notifies us: tick. */
      int events_suffice = stop_by_event() && st.unpinned == 0;
#if RK_LINUX
      /* The cgroup's own word: `populated` changes are inotify events on cgroup.events. */
      if (CGROUP_STOP) events_suffice = cgroup_watch_fd() >= 0;
#endif
      if (st.phase != CLOSING && !events_suffice && left > TICK_MS) left = TICK_MS;
      timeout = (int)left;
    }
#if !RK_LINUX && !RK_KQUEUE
    /* No kernel event for the parent here: poll getppid once a second. */
    if (!st.parent_gone && st.parent > 1 && (timeout < 0 || timeout > 1000)) timeout = 1000;
#endif
    struct pollfd fds[3 + MAX_CHAIN + MAX_EXTRA];
    int nfds = 0;
    fds[nfds].fd = sig_pipe[0];
    fds[nfds].events = POLLIN;
    nfds++;
    if (st.parent_fd >= 0) {
      fds[nfds].fd = st.parent_fd;
      fds[nfds].events = POLLIN;
      nfds++;
    }
    int cgroup_at = -1; /* (Linux: the inotify watch on the command's cgroup.events) */
    (void)cgroup_at;
#if RK_LINUX
    if (CGROUP_STOP && (st.phase != RUNNING || st.main_done) && cgroup_watch_fd() >= 0) {
      cgroup_at = nfds;
      fds[nfds].fd = cg.inotify_fd;
      fds[nfds].events = POLLIN;
      nfds++;
    }
#endif
    int extra_at = nfds;
    for (int i = 0; i < st.nextra; i++) {
      fds[nfds].fd = st.extra_fd[i];
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
#if RK_LINUX
    if (r > 0 && cgroup_at >= 0 && fds[cgroup_at].revents) cgroup_drain(); /* the loop's top reads cgroup.events */
#endif
    for (int i = extra_at; r > 0 && i < chain_at; i++)
      if (fds[i].revents) {
        drop_extras(); /* one of them exited: the next ours_remaining() looks again */
        break;
      }
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

int main(int argc, char **argv) {
  started_ms = now_ms();
  parse_options(argc, argv);
  check_proc();
  memset(&st, 0, sizeof st);
  st.mode = PLAIN;
  st.parent_fd = -1;
  st.parent = getppid();
#if RK_LINUX
  st.children_ok = read_children(); /* CONFIG_PROC_CHILDREN */
#endif

  install_handlers(0);
  watch_parent(st.parent);
  opt.command = container_prepare(opt.command);
  if (ctr.active)
    event("container", "\"engine\":\"%s\",\"run\":\"%s\",\"autoRemove\":%s", ctr.engine, ctr.run_label + 12,
          ctr.auto_remove ? "true" : "false");

  if (opt.isolate) {
#if RK_LINUX
    start_isolated();
#else
    fprintf(stderr, "reapkit: --isolate: PID namespaces exist only on Linux\n");
    return EXIT_OWN_ERROR;
#endif
  } else {
#if RK_LINUX
    int subreaper = opt.subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0;
    st.subreaper = subreaper;
    /* where none is ours, cg.reason says why: the subreaper stops it. The watch on cgroup.events is
     * made now, before anything could empty it: a change between a read and a later watch would be
     * lost, and the loop would wait for the deadline. */
    if (!opt.cgroup) snprintf(cg.reason, sizeof cg.reason, "--no-cgroup");
    else if (cgroup_make() == 0) cgroup_watch_fd(); /* (else cgroup_make left its reason) */
#else
    int subreaper = 0;
    snprintf(cg.reason, sizeof cg.reason, "cgroups are Linux's");
#endif
    st.main = start_command(opt.command);
    char path[PATH_MAX * 2], reason[sizeof cg.reason * 2];
    event("start",
          "\"child\":%d,\"pgid\":%d,\"subreaper\":%s,\"parent\":%d,\"host\":%d,\"launchers\":%d,"
          "\"parentWatch\":\"%s\",\"procTable\":%s,\"cgroup\":%s%s%s,\"cgroupReason\":\"%s\"",
          (int)st.main, (int)st.main, subreaper ? "true" : "false", (int)st.parent, (int)(st.host ? st.host : st.parent),
          st.launchers, st.nchain > 0 ? "pidfd" : st.parent_fd >= 0 ? "kqueue" : (st.parent > 1 ? "signal" : "none"),
          scan_ok ? "true" : "false", CGROUP_STOP ? "\"" : "", CGROUP_STOP ? json_text(cg.path, path, sizeof path) : "null",
          CGROUP_STOP ? "\"" : "", CGROUP_STOP ? "" : json_text(cg.reason, reason, sizeof reason));
  }
  if (st.parent_gone) {
    st.parent_gone = 0;
    on_parent_gone();
  }
  supervise();
  return EXIT_OWN_ERROR; /* not reached */
}
