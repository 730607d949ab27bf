/* The PID namespace step of reapkit-exec (native/exec_pidns.c; Linux only, ENOSYS elsewhere). */
#ifndef REAPKIT_EXEC_PIDNS_H
#define REAPKIT_EXEC_PIDNS_H

/* Steps, as the report names them (native/exec_report.cc maps them to syscall names). */
#define STEP_CGROUP 'c'
#define STEP_SETPGID 'g'
#define STEP_PDEATHSIG 'p'
#define STEP_NAMESPACE 'n'
#define STEP_FORK 'f'
#define STEP_EXEC 'e'
#define STEP_REPORT 'r'

/* A new PID namespace for our next child: unshare(CLONE_NEWPID), through an unprivileged user
 * namespace when the kernel refuses it to us (not root). Returns 0, or the errno of the first refusal;
 * *through_user says which route it took (1: a user namespace first). */
int enter_pid_namespace(int *through_user);

/* Runs FILE (argv) as the first process under a small init of ours, PID 1 of the namespace
 * enter_pid_namespace made, and stays outside as the process our parent sees: it forwards signals to
 * the init and ends with the command's status. Does not return. `report` is the report fd (or -1),
 * `fail` reports a failed step on it and returns the exit code (exec_helper.c). */
typedef int (*report_failure)(int report, char step, int err, const char *what);
void run_in_pid_namespace(int report, const char *file, char **argv, report_failure fail) __attribute__((noreturn));

#endif
