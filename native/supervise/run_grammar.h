/* Reading an argv as a container run (run_grammar.c): pure, no state, no system call, so that a
 * test driver links it alone (test/container-grammar.test.ts asks it and the library the same
 * argvs). */
#ifndef REAPKIT_RUN_GRAMMAR_H
#define REAPKIT_RUN_GRAMMAR_H

/* A recognized `engine [globals] run|container run [run flags] IMAGE [args...]`, in argv indices
 * (argv[0] the program). */
typedef struct {
  int engine;      /* container_engine_name(engine): docker, podman, nerdctl */
  int globals_end; /* where the global flags end: the `run`, or the `container` of `container run` */
  int run_at;      /* the `run` token */
  int flags_end;   /* where the run's flags end: the image, or the `--` before it (our labels go there) */
  int auto_remove; /* --rm given (and true): the engine removes the container once it exits */
} container_run_t;

/* The engine named by a program path (its last `/` or `\` component, `.exe` and ASCII case
 * ignored), or -1. */
int container_engine_of(const char *program);
const char *container_engine_name(int engine);

/* 1 when argv (NULL-terminated) is a container run of ours to stop, *run filled; 0 for anything
 * else: another program or subcommand, a flag not in the table, a value missing, -d, --help, a
 * boolean's value the client refuses, no image. Such a command is run as a plain one. */
int container_run_parse(char *const *argv, container_run_t *run);

#endif
