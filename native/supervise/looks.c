/* What the engine says of a run's containers (engine.c asks): which it has, by the run's label, and
 * each one's state; when the run is gone; which leftovers of a --rm run may be removed.
 *
 *   list    ps -a -q --no-trunc --filter label=reapkit.run=<id>
 *   state   inspect --format {{.State.Status}} <id>   (podman 4's `ps` names states in words for
 *           people, "Up 2 seconds", "Stopping"; inspect gives every engine's own word)
 *
 * A container is gone only at rest (see at_rest) or removed. An engine that does not answer is
 * never read as "gone". */

#include "supervise.h"

#define CONFIRM_POLL_MS 200
/* The last look, when no list has named a container yet and the client did not end on its own (a
 * stop of ours reached it, or it died by a signal): the client may have asked for the container
 * just before it died, and the daemon creates it afterwards (never started: `--rm` will not remove
 * it). The look goes on this long for one to appear. */
#define SETTLE_MS 3000

/* The states in which a container's processes are gone: docker's exited, created, dead; podman's
 * exited, stopped (exited, its cleanup pending), created, configured, initialized (never started).
 * Any other is not at rest: running, paused, restarting, removing (docker), and podman's stopping,
 * which `ps` without -a leaves out while PID 1 still runs (a stop in flight, or one whose client was
 * cut short). A state we do not know is not at rest either: never read as gone. */
static const char *const at_rest_states[] = {"exited", "stopped", "created", "configured", "initialized", "dead", NULL};

int at_rest(const look_t *l, int i) {
  for (int k = 0; at_rest_states[k] != NULL; k++)
    if (strcasecmp(l->state[i], at_rest_states[k]) == 0) return 1;
  return 0;
}

/* Keeps the run from being gone: with --rm, anything the engine still has; without, anything not at
 * rest (a stopped container stays, as the user asked). */
int keeps(const look_t *l, int i) {
  return ctr.auto_remove || !at_rest(l, i);
}

/* Never started (created; podman's configured, initialized): at rest now, but a `run` is a create
 * and then a start, and a start may be on its way just after this look. */
static int never_started(const look_t *l, int i) {
  return strcasecmp(l->state[i], "created") == 0 || strcasecmp(l->state[i], "configured") == 0 ||
         strcasecmp(l->state[i], "initialized") == 0;
}

/* What a later stop still has to see to: what keeps the run, and what was never started (the first
 * look of a stop counts everything). */
int undecided(const look_t *l) {
  int n = 0;
  for (int i = 0; i < l->n; i++) n += keeps(l, i) || never_started(l, i);
  return n;
}

static int any_never_started(const look_t *l) {
  for (int i = 0; i < l->n; i++)
    if (never_started(l, i)) return 1;
  return 0;
}

int remaining(const look_t *l) {
  int n = 0;
  for (int i = 0; i < l->n; i++) n += keeps(l, i);
  return n;
}

/* The containers of this run, stopped ones too. Their number, or -1: the engine did not answer. */
static int list(look_t *l) {
  char filter[128];
  snprintf(filter, sizeof filter, "label=%s", ctr.run_label);
  const char *ps[] = {"ps", "-a", "-q", "--no-trunc", "--filter", filter, NULL};
  l->n = 0;
  l->id[0] = NULL;
  if (!engine_call(ps, l->buf, sizeof l->buf, NULL, ENGINE_CALL_MS, 0)) return -1;
  for (char *save = NULL, *tok = strtok_r(l->buf, " \t\r\n", &save); tok != NULL && l->n < MAX_IDS;
       tok = strtok_r(NULL, " \t\r\n", &save))
    l->id[l->n++] = tok;
  l->id[l->n] = NULL;
  if (l->n > 0) ctr.seen = 1;
  return l->n;
}

/* "No such container" (or object): the engine's way of saying it no longer has it. */
static int no_such(const char *err) {
  char low[ENGINE_ERR_MAX];
  size_t i = 0;
  for (; err[i] != '\0' && i < sizeof low - 1; i++) low[i] = (char)tolower((unsigned char)err[i]);
  low[i] = '\0';
  return strstr(low, "no such container") != NULL || strstr(low, "no such object") != NULL;
}

/* One container's state into `state`: 1 known, 0 the engine no longer has it (removed since the
 * list), -1 the engine did not answer. */
static int state_of(const char *id, char *state, size_t size) {
  const char *inspect[] = {"inspect", "--format", "{{.State.Status}}", id, NULL};
  char out[64], err[ENGINE_ERR_MAX];
  if (!engine_call(inspect, out, sizeof out, err, ENGINE_CALL_MS, 1)) {
    if (no_such(err)) return 0;
    engine_failed("inspect", err);
    return -1;
  }
  size_t len = strcspn(out, " \t\r\n");
  if (len >= size) len = size - 1; /* (cut short, a word we do not know stays one: not at rest) */
  memcpy(state, out, len);
  state[len] = '\0'; /* "" (no word in the answer) is no state at rest either */
  return 1;
}

