/* The terminal: handed to the command when we hold it, taken back at the end; job control. */

#include "supervise.h"

int tty_fd = -1;          /* the terminal whose foreground we handed to the command */
pid_t tty_restore_pgrp = 0;

void restore_tty(void) {
  if (tty_fd < 0 || tty_restore_pgrp <= 0) return;
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTTOU); /* we are a background group now: tcsetpgrp would stop us */
  sigprocmask(SIG_BLOCK, &block, &old);
  tcsetpgrp(tty_fd, tty_restore_pgrp);
  sigprocmask(SIG_SETMASK, &old, NULL);
  tty_fd = -1;
}

/* Interactive use: Ctrl+Z stopped the command (its group has the terminal). Behave as a job: take
 * the terminal back and stop ourselves, so the shell sees its job stopped; on fg (SIGCONT and the
 * terminal handed to our group) give the terminal back and continue the command. */
void follow_job_control(void) {
  if (st.mode != PLAIN || tty_fd < 0 || tty_restore_pgrp <= 0 || st.main_done) return;
  siginfo_t si;
  memset(&si, 0, sizeof si);
  if (waitid(P_PID, (id_t)st.main, &si, WSTOPPED | WNOHANG) != 0 || si.si_pid != st.main || si.si_code != CLD_STOPPED)
    return;
  event("job-stop", "\"signal\":\"%d\"", si.si_status);
  tcsetpgrp(tty_fd, tty_restore_pgrp);
  raise(SIGSTOP); /* returns once we are continued (fg or bg) */
  if (tcgetpgrp(tty_fd) == getpgrp()) tcsetpgrp(tty_fd, st.main); /* fg: the command reads again */
  killpg(st.main, SIGCONT);
  event("job-continue", "");
}
