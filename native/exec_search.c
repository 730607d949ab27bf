/* execvp's search, written out so that the exec helper behaves as Node's own spawn does on a glibc
 * system whatever libc it is linked with. The helper is linked statically against musl where it can
 * be (a static glibc program costs ~0.3 ms more to start: measured in bench/spawn-cost.mjs), and
 * musl's execvp differs from glibc's in what users meet:
 *   - an executable without a #! line: glibc runs it with /bin/sh (ENOEXEC), musl fails;
 *   - PATH unset: glibc searches /bin:/usr/bin (confstr's _CS_PATH), musl /usr/local/bin:/bin:/usr/bin.
 * The rules below are glibc's (posix/execvpe.c): a name with a '/' is exec'd as it is; else each
 * PATH entry in turn, an empty entry meaning the current directory; ENOENT, ENOTDIR, ESTALE,
 * ENODEV and ETIMEDOUT go on to the next entry, EACCES too but is remembered and is the error if
 * nothing runs (else the last entry's error is); any other error ends the search with it. ENOEXEC (no #! line, not a binary) runs
 * the same file with /bin/sh, the file's path as $0 and the rest of argv after it. */
#include "exec_search.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

/* glibc's default when PATH is unset. */
#define DEFAULT_PATH "/bin:/usr/bin"
#define SHELL_PATH "/bin/sh"

int exec_search_skips(int err) {
  return err == ENOENT || err == ENOTDIR || err == EACCES || err == ESTALE || err == ENODEV || err == ETIMEDOUT;
}

/* The file is not a binary and has no #! line: /bin/sh runs it, as a shell would. */
static void run_with_shell(const char *path, char *const argv[]) {
  size_t argc = 0;
  while (argv[argc] != NULL) argc++;
  /* On the stack, as glibc does: argv already fit the kernel's limit (a quarter of the stack). */
  char *shell_argv[argc + 3];
  shell_argv[0] = (char *)SHELL_PATH;
  shell_argv[1] = (char *)path;
  for (size_t i = 1; i < argc; i++) shell_argv[i + 1] = argv[i];
  shell_argv[argc < 1 ? 2 : argc + 1] = NULL;
  execve(SHELL_PATH, shell_argv, environ); /* on failure errno is the shell's, as with glibc */
}

/* One execve, and the shell for a file without #!; returns with errno set. */
static void exec_one(const char *path, char *const argv[]) {
  execve(path, argv, environ);
  if (errno == ENOEXEC) run_with_shell(path, argv);
}

void exec_search(const char *file, char *const argv[]) {
  if (file[0] == '\0') {
    errno = ENOENT;
    return;
  }
  if (strchr(file, '/') != NULL) {
    exec_one(file, argv);
    return;
  }
  /* A name past NAME_MAX is left to the kernel, as glibc does: its error depends on the entry
   * (ENOENT where the directory is missing, ENAMETOOLONG where it exists). */
  size_t file_len = strlen(file);
  if (file_len >= PATH_MAX) {
    errno = ENAMETOOLONG;
    return;
  }
  const char *path = getenv("PATH");
  if (path == NULL) path = DEFAULT_PATH;
  int saw_eacces = 0;
  char candidate[PATH_MAX];
  for (const char *entry = path;; entry++) {
    const char *end = strchr(entry, ':');
    size_t dir_len = end != NULL ? (size_t)(end - entry) : strlen(entry);
    /* An entry too long for a path is skipped, as glibc skips one it cannot fit. */
    if (dir_len + 1 + file_len < sizeof candidate) {
      memcpy(candidate, entry, dir_len);
      size_t at = dir_len;
      if (dir_len > 0) candidate[at++] = '/'; /* an empty entry: the current directory */
      memcpy(candidate + at, file, file_len + 1);
      exec_one(candidate, argv);
      if (errno == EACCES) saw_eacces = 1;
      if (!exec_search_skips(errno)) return;
    }
    if (end == NULL) break;
    entry = end;
  }
  if (saw_eacces) errno = EACCES;
}
