/* A stand-in for a container engine's client under Wine (test/win32/fixtures/containers.cjs,
 * wrapper-containers.cjs): no engine runs there, so a copy of this program named docker.exe or
 * podman.exe receives what reapkit would hand to the real one. It appends one JSON line to the file
 * named by REAPKIT_ARGV_LOG: {"argv": [...]}, its arguments after the program, split the way the
 * Microsoft C runtime splits a command line (CommandLineToArgvW). Then:
 *
 * - without REAPKIT_FAKE_ENGINE_DIR it exits 0 without a byte on stdout (so a `ps` of reapkit's
 *   own finds no container);
 * - with it (a folder), it answers as an engine would, one file per container in that folder
 *   (named by the container's id, the run's `reapkit.run` label without its dashes; holding its
 *   state, `running` or `exited`, and ` rm` for a `--rm` run):
 *     run      records the container running, then stays (a client attached to its container)
 *              until the container is no longer running, exiting 0, or, with REAPKIT_FAKE_RUN_MS,
 *              exits after that long with REAPKIT_FAKE_RUN_CODE (default 0) leaving it running
 *              (a client that crashed, or lost its daemon); `-d`: prints the id and exits;
 *     ps       the id of the container carrying the `label=reapkit.run=` filter's value, if it
 *              exists (`-a`) or runs (without); none for `status=created`;
 *     inspect  its state, or "No such object" (exit 1);
 *     stop, kill  a running container exits (with `--rm`: is removed); prints the ids;
 *     rm       removes it;
 *   with REAPKIT_FAKE_ENGINE_STUBBORN set, stop, kill and rm print the ids and change nothing.
 * Built by scripts/win32/build.sh, for the tests only. */
#include <windows.h>
#include <fcntl.h>
#include <io.h>
#include <shellapi.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

/* One argument as a JSON string, in UTF-8. */
static void put_json(FILE *f, const wchar_t *arg) {
  char utf8[8192];
  int n = WideCharToMultiByte(CP_UTF8, 0, arg, -1, utf8, (int)sizeof utf8, NULL, NULL);
  if (n <= 0) utf8[0] = '\0';
  fputc('"', f);
  for (const unsigned char *p = (const unsigned char *)utf8; *p; p++) {
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20) fprintf(f, "\\u%04x", *p);
    else fputc(*p, f);
  }
  fputc('"', f);
}

/* The log, opened for appends only (FILE_APPEND_DATA) and buffered whole: the line goes out in one
 * write, an atomic append, however many copies run at once (a stop's looks overlap its calls). */
static FILE *open_log(const wchar_t *log) {
  HANDLE h = CreateFileW(log, FILE_APPEND_DATA, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, NULL, OPEN_ALWAYS, FILE_ATTRIBUTE_NORMAL, NULL);
  if (h == INVALID_HANDLE_VALUE) return NULL;
  int fd = _open_osfhandle((intptr_t)h, _O_APPEND);
  FILE *f = fd < 0 ? NULL : _fdopen(fd, "ab");
  static char buffer[1 << 16];
  if (f != NULL) setvbuf(f, buffer, _IOFBF, sizeof buffer);
  return f;
}

/* The container's file in the engine folder `dir` (its id, from a run label's value: dashes left out). */
static void state_path(const wchar_t *dir, const wchar_t *id, wchar_t *out, size_t n) {
  wchar_t bare[128];
  size_t k = 0;
  for (const wchar_t *p = id; *p && k + 1 < 128; p++)
    if (*p != L'-') bare[k++] = *p;
  bare[k] = 0;
  _snwprintf(out, n, L"%ls\\%ls", dir, bare);
  out[n - 1] = 0;
}

/* The container's state ("running", "exited"; "" when there is none) and whether it is a --rm one. */
static void read_state(const wchar_t *file, char *state, size_t n, BOOL *rm) {
  state[0] = 0;
  *rm = FALSE;
  FILE *f = _wfopen(file, L"rb");
  if (f == NULL) return;
  char line[64] = {0};
  size_t got = fread(line, 1, sizeof line - 1, f);
  fclose(f);
  line[got] = 0;
  *rm = strstr(line, " rm") != NULL;
  size_t k = strcspn(line, " \r\n");
  if (k >= n) k = n - 1;
  memcpy(state, line, k);
  state[k] = 0;
}

/* Writes the container's state whole (a temporary file renamed over it: a reader never sees half). */
static void write_state(const wchar_t *file, const char *state, BOOL rm) {
  wchar_t tmp[MAX_PATH * 4];
  _snwprintf(tmp, MAX_PATH * 4, L"%ls.%lu.tmp", file, GetCurrentProcessId());
  tmp[MAX_PATH * 4 - 1] = 0;
  FILE *f = _wfopen(tmp, L"wb");
  if (f == NULL) return;
  fprintf(f, "%s%s\n", state, rm ? " rm" : "");
  fclose(f);
  MoveFileExW(tmp, file, MOVEFILE_REPLACE_EXISTING);
}

/* The value after `prefix` in the first argument from `from` that starts with it, or NULL. */
static const wchar_t *value_of(wchar_t **argv, int argc, int from, const wchar_t *prefix) {
  size_t n = wcslen(prefix);
  for (int i = from; i < argc; i++)
    if (wcsncmp(argv[i], prefix, n) == 0) return argv[i] + n;
  return NULL;
}

