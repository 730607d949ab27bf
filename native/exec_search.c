/* execvp's search, written out so that the exec helper behaves as Node's own spawn does on a glibc
 * system whatever libc it is linked with. The helper is linked statically against musl where it can
 * be (a static glibc program starts slower: bench/helper-start.mjs, in `npm run bench`'s spawn
 * section, times both), and musl's execvp differs from glibc's in what users meet:
 *   - an executable without a #! line: glibc runs it with /bin/sh (ENOEXEC), musl fails;
 *   - PATH unset: glibc searches /bin:/usr/bin (confstr's _CS_PATH), musl /usr/local/bin:/bin:/usr/bin.
 * The rules below are glibc 2.36's (posix/execvpe.c): a name with a '/' is exec'd as it is; else
 * each PATH entry in turn, an empty entry meaning the current directory; ENOENT, ENOTDIR, ESTALE,
 * ENODEV and ETIMEDOUT go on to the next entry, EACCES too but is remembered and is the error if
 * nothing runs (else the last entry's error is); any other error ends the search with it. ENOEXEC
 * (no #! line, not a binary) runs the same file with /bin/sh, the file's path as $0 and the rest of
 * argv after it. One difference, on purpose: an entry PATH_MAX long or longer is passed over,
 * where glibc then also tries the name in the current directory. */
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
  /* A name past NAME_MAX: glibc takes its first NAME_MAX + 1 bytes, a component the kernel refuses
   * when it reaches it (ENAMETOOLONG where the entry's directory exists, ENOENT where it does not,
   * so the search goes on past a missing one). The same here, without reading past them. */
  size_t file_len = strnlen(file, NAME_MAX + 1);
  const char *path = getenv("PATH");
  if (path == NULL) path = DEFAULT_PATH;
  /* glibc passes over an entry at least as long as PATH_MAX (only a PATH that long has one). */
  size_t longest = strnlen(path, PATH_MAX - 1) + 1;
  int saw_eacces = 0;
  errno = ENOENT; /* the error when no entry is tried */
  char candidate[PATH_MAX + NAME_MAX + 2];
  for (const char *entry = path;; entry++) {
    const char *end = strchr(entry, ':');
    size_t dir_len = end != NULL ? (size_t)(end - entry) : strlen(entry);
    if (dir_len < longest) {
      memcpy(candidate, entry, dir_len);
      size_t at = dir_len;
      if (dir_len > 0) candidate[at++] = '/'; /* an empty entry: the current directory */
      memcpy(candidate + at, file, file_len);
      candidate[at + file_len] = '\0';
      if (at + file_len >= PATH_MAX) {
        errno = ENAMETOOLONG; /* what the kernel says of a path this long: it ends the search */
        return;
      }
      exec_one(candidate, argv);
      if (errno == EACCES) saw_eacces = 1;
      if (!exec_search_skips(errno)) return;
    }
    if (end == NULL) break;
    entry = end;
  }
  if (saw_eacces) errno = EACCES;
}
