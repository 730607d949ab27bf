/* Reading an argv as a container run, by the library's grammar (lib/mechanisms/container/
 * command.ts) from the library's table (grammar.ts, generated into run_grammar_table.h): the wrapper
 * and spawn() must agree on what is a run of ours, or the same command's container is stopped by
 * one and left Up by the other (issue 28: `docker -H=unix://... run`).
 *
 * As the clients' flag parser (pflag) reads it: a value flag takes the next argument unless written
 * `--flag=value` or `-f=value` (or `-fvalue`); short flags cluster (`-it`, `-eK=V`), a value flag
 * taking the rest of the cluster; the run's flags end at the first argument that is not a flag
 * (the image) or at `--`. Anything not in the table, or not certain, is not ours. */

#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "run_grammar.h"

#include <string.h>
#include <strings.h>

#include "run_grammar_table.h"

/* `name`'s first n bytes are one of `list`'s words. */
static int listed(const char *const *list, const char *name, size_t n) {
  for (; *list; list++)
    if (strlen(*list) == n && strncmp(*list, name, n) == 0) return 1;
  return 0;
}

int container_engine_of(const char *program) {
  const char *base = program;
  for (const char *p = program; *p; p++)
    if (*p == '/' || *p == '\\') base = p + 1;
  size_t n = strlen(base);
  if (n >= 4 && strcasecmp(base + n - 4, ".exe") == 0) n -= 4;
  for (int k = 0; k < ENGINE_COUNT; k++)
    if (strlen(engine_names[k]) == n && strncasecmp(base, engine_names[k], n) == 0) return k;
  return -1;
}

const char *container_engine_name(int engine) {
  return engine >= 0 && engine < ENGINE_COUNT ? engine_names[engine] : "";
}

static int is_flag(const char *arg) {
  return arg[0] == '-' && arg[1] != '\0';
}

/* What the run's booleans said so far. */
typedef struct {
  int auto_remove;
  int refused; /* -d, --help, or a value the client refuses (`--rm=maybe`): not ours */
} run_state_t;

/* The run boolean `name` (n bytes) given `value` (NULL: given bare, so true). */
static void run_boolean(run_state_t *st, const char *name, size_t n, const char *value) {
  int on = value == NULL                                  ? 1
           : listed(bool_true, value, strlen(value))  ? 1
           : listed(bool_false, value, strlen(value)) ? 0
                                                          : -1;
  if (on < 0 || (on && listed(run_not_ours, name, n))) st->refused = 1;
  if (on >= 0 && n == strlen(run_auto_remove) && strncmp(name, run_auto_remove, n) == 0) st->auto_remove = on;
}

/* Reads the flag (or short cluster) at argv[i] against `t`: the index of the next unread argument,
 * or -1 when a name is unknown or a value missing. `st` (the run's flags; NULL for the globals)
 * hears of each boolean given. */
static int read_flag(char *const *argv, int i, const flag_table_t *t, run_state_t *st) {
  const char *arg = argv[i];
  if (arg[1] == '-') {
    const char *eq = strchr(arg, '=');
    size_t n = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
    if (listed(t->booleans, arg, n)) {
      if (st != NULL) run_boolean(st, arg, n, eq != NULL ? eq + 1 : NULL);
      return i + 1;
    }
    if (!listed(t->values, arg, n)) return -1;
    if (eq != NULL) return i + 1;
    return argv[i + 1] != NULL ? i + 2 : -1;
  }
  /* booleans, then at most one value flag, which takes the rest or the next argument; `-f=V` gives
   * V when something follows the `=` (a boolean's bare `=` is then a flag of its own: unknown) */
  for (const char *c = arg + 1; *c != '\0'; c++) {
    const char name[3] = {'-', *c, '\0'};
    if (listed(t->booleans, name, 2)) {
      int inline_value = c[1] == '=' && c[2] != '\0';
      if (st != NULL) run_boolean(st, name, 2, inline_value ? c + 2 : NULL);
      if (inline_value) return i + 1;
      continue;
    }
    if (!listed(t->values, name, 2)) return -1;
    if (c[1] != '\0') return i + 1;
    return argv[i + 1] != NULL ? i + 2 : -1;
  }
  return i + 1;
}

/* The `run` token after the globals (argv[1] on), or -1; *globals_end: where the globals end. */
static int find_run(char *const *argv, const flag_table_t *globals, int *globals_end) {
  int i = 1;
  while (argv[i] != NULL && is_flag(argv[i]) && strcmp(argv[i], "--") != 0) {
    i = read_flag(argv, i, globals, NULL);
    if (i < 0) return -1; /* a global flag we do not know: never guess */
  }
  *globals_end = i;
  if (argv[i] == NULL) return -1;
  if (strcmp(argv[i], "run") == 0) return i;
  if (strcmp(argv[i], "container") == 0 && argv[i + 1] != NULL && strcmp(argv[i + 1], "run") == 0) return i + 1;
  return -1;
}

/* Where the run's flags from `from` end (the image, or the `--` before it), or -1. */
static int read_run_flags(char *const *argv, int from, run_state_t *st) {
  int i = from;
  while (argv[i] != NULL && is_flag(argv[i])) {
    if (strcmp(argv[i], "--") == 0) return argv[i + 1] != NULL ? i : -1;
    i = read_flag(argv, i, &run_flags, st);
    if (i < 0 || st->refused) return -1;
  }
  return argv[i] != NULL ? i : -1; /* no image: the client fails on its own */
}

int container_run_parse(char *const *argv, container_run_t *run) {
  run_state_t st = {0, 0};
  int globals_end = 0;
  if (argv[0] == NULL) return 0;
  int engine = container_engine_of(argv[0]);
  if (engine < 0) return 0;
  int run_at = find_run(argv, &global_flags[engine], &globals_end);
  if (run_at < 0) return 0;
  int flags_end = read_run_flags(argv, run_at + 1, &st);
  if (flags_end < 0) return 0;
  run->engine = engine;
  run->globals_end = globals_end;
  run->run_at = run_at;
  run->flags_end = flags_end;
  run->auto_remove = st.auto_remove;
  return 1;
}