static BOOL has_arg(wchar_t **argv, int argc, int from, const wchar_t *arg) {
  for (int i = from; i < argc; i++)
    if (wcscmp(argv[i], arg) == 0) return TRUE;
  return FALSE;
}

/* `run`: the container runs; the client stays attached until it stops (or REAPKIT_FAKE_RUN_MS). */
static int engine_run(const wchar_t *dir, wchar_t **argv, int argc, int at) {
  const wchar_t *id = value_of(argv, argc, at, L"reapkit.run=");
  wchar_t file[MAX_PATH * 4];
  state_path(dir, id ? id : L"unlabelled", file, MAX_PATH * 4);
  write_state(file, "running", has_arg(argv, argc, at, L"--rm"));
  if (has_arg(argv, argc, at, L"-d")) {
    printf("%ls\n", wcsrchr(file, L'\\') + 1);
    return 0;
  }
  wchar_t ms[32], code[32];
  DWORD limit = GetEnvironmentVariableW(L"REAPKIT_FAKE_RUN_MS", ms, 32) ? (DWORD)_wtoi(ms) : INFINITE;
  int status = GetEnvironmentVariableW(L"REAPKIT_FAKE_RUN_CODE", code, 32) ? _wtoi(code) : 0;
  for (DWORD waited = 0; limit == INFINITE || waited < limit; waited += 50) {
    char state[32];
    BOOL rm;
    read_state(file, state, sizeof state, &rm);
    if (strcmp(state, "running") != 0) return 0;
    Sleep(50);
  }
  return status;
}

/* `ps [-a] -q --filter label=reapkit.run=ID [--filter status=S]`: the container's id, if listed. */
static int engine_ps(const wchar_t *dir, wchar_t **argv, int argc, int at) {
  const wchar_t *id = value_of(argv, argc, at, L"label=reapkit.run=");
  const wchar_t *status = value_of(argv, argc, at, L"status=");
  if (id == NULL || (status != NULL && wcscmp(status, L"running") != 0)) return 0;
  wchar_t file[MAX_PATH * 4];
  state_path(dir, id, file, MAX_PATH * 4);
  char state[32];
  BOOL rm;
  read_state(file, state, sizeof state, &rm);
  BOOL all = has_arg(argv, argc, at, L"-a");
  if (state[0] != 0 && (all || strcmp(state, "running") == 0)) printf("%ls\n", wcsrchr(file, L'\\') + 1);
  return 0;
}

/* `inspect`, `stop`, `kill`, `rm` on the ids among the arguments from `at` (flags and their values skipped). */
static int engine_on_ids(const wchar_t *dir, const wchar_t *verb, wchar_t **argv, int argc, int at) {
  int status = 0;
  for (int i = at; i < argc; i++) {
    if (argv[i][0] == L'-') {
      if (wcscmp(argv[i], L"-t") == 0 || wcscmp(argv[i], L"--format") == 0) i++;
      continue;
    }
    wchar_t file[MAX_PATH * 4];
    state_path(dir, argv[i], file, MAX_PATH * 4);
    char state[32];
    BOOL rm;
    read_state(file, state, sizeof state, &rm);
    if (state[0] == 0) {
      fprintf(stderr, "Error response from daemon: No such container: %ls\n", argv[i]);
      status = 1;
    } else if (wcscmp(verb, L"inspect") == 0) {
      printf("%s\n", state);
    } else if (GetEnvironmentVariableW(L"REAPKIT_FAKE_ENGINE_STUBBORN", NULL, 0) > 0) {
      printf("%ls\n", argv[i]); /* accepted, and nothing happens: a container that survives its stop */
    } else {
      if (wcscmp(verb, L"rm") == 0 || rm) DeleteFileW(file);
      else write_state(file, "exited", rm);
      printf("%ls\n", argv[i]);
    }
  }
  return status;
}

/* The engine's answer to the subcommand (the first argument that names one; globals before it). */
static int engine(const wchar_t *dir, wchar_t **argv, int argc) {
  static const wchar_t *verbs[] = {L"run", L"ps", L"inspect", L"stop", L"kill", L"rm"};
  for (int i = 1; i < argc; i++) {
    for (size_t v = 0; v < sizeof verbs / sizeof *verbs; v++) {
      if (wcscmp(argv[i], verbs[v]) != 0) continue;
      if (v == 0) return engine_run(dir, argv, argc, i + 1);
      if (v == 1) return engine_ps(dir, argv, argc, i + 1);
      return engine_on_ids(dir, verbs[v], argv, argc, i + 1);
    }
  }
  return 0;
}

int main(void) {
  wchar_t log[MAX_PATH * 4];
  if (GetEnvironmentVariableW(L"REAPKIT_ARGV_LOG", log, MAX_PATH * 4) == 0) return 2;
  int argc = 0;
  wchar_t **argv = CommandLineToArgvW(GetCommandLineW(), &argc);
  if (argv == NULL) return 3;
  FILE *f = open_log(log);
  if (f == NULL) return 4;
  fputs("{\"argv\":[", f);
  for (int i = 1; i < argc; i++) {
    if (i > 1) fputc(',', f);
    put_json(f, argv[i]);
  }
  fputs("]}\n", f);
  fclose(f);
  wchar_t dir[MAX_PATH * 4];
  int status = GetEnvironmentVariableW(L"REAPKIT_FAKE_ENGINE_DIR", dir, MAX_PATH * 4) ? engine(dir, argv, argc) : 0;
  LocalFree(argv);
  return status;
}
