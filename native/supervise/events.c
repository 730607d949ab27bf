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
  char extra[8192] = ""; /* (an escaped cgroup path can be long) */
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

/* `s` as the inside of a JSON string (quotes, backslashes and control characters escaped), into
 * out; cut short rather than overflow. Paths and reasons can hold any byte but NUL. */
const char *json_text(const char *s, char *out, size_t size) {
  size_t o = 0;
  for (; *s && o + 7 < size; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') out[o++] = '\\', out[o++] = (char)c;
    else if (c < 0x20) o += (size_t)snprintf(out + o, size - o, "\\u%04x", c);
    else out[o++] = (char)c;
  }
  out[o] = '\0';
  return out;
}
