/* reapkit-supervise: what the files of the native supervisor share (see main.c for what it does).
 *
 *   options.c    the command line, environment knobs, signal names     (portable)
 *   events.c     time and the --verbose JSON events                      (portable)
 *   signals.c    which signals are handled and what each means          (POSIX)
 *   command.c    fork + exec of the command as a group leader            (POSIX)
 *   tty.c        terminal handover and job control                      (POSIX)
 *   proctable.c  /proc reads and pinned signals                          (Linux)
 *   cgroup_where.c  where the command gets a cgroup v2 of its own, and its name  (Linux)
 *   cgroup.c     that cgroup as the unit of the stop: members, cgroup.kill, populated 0  (Linux)
 *   stop.c       the stop machine: reaping, signalling what is ours, grace, exit
 *   host.c       watching the host and the launchers above us            (pidfd, kqueue)
 *   isolate.c    --isolate: a PID namespace under an init of ours        (Linux)
 *   container.c  a `docker run` (podman, nerdctl) recognized and labelled (portable)
 *   run_grammar.c  its argv read by the library's grammar (run_grammar_table.h)  (portable, pure)
 *   owner.c      the run's owner label: host, boot, pid, PID namespace, machine  (Linux; portable)
 *   engine.c     its container ended through the engine on every stop    (portable)
 *   looks.c      what the engine says of it: listed, at rest, gone      (portable)
 *   main.c       the event loop and start-up
 */
#ifndef REAPKIT_SUPERVISE_H
#define REAPKIT_SUPERVISE_H

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

#include "run_grammar.h"

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
#define EXIT_CONTAINER_LEFT 123 /* a container of the run not confirmed gone (engine.c) */
#define TICK_MS 20          /* rescan period while stopping, where no event says what changed */
#define MAX_EXTRA 64         /* processes of ours that are not our children, pinned by pidfd */
#define KILL_CONFIRM_MS 5000 /* after SIGKILL, how long to wait for the kernel to finish */
#define ISOLATE_MARGIN_MS 1000
#define MAX_CHAIN 17         /* our parent and up to 16 launchers above it */


/* options.c */
typedef struct {
  long grace_ms;
  long close_ms;
  int stop_signal;
  int subreaper;
  int isolate;
  int verbose;
  int container; /* recognize and end a `docker run`'s container (--no-container: 0) */
  int cgroup;    /* the command in a cgroup of its own where one is ours (--no-cgroup: 0) */
  char **command;
} options_t;

extern options_t opt;
const char *signal_name(int sig);
int parse_signal(const char *s);
long env_ms(const char *name, long fallback, long min, long max);
void parse_options(int argc, char **argv);

/* events.c */
extern long long started_ms;
extern const char *role; /* "supervisor", or "init" inside the namespace of --isolate */
long long now_ms(void);
void event(const char *name, const char *fields, ...);
const char *json_text(const char *s, char *out, size_t size);

/* signals.c */
enum signal_action { SA_STOP_SAME, SA_STOP_DEFAULT, SA_FORWARD };
extern int sig_pipe[2];
extern sigset_t inherited_ignored; /* signals.c: what the caller ignored, kept for the command */
extern sigset_t inherited_mask;
extern int pdeath_signal;
int cloexec_pipe(int fds[2], int nonblock);
enum signal_action signal_action_of(int sig);
void install_handlers(int parent_death_signal);
void restore_inherited_dispositions(void);

/* command.c */
pid_t start_command(char **argv);
void leave_start_folder(void);

/* tty.c */
extern int tty_fd;
extern pid_t tty_restore_pgrp;
void restore_tty(void);
void follow_job_control(void);

/* proctable.c */
typedef struct {
  pid_t pid, ppid, pgrp;
  unsigned long long start;
  char state;
  int threads;
} proc_t;
extern proc_t *procs;
extern size_t nprocs;
extern int scan_ok; /* /proc can be read and is our PID namespace's */
extern long proc_reads; /* /proc files of other processes (and of our children list) read so far */
void check_proc(void);
/* A process stopped by SIGTSTP/SIGSTOP cannot act on a stop signal until it runs again, so every
 * stop signal is followed by SIGCONT to the same target, as systemd does (the signal is delivered
 * first once it runs). SIGKILL needs none; 0 is a probe. */
static inline int stop_needs_cont(int sig) { return sig != 0 && sig != SIGKILL && sig != SIGCONT; }
static inline void kill_then_cont(pid_t pid, int sig) {
  kill(pid, sig);
  if (stop_needs_cont(sig)) kill(pid, SIGCONT);
}
static inline int killpg_then_cont(pid_t pgid, int sig) {
  int r = killpg(pgid, sig);
  if (r == 0 && stop_needs_cont(sig)) killpg(pgid, SIGCONT);
  return r;
}

#if RK_LINUX
int read_stat(pid_t pid, proc_t *out);
void scan_procs(void);
int signal_pinned(const proc_t *p, int sig);
extern pid_t *children;
extern size_t nchildren;
int read_children(void);
char *mark_descendants(pid_t self);
void walk_descendants(void);
#endif

