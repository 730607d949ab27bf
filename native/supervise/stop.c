/* The stop machine: reaping, signalling what is ours, the grace, the exit. */

#include "supervise.h"

const char *phase_names[] = {"running", "closing", "stopping", "killing"};

state_t st;

/* Now, in the clock ticks of /proc's start times (time since boot, USER_HZ). */
static unsigned long long boot_ticks(void) {
#if RK_LINUX && defined(CLOCK_BOOTTIME)
  struct timespec ts;
  long hz = sysconf(_SC_CLK_TCK);
  if (clock_gettime(CLOCK_BOOTTIME, &ts) == 0 && hz > 0)
    return (unsigned long long)ts.tv_sec * (unsigned long long)hz + (unsigned long long)ts.tv_nsec / (1000000000ULL / (unsigned long long)hz);
#endif
  return 0;
}

static int code_of(int how, int status) {
  return how == CLD_EXITED ? status : 128 + status;
}

void note_main_exit(int code, int by_signal, int sig) {
  st.main_done = 1;
  st.exit_code = code;
  if (by_signal)
    event("child-exit", "\"child\":%d,\"signal\":\"%s\",\"code\":%d", (int)st.main, signal_name(sig), code);
  else
    event("child-exit", "\"child\":%d,\"code\":%d", (int)st.main, code);
}

static void pin_extra(const proc_t *p);

static int grow_kids(void) {
  size_t cap = st.kids_cap ? st.kids_cap * 2 : 64;
  pid_t *k = realloc(st.kids, cap * sizeof *k);
  if (k == NULL) return 0;
  st.kids = k;
  st.kids_cap = cap;
  return 1;
}

/* Reap every zombie we own (the command too, except in the one mode that needs its pid to pin the
 * group id: see below). */
void reap(void) {
  /* Event-driven (a subreaper with the kernel's children list): the command is reaped as soon as it
   * exits, like every other child, so one waitpid(-1) loop reaps what died (the cost of a sweep is
   * the number of zombies, not of children). Its group id cannot be recycled while a member lives,
   * and every member that lives descends from us, so the table still finds each one. */
  int reap_all = st.mode == NS_INIT || st.mode == OUTER || !scan_ok || stop_by_event() || CGROUP_STOP;
  if (reap_all) {
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
      } else if (!container_reaped(pid, status)) {
        event("reaped", "\"child\":%d", (int)pid);
      }
    }
#if RK_LINUX
    if (stop_by_event()) {
      /* our live children (those that died since have their SIGCHLD on its way) */
      st.nkids = 0;
      if (!read_children()) {
        st.children_ok = 0; /* the kernel stopped offering the list: tick and rescan from now on */
        return;
      }
      for (size_t i = 0; i < nchildren; i++)
        if (children[i] != st.main && (st.nkids < st.kids_cap || grow_kids())) st.kids[st.nkids++] = children[i];
    }
#endif
    return;
  }