/* One look at the run: every container the engine has of it, each with its state (one removed
 * between the list and its inspect is left out). Their number, or -1: the engine did not answer. */
int look(look_t *l) {
  int n = list(l), k = 0;
  for (int i = 0; i < n; i++) {
    int known = state_of(l->id[i], l->state[k], sizeof l->state[k]);
    if (known < 0) {
      n = -1;
      k = 0; /* (nothing to act on) */
      break;
    }
    if (known > 0) l->id[k++] = l->id[i];
  }
  l->id[k] = NULL;
  l->n = k;
  return n < 0 ? -1 : k;
}

/* How many looks in a row before this one saw `id` at rest. */
static int looks_at_rest(const tally_t *t, const char *id) {
  for (int i = 0; i < t->n; i++)
    if (strcmp(t->id[i], id) == 0) return t->looks[i];
  return 0;
}

/* With --rm, a leftover at rest on two looks in a row is removed (docker removes its own a moment
 * after the exit; podman's cleanup may have died with its client; one never started stays created).
 * Two looks, not one: a created container may be started just after a look. Never one not at rest:
 * podman 4's `rm -f` of a `stopping` container drops its record and leaves conmon and PID 1
 * running, unlisted. Quiet: the engine may be removing it already, and the looks judge. 1 when the
 * next look matters: an `rm -f` was made, or a leftover awaits its second look. */
static int remove_leftovers(const look_t *l, tally_t *t) {
  static const char *const rm_docker[] = {"rm", "-f"};
  static const char *const rm_podman[] = {"rm", "-f", "-t", "0"}; /* (podman's would stop with a timeout first) */
  tally_t next;
  char *ids[MAX_IDS];
  int n = 0, awaited = 0;
  next.n = 0;
  for (int i = 0; i < l->n; i++) {
    if (!at_rest(l, i)) continue; /* two looks in a row at rest, not two looks in all */
    int looks = looks_at_rest(t, l->id[i]) + 1;
    snprintf(next.id[next.n], sizeof next.id[0], "%s", l->id[i]);
    next.looks[next.n++] = looks;
    if (looks == 1) awaited = 1;
    if (looks == 2) ids[n++] = l->id[i];
  }
  memcpy(t->id, next.id, sizeof next.id[0] * (size_t)next.n); /* (its rm_err stays: the report's) */
  memcpy(t->looks, next.looks, sizeof next.looks[0] * (size_t)next.n);
  t->n = next.n;
  if (n == 0) return awaited;
  int podman = strcmp(ctr.engine, "podman") == 0;
  char err[ENGINE_ERR_MAX];
  if (!on_ids(podman ? rm_podman : rm_docker, podman ? 4 : 2, ids, n, err, ENGINE_CALL_MS, 1)) {
    last_line(err);
    memcpy(t->rm_err, err, sizeof err);
  }
  return 1;
}

/* Sleeps `ms`, reaping what exits meanwhile. */
static void pause_reaping(int ms) {
  poll(NULL, 0, ms);
  reap();
}

/* Looks until the run is gone as the user asked (see keeps; a never-started container on two looks
 * in a row), within `window_ms`. With --rm and a
 * tally `t` (the forced phase: before it, the engine's own removal is left to finish), removes the
 * leftovers at rest, and the window does not end on one just removed or seen at rest once (each adds
 * a look or two at most). 1 gone, 0 still there when the window ends, -1 the engine did not answer
 * the window's last look.
 * `l` gets the last look. */
int confirm(long window_ms, look_t *l, tally_t *t) {
  long long end = now_ms() + window_ms;
  int calm = 0; /* the previous look found nothing keeping the run */
  for (;;) {
    if (look(l) < 0) { /* (one failed look is not the verdict: the window is) */
      if (now_ms() >= end) return -1;
      calm = 0;
      if (t != NULL) t->n = 0; /* looks in a row */
      pause_reaping(CONFIRM_POLL_MS);
      continue;
    }
    if (remaining(l) == 0) {
      if (calm || !any_never_started(l)) return 1;
      calm = 1; /* a never-started container is at rest only when the next look agrees */
    } else {
      calm = 0;
    }
    int pending = calm || (ctr.auto_remove && t != NULL && remove_leftovers(l, t));
    if (now_ms() >= end && !pending) return 0;
    pause_reaping(CONFIRM_POLL_MS);
  }
}

/* The last look, for a run that no look has named a container of and whose client was cut short:
 * looks again for SETTLE_MS. The number of containers found (`l`), or -1: no answer. */
int settle(look_t *l) {
  long long end = now_ms() + SETTLE_MS;
  for (;;) {
    int n = look(l);
    if (n != 0 || now_ms() >= end) return n;
    pause_reaping(CONFIRM_POLL_MS);
  }
}
