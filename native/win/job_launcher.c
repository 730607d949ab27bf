/*
 * reapkit-job.exe COMMAND [ARGS...]: runs COMMAND in a Job object of its own, with no window of
 * escape. Windows' counterpart of spawn()'s exec helper, for the gap Node's spawn leaves: it cannot
 * create a child suspended, so a job assigned after the spawn races the child's own first spawns.
 *
 *   1. a job with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and no breakaway; its handle is not inheritable;
 *   2. the command is created CREATE_SUSPENDED, with this process's standard handles (inherited),
 *      its environment and working directory; the command line is this process's own, minus
 *      argv[0], passed through untouched (so it is quoted exactly as Node quoted it for us);
 *   3. assigned to the job, then resumed: it runs no instruction outside the job;
 *   4. this process waits for the command and exits with its exit code. Exiting closes the job's
 *      last handle: whatever the command left running (its descendants) is killed by the kernel.
 *      So is everything when this process is killed by any means (TerminateProcess from its host,
 *      or its host's death through libuv's kill-on-close job, in which Node puts this process).
 *
 * Exit status: the command's; 125 when the job cannot be set up; 127 when the command cannot be
 * started (the reason on stderr). Ctrl+C/Ctrl+Break reach the command through the shared console;
 * this process ignores them itself and waits for the command.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <stdio.h>

static void fail(const char* what, DWORD err) {
  fprintf(stderr, "reapkit-job: %s failed (Windows error %lu)\n", what, (unsigned long)err);
}

static BOOL WINAPI ignore_ctrl(DWORD type) {
  (void)type;
  return TRUE; /* the command gets the event too; its exit ends us */
}

/* The command line after argv[0], by CommandLineToArgvW's rule for argv[0] (no escapes in it). */
static wchar_t* after_argv0(wchar_t* cl) {
  if (*cl == L'"') {
    cl++;
    while (*cl && *cl != L'"') cl++;
    if (*cl) cl++;
  } else {
    while (*cl && *cl != L' ' && *cl != L'\t') cl++;
  }
  while (*cl == L' ' || *cl == L'\t') cl++;
  return cl;
}

static void inheritable(DWORD which) {
  HANDLE h = GetStdHandle(which);
  if (h != NULL && h != INVALID_HANDLE_VALUE) SetHandleInformation(h, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
}

int main(void) {
  wchar_t* command = after_argv0(GetCommandLineW());
  if (*command == 0) {
    fprintf(stderr, "usage: reapkit-job COMMAND [ARGS...]\n");
    return 125;
  }
  size_t len = wcslen(command);
  wchar_t* buffer = (wchar_t*)HeapAlloc(GetProcessHeap(), 0, (len + 1) * sizeof(wchar_t));
  if (buffer == NULL) return 125;
  memcpy(buffer, command, (len + 1) * sizeof(wchar_t)); /* CreateProcessW may write to it */

  HANDLE job = CreateJobObjectW(NULL, NULL);
  if (job == NULL) {
    fail("CreateJobObject", GetLastError());
    return 125;
  }
  JOBOBJECT_EXTENDED_LIMIT_INFORMATION limits;
  ZeroMemory(&limits, sizeof limits);
  limits.BasicLimitInformation.LimitFlags = JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE;
  if (!SetInformationJobObject(job, JobObjectExtendedLimitInformation, &limits, sizeof limits)) {
    fail("SetInformationJobObject", GetLastError());
    return 125;
  }

  inheritable(STD_INPUT_HANDLE);
  inheritable(STD_OUTPUT_HANDLE);
  inheritable(STD_ERROR_HANDLE);
  STARTUPINFOW si;
  ZeroMemory(&si, sizeof si);
  si.cb = sizeof si;
  si.dwFlags = STARTF_USESTDHANDLES;
  si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  si.hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  si.hStdError = GetStdHandle(STD_ERROR_HANDLE);
  PROCESS_INFORMATION pi;
  ZeroMemory(&pi, sizeof pi);
  if (!CreateProcessW(NULL, buffer, NULL, NULL, TRUE, CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT, NULL, NULL,
                      &si, &pi)) {
    fail("CreateProcess", GetLastError());
    return 127;
  }
  if (!AssignProcessToJobObject(job, pi.hProcess)) {
    DWORD err = GetLastError();
    TerminateProcess(pi.hProcess, 125); /* never let it run outside the job */
    fail("AssignProcessToJobObject", err);
    return 125;
  }
  SetConsoleCtrlHandler(ignore_ctrl, TRUE);
  if (ResumeThread(pi.hThread) == (DWORD)-1) {
    fail("ResumeThread", GetLastError());
    return 125; /* exiting closes the job: the suspended command goes with it */
  }
  CloseHandle(pi.hThread);
  WaitForSingleObject(pi.hProcess, INFINITE);
  DWORD code = 1;
  GetExitCodeProcess(pi.hProcess, &code);
  /* ExitProcess closes the job's last handle: the command's leftovers are killed. */
  ExitProcess(code);
}