/* cgroup_where.c, cgroup.c (Linux) */
typedef struct {
  int active;           /* the command is in it: every stop takes the cgroup as its unit */
  int dirfd;            /* its directory, opened at mkdir: every file is opened relative to it */
  int inotify_fd;       /* a watch on its cgroup.events (-1: none yet, or none to be had) */
  char path[PATH_MAX];
  char reason[PATH_MAX + 160]; /* why there is none (for --verbose) */
  unsigned long long id; /* its directory's inode: the kernel's cgroup id */
  int members;          /* the most members listed at once during the stop */
  int killed;           /* cgroup.kill was written */
  int removed;
  int events;           /* inotify events cgroup.events gave */
  int watch_failed;
  int outside;          /* the most children of ours seen outside it once it was empty (moved out) */
  char freeze[96];      /* how the stop's first signal was given: "frozen", or why not */
} cgroup_t;
extern cgroup_t cg;
#if RK_LINUX
int cgroup_make(void);
int cgroup_join(pid_t pid);
void cgroup_drop(const char *what);
int cgroup_signal(int sig, int fresh_only);
void cgroup_signal_command(pid_t pid, int sig);
int cgroup_count(void);
int cgroup_kill(void);
int cgroup_populated(void);
int cgroup_watch_fd(void);
void cgroup_drain(void);
int cgroup_remove(void);
int cgroup_outside(int sig, int fresh_only);
#define CGROUP_STOP (cg.active && st.mode == PLAIN)
#else
#define CGROUP_STOP 0
#endif

/* stop.c */
enum mode { PLAIN, NS_INIT, OUTER };
enum phase { RUNNING, CLOSING, STOPPING, KILLING };
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
  int subreaper;       /* we adopt orphaned descendants (Linux) */
  int children_ok;     /* the kernel lists our children (/proc/self/task/<tid>/children) */
  pid_t *kids;         /* our live children other than the command, as of the last reap() */
  size_t nkids, kids_cap;
  int extra_fd[MAX_EXTRA]; /* pidfds on processes of ours that are not our children */
  pid_t extra_pid[MAX_EXTRA];
  int nextra;
  int unpinned;        /* processes of ours that are not our children and could not be pinned */
  /* (pid, start) pairs already sent the stop signal, so a rescan does not send it twice */
  proc_t *signalled;
  size_t nsignalled, signalled_cap;
  int group_covered;       /* begin_stop's killpg reached the command's group */
  long proc_reads_at_stop; /* proc_reads when the stop began (the exit event says how many since) */
  unsigned long long stop_tick; /* when the stop began, in the clock ticks of /proc's start times */
} state_t;

extern state_t st;
extern const char *phase_names[];
void note_main_exit(int code, int by_signal, int sig);
void reap(void);
int signal_ours_ex(int sig, int fresh_only, int group_covered);
int signal_ours(int sig, int fresh_only);
int stop_by_event(void);
int ours_remaining(void);
void kill_new(void);
void drop_extras(void);
void begin_stop(int sig, const char *why);
void begin_kill(const char *why);
void finish(int survivors);
void on_signal_received(int sig);

/* container.c, engine.c, looks.c */
#define OWNER_LABEL_SIZE 512 /* reapkit.owner=<value>: at most 441 bytes (owner.c) */
typedef struct {
  int active;              /* the command is a container run of ours to end */
  const char *engine;      /* "docker", "podman", "nerdctl" */
  char engine_path[PATH_MAX]; /* its client, as execvp found it from the starting folder */
  char start_dir[PATH_MAX];   /* the starting folder, where every engine call runs ("": unknown) */
  char **argv;             /* the command as given: argv[0] and the global flags, argv[1..nglobals] */
  int nglobals;
  int auto_remove;         /* --rm */
  char run_label[64];      /* reapkit.run=<32 hex> */
  char owner_label[OWNER_LABEL_SIZE]; /* reapkit.owner=<host>/<boot_id>/<pid>/<start>[/pidns:<inode>/mid:<machine id>] */
  int done;                /* the engine stop has run once */
  int seen;                /* a list has named a container of the run */
  int stopped_live;        /* a stop of ours began while the client was alive */
  int left;                /* containers not confirmed gone (or 1 when the engine did not answer) */
  pid_t call_pid;          /* an engine call in flight */
  int call_status, call_done;
} container_t;
extern container_t ctr;
char **container_prepare(char **argv);
int container_reaped(pid_t pid, int status);
void containers_stop(const char *why, long grace_ms);
void containers_last_look(void);
void owner_label(char *buf, size_t size);

#define ENGINE_CALL_MS 10000 /* a list, inspect, kill or rm: the engine answers in well under this */
#define ENGINE_ERR_MAX 2048
#define MAX_IDS 32
/* One look at a run's containers (looks.c): those the engine has, each with its state. */
typedef struct {
  char buf[MAX_IDS * 72];  /* the list's answer: an id is 64 hex digits and a newline */
  char *id[MAX_IDS + 1];   /* NULL-ended */
  char state[MAX_IDS][24]; /* the engine's own word for each one's state ("running", "stopping"...) */
  int n;
} look_t;
/* With --rm, how many looks in a row have seen each container at rest (looks.c). */
typedef struct {
  char id[MAX_IDS][72];
  int looks[MAX_IDS];
  int n;
  char rm_err[ENGINE_ERR_MAX]; /* the last line of a failed rm -f of a leftover, for the report */
} tally_t;
void last_line(char *text);
int engine_call(const char *const *sub, char *out, size_t out_size, char *err, long timeout_ms, int quiet);
void engine_failed(const char *what, const char *err);
int on_ids(const char *const *verb, int nverb, char *const *ids, int n, char *err, long timeout_ms, int quiet);
int look(look_t *l);
int at_rest(const look_t *l, int i);
int keeps(const look_t *l, int i);
int remaining(const look_t *l);
int undecided(const look_t *l);
int confirm(long window_ms, look_t *l, tally_t *t);
int settle(look_t *l);

/* host.c */
void watch_parent(pid_t parent);
void on_parent_gone(void);

/* isolate.c */
#if RK_LINUX
void unshare_pid_namespace(void);
void become_namespace_init(int alive_fd);
void start_isolated(void);
#endif

/* main.c */
void supervise(void);

#endif
