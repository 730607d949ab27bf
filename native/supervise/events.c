/* Time, and the --verbose lifecycle events (one JSON object per line on stderr). */

#include "supervise.h"

long long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long started_ms;
const char *role = "supervisor"; /* "init" inside the namespace of --isolate */

/* One JSON object per line on stderr, only with --verbose. `fields` is a JSON fragment. */
void event(const char *name, const char *fields, ...) {
  if (!opt.verbose) return;
  char extra[2048] = "";
  if (fields && fields[0]) {
    va_list ap;
    va_start(ap, fields);
    extra[0] = ',';
    vsnprintf(extra + 1, sizeof extra - 1, fields, ap);
    va_end(ap);
  }
  fprintf(stderr, "{\"source\":\"reapkit\",\"event\":\"%s\",\"role\":\"%s\",\"pid\":%d,\"ms\":%lld%s}\n", name,
          role, (int)getpid(), now_ms() - started_ms, extra);
}
