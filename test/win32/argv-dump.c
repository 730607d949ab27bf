/* A stand-in for a container engine's client under Wine (test/win32/fixtures/containers.cjs): no
 * engine runs there, so a copy of this program named docker.exe or podman.exe receives what
 * reapkit's spawn() would hand to the real one. It appends one JSON line to the file named by
 * REAPKIT_ARGV_LOG: {"argv": [...]}, its arguments after the program, split the way the Microsoft C
 * runtime splits a command line (CommandLineToArgvW), and exits 0 without a byte on stdout (so a
 * `ps` of reapkit's own finds no container). Built by scripts/win32/build.sh, for the tests only. */
#include <windows.h>
#include <shellapi.h>
#include <stdio.h>
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

int main(void) {
  wchar_t log[MAX_PATH * 4];
  if (GetEnvironmentVariableW(L"REAPKIT_ARGV_LOG", log, MAX_PATH * 4) == 0) return 2;
  int argc = 0;
  wchar_t **argv = CommandLineToArgvW(GetCommandLineW(), &argc);
  if (argv == NULL) return 3;
  FILE *f = _wfopen(log, L"ab");
  if (f == NULL) return 4;
  fputs("{\"argv\":[", f);
  for (int i = 1; i < argc; i++) {
    if (i > 1) fputc(',', f);
    put_json(f, argv[i]);
  }
  fputs("]}\n", f);
  fclose(f);
  LocalFree(argv);
  return 0;
}
