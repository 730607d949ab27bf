/* Options: the command line, the environment knobs, signal names. */

#include "supervise.h"

options_t opt = {9000, 2000, SIGTERM, 1, 0, 0, 1, 1, NULL};

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

const char *signal_name(int sig) {
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

int parse_signal(const char *s) {
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
long env_ms(const char *name, long fallback, long min, long max) {
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
        "       reapkit doctor [--json] [--stop [--yes]] ...   (see reapkit doctor --help)\n"
        "       reapkit ps|logs ID [-f]|restart ID|stop ID|top [--json] [--socket PATH]\n"
        "\n"
        "Commands, documented in docs/ (it ships in the package), page and section:\n"
        "  reapkit -- command      run a stdio server so that nothing it starts outlives it or its\n"
        "                          host; docs/cli.md: \"Make any stdio server orphan-proof\"\n"
        "  reapkit doctor          list the process trees whose host is gone; --stop ends them;\n"
        "                          docs/doctor.md: \"Find the servers your hosts already leaked\"\n"
        "  reapkit ps, logs, restart, stop, top\n"
        "                          a running Supervisor's children, through the control socket its\n"
        "                          host opened (see reapkit ps --help); docs/operators.md\n"
        "  reapkit-win -- command  Windows: the same, through a kill-on-close Job object;\n"
        "                          docs/cli.md: \"In your host's configuration\"\n"
        "  These first words (and doctor) are subcommands; to run a program of that name under the\n"
        "  wrapper, put -- first: reapkit -- top. Any other first word runs as the command, -- or not.\n"
        "\n"
        "Options of reapkit -- command:\n"
        "  --grace <ms>          stop signal -> SIGKILL grace (default 9000; env REAPKIT_KILL_GRACE_MS)\n"
        "  --signal <name>       signal for a stop the host did not send itself (default SIGTERM)\n"
        "  --close-timeout <ms>  after the host dies, time for the command to exit on its own, stdin at\n"
        "                        end-of-file, before it is signalled (default 2000; env\n"
        "                        REAPKIT_CLOSE_TIMEOUT_MS)\n"
        "  --no-subreaper        do not adopt descendants that leave the group (Linux)\n"
        "  --isolate             run the command in a new PID namespace (Linux; root or unprivileged\n"
        "                        user namespaces): the whole tree dies with the supervisor, always\n"
        "  --no-cgroup           do not put the command in a cgroup of its own (Linux, cgroup v2; env\n"
        "                        REAPKIT_CGROUP=0, false, no or off): its stop is then the\n"
        "                        subreaper's, not the cgroup's\n"
        "  --no-container        run `docker run ...` (podman, nerdctl) as a plain command: no labels,\n"
        "                        its container is not stopped through the engine\n"
        "  --verbose             one JSON lifecycle event per line on stderr\n"
        "  --help, --version\n"
        "\n"
        "Linux, cgroup v2 the wrapper may write (delegated, a container's own, or root outside systemd):\n"
        "the command runs in a cgroup of its own; a stop signals its members (cgroup.procs), then\n"
        "cgroup.kill, gone at populated 0, and removes it. docs/cli.md: \"The command's cgroup\".\n"
        "\n"
        "A container run (`docker run`, `podman run`, `nerdctl run`, not -d) is labelled with its run and\n"
        "owner and, on every stop, stopped through the engine (stop, then kill and with --rm rm -f),\n"
        "bounded; --isolate refuses podman. docs/containers.md: \"Servers in containers\".\n"
        "\n"
        "Exit status: the command's (128 + n when killed by signal n); 123 a container of the run was not\n"
        "confirmed gone (named on stderr); 125 reapkit's own error, 126 the command cannot be executed,\n"
        "127 it was not found.\n",
        to);
}

static void die_usage(const char *fmt, const char *arg) {
  fputs("reapkit: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\nTry 'reapkit --help'.\n", stderr);
  exit(EXIT_OWN_ERROR);
}

void parse_options(int argc, char **argv) {
  opt.grace_ms = env_ms("REAPKIT_KILL_GRACE_MS", 9000, 100, 300000);
  opt.close_ms = env_ms("REAPKIT_CLOSE_TIMEOUT_MS", 2000, 250, 30000);
  const char *cgroup = getenv("REAPKIT_CGROUP");
  /* off for 0, false, no, off (any case, surrounding blanks ignored) */
  if (cgroup != NULL) {
    char v[8] = "";
    size_t n = 0;
    for (const char *c = cgroup + strspn(cgroup, " \t"); *c && *c != ' ' && *c != '\t' && n < sizeof v - 1; c++)
      v[n++] = (char)tolower((unsigned char)*c);
    if (!strcmp(v, "0") || !strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off")) opt.cgroup = 0;
  }
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
    } else if (strcmp(a, "--no-cgroup") == 0) {
      opt.cgroup = 0;
    } else if (strcmp(a, "--no-container") == 0) {
      opt.container = 0;
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