#if RK_LINUX
  /* (scan_ok, no subreaper or no children list) Our children other than the command: the kernel's
   * list when it has one, else one /proc pass. The command is left unreaped: its status is read with
   * WNOWAIT, and its pid pins the group id for killpg while members that no event tells us about
   * may remain (re-parented elsewhere without a subreaper). */
  int status;
  if (st.children_ok && read_children()) {
    for (size_t i = 0; i < nchildren; i++)
      if (children[i] != st.main && waitpid(children[i], &status, WNOHANG) > 0 && !container_reaped(children[i], status))
        event("reaped", "\"child\":%d", (int)children[i]);
  } else {
    st.children_ok = 0;
    scan_procs();
    for (size_t i = 0; i < nprocs; i++)
      if (procs[i].ppid == getpid() && procs[i].pid != st.main && procs[i].state == 'Z' &&
          waitpid(procs[i].pid, &status, WNOHANG) > 0 && !container_reaped(procs[i].pid, status))
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
static int signal_ours_pin(int sig, int fresh_only, int group_covered, int pin) {
  int remaining = 0;
  if (st.mode == NS_INIT) {
    /* init of a PID namespace: kill(-1) reaches every process in it but ourselves. Something
     * remains while we have a child: every process in the namespace descends from us. */
    if (sig && !(fresh_only && st.stop_signal_in_use)) kill_then_cont(-1, sig); /* once per stop: see begin_stop */
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 ? 1 : 0;
  }
  if (st.mode == OUTER) {
    if (!st.main_reaped) {
      if (sig && !(fresh_only && st.stop_signal_in_use)) kill_then_cont(st.main, sig);
      return 1;
    }
    return 0;
  }
#if RK_LINUX
  if (CGROUP_STOP) {
    /* The cgroup is the unit (cgroup.c): its members, read from cgroup.procs, never from /proc. */
    if (sig == SIGKILL) {
      int listed = cgroup_count(); /* what the kill found (it is gone by the time we look again) */
      cgroup_kill();
      if (listed > 0) return listed;
      return cgroup_populated() != 0 ? 1 : cgroup_outside(SIGKILL, 0);
    }
    if (sig) cgroup_signal(sig, fresh_only);
    if (cgroup_populated() != 0) return 1;
    /* Empty: what remains of ours is outside it (moved itself out). While stopping, each gets the
     * stop's signal once, when first seen (the cgroup's first signal could not reach it). */
    if (!sig && st.phase == STOPPING && st.stop_signal_in_use) return cgroup_outside(st.stop_signal_in_use, 1);
    return cgroup_outside(sig, fresh_only);
  }
#endif
  /* PLAIN: the group (pinned by the unreaped command), then every descendant found in /proc. */
  pid_t pgid = st.main;
  if (!scan_ok) {
    /* The group only (no subreaper exists elsewhere to adopt escapees; without a trustworthy table
     * we cannot find them). Zombies of ours are reaped at once here, so a live member remains
     * while the group can be signalled. */
    int members = killpg(pgid, 0) == 0;
    if (members && sig && !(fresh_only && st.stop_signal_in_use)) killpg_then_cont(pgid, sig);
    return members;
  }
  if (sig && !fresh_only && !st.main_reaped) killpg_then_cont(pgid, sig);
#if RK_LINUX
  pid_t self = getpid();
  char *mine;
  if (stop_by_event()) {
    /* every live process of ours descends from us (subreaper), and the command is reaped once it
     * exits: our tree alone, walked down, not the whole table */
    walk_descendants();
    mine = malloc(nprocs ? nprocs : 1);
    if (mine != NULL) memset(mine, 1, nprocs ? nprocs : 1);
  } else {
    scan_procs();
    mine = mark_descendants(self);
  }
  if (mine == NULL) return 1;
  for (size_t i = 0; i < nprocs; i++) {
    proc_t *p = &procs[i];
    if (p->pid == self || p->state == 'Z') continue;
    int in_group = !st.main_reaped && p->pgrp == pgid;
    if (!mine[i] && !in_group) continue;
    remaining++;
    if (pin && p->ppid != self) pin_extra(p);
    if (!sig) continue;
    if (fresh_only) {
      /* started after the stop began (one tick of slack): a server's cleanup helper, left until the grace ends */
      if (st.stop_tick && p->start > st.stop_tick + 1) continue;
      if (already_signalled(p)) continue;
      remember_signalled(p);
      if (group_covered && p->pgrp == pgid) continue; /* the killpg of begin_stop reached it (it existed then) */
    }
    signal_pinned(p, sig);
  }
  free(mine);
#else
  (void)group_covered;
  (void)pin;
#endif
  return remaining;
}

int signal_ours_ex(int sig, int fresh_only, int group_covered) {
  return signal_ours_pin(sig, fresh_only, group_covered, 0);
}

int signal_ours(int sig, int fresh_only) {
  return signal_ours_pin(sig, fresh_only, 0, 0);
}

/* Pin a process that is ours but not our child (a group member re-parented elsewhere, a
 * descendant of one of our children) by pidfd, so that its exit wakes the loop. */
static void pin_extra(const proc_t *p) {
#if RK_LINUX && defined(SYS_pidfd_open)
  for (int i = 0; i < st.nextra; i++)
    if (st.extra_pid[i] == p->pid) return;
  if (st.nextra >= MAX_EXTRA) return; /* more than that: the loop ticks instead (see main.c) */
  int fd = (int)syscall(SYS_pidfd_open, p->pid, 0);
  if (fd < 0) return;
  fcntl(fd, F_SETFD, FD_CLOEXEC);
  proc_t again;
  if (read_stat(p->pid, &again) != 0 || again.start != p->start) {
    close(fd);
    return;
  }
  st.extra_fd[st.nextra] = fd;
  st.extra_pid[st.nextra] = p->pid;
  st.nextra++;
#else
  (void)p;
#endif
}

void drop_extras(void) {
  for (int i = 0; i < st.nextra; i++) close(st.extra_fd[i]);
  st.nextra = 0;
}

/* Event-driven stop (Linux, our own /proc, the kernel's children list, a subreaper): the loop needs
 * no timer and no rescan. */
int stop_by_event(void) {
  return st.mode == PLAIN && scan_ok && st.children_ok && st.subreaper && !CGROUP_STOP;
}

/* A descendant that was ours before the stop began but that the first walk did not reach: re-parented
 * to us (its parent died of the group's signal) after the walk had read our own children list, so
 * found under neither. Nothing else would ever give it the stop signal: the grace would run out for
 * it. So while stopping, a child of ours not signalled yet that started before the stop is a reason
 * to walk again (which signals only such processes, each once). */
static void signal_missed(void) {
#if RK_LINUX
  if (st.phase != STOPPING || !st.stop_signal_in_use) return;
  for (size_t i = 0; i < st.nkids; i++) {
    proc_t p;
    if (read_stat(st.kids[i], &p) != 0 || p.state == 'Z' || already_signalled(&p)) continue;
    if (p.start > st.stop_tick + 1) continue; /* started after the stop: left for the SIGKILL */
    if (st.group_covered && p.pgrp == st.main) continue; /* a member of the group: the killpg reached it */
    int n = signal_ours_pin(st.stop_signal_in_use, 1, st.group_covered, 0);
    event("signalled", "\"signal\":\"%s\",\"remaining\":%d,\"late\":true", signal_name(st.stop_signal_in_use), n);
    return;
  }
#endif
}

/* How many processes of ours remain, besides the command's zombie. Event-driven: our live
 * children answer while there are any; when none is left, one pass over the table looks for group
 * members that do not descend from us, and pins them so that their exits wake us. */
int ours_remaining(void) {
  if (!stop_by_event()) return signal_ours(0, 0);
  signal_missed();
  if (st.nkids > 0) return (int)st.nkids;
  st.unpinned = 0;
  if (st.main_reaped) return 0;
  drop_extras();
  int remaining = signal_ours_pin(0, 0, 0, 1);
  st.unpinned = remaining - st.nextra;
  return remaining;
}

/* While killing: SIGKILL what may have appeared since (an orphan re-parented to us, a group member
 * forked just before its parent's SIGKILL). Our unreaped children cannot be recycled pids. */
void kill_new(void) {
  if (CGROUP_STOP) { /* cgroup.kill took every member, one forked meanwhile included */
#if RK_LINUX
    if (cgroup_populated() == 0) cgroup_outside(SIGKILL, 0); /* what moved itself out of it */
#endif
    return;
  }
  if (!stop_by_event()) {
    signal_ours(SIGKILL, 0);
    return;
  }
  if (!st.main_reaped) killpg(st.main, SIGKILL);
  for (size_t i = 0; i < st.nkids; i++) kill(st.kids[i], SIGKILL);
#if RK_LINUX && defined(SYS_pidfd_send_signal)
  for (int i = 0; i < st.nextra; i++) syscall(SYS_pidfd_send_signal, st.extra_fd[i], SIGKILL, NULL, 0);
#endif
}

void begin_stop(int sig, const char *why) {
  st.phase = STOPPING;
  long long grace = opt.grace_ms + (st.mode == OUTER ? ISOLATE_MARGIN_MS : 0);
  st.deadline = now_ms() + grace;
  event("stop", "\"why\":\"%s\",\"signal\":\"%s\",\"graceMs\":%lld,\"unit\":\"%s\"", why, signal_name(sig), grace,
        CGROUP_STOP ? "cgroup" : "tree");
  st.proc_reads_at_stop = proc_reads;
  st.stop_tick = boot_ticks();
  int covered = 0;
  if (st.mode == PLAIN && scan_ok && !st.main_reaped && !CGROUP_STOP)
    covered = killpg_then_cont(st.main, sig) == 0; /* the group at once: members forked mid-scan get it too */
#if RK_LINUX
  /* The cgroup's path, a container run: the client has the signal before the engine's stop, as the
   * group has it on the tree's path (its signal proxy passes it on while the container runs). Sent
   * only after the engine's stop, it would reach a client finishing on its own, its container
   * gone: a podman client then died of it (143) where its container had drained and exited 0. */
  if (CGROUP_STOP && ctr.active && !st.main_reaped) cgroup_signal_command(st.main, sig);
#endif
  /* A container run: the engine stops the container before anything of ours outside the command's
   * group is signalled (podman's conmon must outlive the container: engine.c). */
  containers_stop(why, grace);
  st.group_covered = covered;
  int remaining = signal_ours_ex(sig, 1, covered);
  st.stop_signal_in_use = sig;
  event("signalled", "\"signal\":\"%s\",\"remaining\":%d", signal_name(sig), remaining);
}

void begin_kill(const char *why) {
  containers_stop(why, 0); /* (a stop that skipped the grace: the engine kills at once) */
  st.phase = KILLING;
  st.deadline = now_ms() + KILL_CONFIRM_MS;
  int remaining = signal_ours(SIGKILL, 0);
  event("escalate", "\"why\":\"%s\",\"signal\":\"SIGKILL\",\"remaining\":%d", why, remaining);
}

void finish(int survivors) {
  containers_last_look(); /* nothing of ours is left but maybe the container (engine.c) */
#if RK_LINUX
  if (cg.active) {
    /* The events the loop did not read: the last change (populated 0) may have come with the
     * command's own exit, which woke the loop first and ended it. Counted before the removal (whose
     * own IN_IGNORED is no change of cgroup.events). */
    if (cg.inotify_fd >= 0) cgroup_drain();
    cgroup_remove(); /* once empty; one still populated stays, named for doctor */
    char path[PATH_MAX * 2], freeze[sizeof cg.freeze * 2];
    event("cgroup", "\"path\":\"%s\",\"members\":%d,\"killed\":%s,\"removed\":%s,\"events\":%d,\"outside\":%d,\"freeze\":%s%s%s",
          json_text(cg.path, path, sizeof path), cg.members, cg.killed ? "true" : "false", cg.removed ? "true" : "false",
          cg.events, cg.outside, cg.freeze[0] ? "\"" : "", cg.freeze[0] ? json_text(cg.freeze, freeze, sizeof freeze) : "null",
          cg.freeze[0] ? "\"" : "");
  }
#endif
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
  int code = ctr.left ? EXIT_CONTAINER_LEFT : st.main_done ? st.exit_code : EXIT_OWN_ERROR;
  /* procReadsInStop: /proc files read since the stop began (0 on the cgroup's path: nothing scanned) */
  /* outsideCgroup: children of ours found outside the emptied cgroup, stopped the subreaper's way */
  event("exit", "\"code\":%d,\"survivors\":%d,\"procReadsInStop\":%ld,\"outsideCgroup\":%d", code, survivors,
        st.phase == RUNNING ? 0L : proc_reads - st.proc_reads_at_stop, cg.outside);
  exit(code);
}

void on_signal_received(int sig) {
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
  /* A fault-type signal is a request to end: the command gets the stop signal it stands for. */
  int as = action == SA_STOP_DEFAULT ? opt.stop_signal : sig;
  if (sig == SIGINT && ++st.interrupts >= 2 && st.phase == STOPPING) {
    /* Ctrl+C twice: a person wants it over now. */
    begin_kill("second SIGINT");
    return;
  }
  if (st.phase == RUNNING || st.phase == CLOSING) {
    if (as != sig) event("signal", "\"signal\":\"%s\",\"as\":\"%s\"", signal_name(sig), signal_name(as));
    else event("signal", "\"signal\":\"%s\"", signal_name(sig));
    begin_stop(as, "signal");
  } else if (st.phase == STOPPING) {
    /* Already stopping: pass it on all the same, a repeated fault-type signal as what it stands for
     * (the host may send stdin end, then SIGTERM, then SIGINT); the grace is not restarted. */
    event("signal", "\"signal\":\"%s\",\"as\":\"%s\",\"phase\":\"stopping\"", signal_name(sig), signal_name(as));
#if RK_LINUX
    if (CGROUP_STOP) {
      cgroup_signal(as, 0);
      return;
    }
#endif
    if (st.mode == PLAIN && (!st.main_reaped || !scan_ok)) killpg_then_cont(st.main, as);
    else if (st.mode == OUTER && !st.main_reaped) kill_then_cont(st.main, as);
    else if (st.mode == NS_INIT) kill_then_cont(-1, as);
  }
}
