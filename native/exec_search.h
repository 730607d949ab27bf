/* exec_search: execvp's PATH search with glibc's rules, whatever libc the helper is linked with. */
#ifndef REAPKIT_EXEC_SEARCH_H
#define REAPKIT_EXEC_SEARCH_H

/* Execs `file` with `argv` and this process's environment as glibc's execvp does; returns only on
 * failure, with errno set to the error execvp would end with. */
void exec_search(const char *file, char *const argv[]);

/* The errors on which the search goes on to the next PATH entry; any other ends it. */
int exec_search_skips(int err);

#endif
