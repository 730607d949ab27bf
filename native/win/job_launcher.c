/*
 * reapkit-job.exe [--host PID|ancestors] [--close-timeout MS] [--] COMMAND [ARGS...]
 *
 * Runs COMMAND in a Job object of its own, with no window of escape: Windows' counterpart of
 * spawn()'s exec helper, for the gap Node's spawn leaves (it cannot create a child suspended, so a
 * job assigned after the spawn races the child's own first spawns). reapkit's spawn() starts every
 * child through it on Windows.
 *
 *   1. a job with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and no breakaway; its handle is not inheritable;
 *   2. the command is created CREATE_SUSPENDED and inside the job (PROC_THREAD_ATTRIBUTE_JOB_LIST,
 *      Windows 10+; else assigned right after its creation), with this process's standard handles
 *      and C runtime descriptor table (Node's IPC channel, extra stdio), its environment and
 *      working directory; the command line is this process's own after the options, passed
 *      through untouched (so it is quoted exactly as Node quoted it for us). A batch file as the
 *      program is refused (cmd.exe would re-parse the arguments): run cmd.exe explicitly;
 *   3. resumed: it runs no instruction outside the job;
 *   4. it waits for whichever comes first:
 *      - the command exits: what it left running in the job is ended;
 *      - a stop request: the event `Local\reapkit-job-stop-<this pid>` is set (what reapkit's
 *        killProcessGracefully does on Windows): the whole job is ended (TerminateJobObject, code 1,
 *        as libuv's SIGTERM ends a process with TerminateProcess(1));
 *      - with --host: the host process dies. After --close-timeout (default 0) for the command to
 *        leave by itself (its stdin pipe from the host is broken now), the whole job is ended.
 *        `--host ancestors` (the `reapkit-win` command) watches every ancestor of this process, up
 *        to 16, and takes the first death among them for the host's: behind launchers (npx.cmd's
 *        cmd.exe, npm's node.exe) the real host is further up, and a launcher that a host started
 *        is ended with it (Node's job) while the ones above may outlive it (their breakaway);
 *   5. "ended" is confirmed: this process exits only once the job lists no process (each member
 *      waited for by handle, bounded), so its exit means the whole tree is gone. Its exit status is
 *      the command's.
 *
 * When this process is itself killed (TerminateProcess from its host, or its host's death through
 * libuv's kill-on-close job, in which Node puts this process), the job's last handle closes and the
 * kernel ends every member: nothing survives, only unconfirmed.
 *
 * Exit status: the command's; 125 on a usage error or when the job cannot be set up; 127 when the
 * command cannot be started (the reason on stderr). Ctrl+C/Ctrl+Break reach the command through the
 * shared console; this process ignores them itself and waits for the command.
 */
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <tlhelp32.h>
#include <stdio.h>
#include <wchar.h>

/* How many ancestors `--host ancestors` watches at most (a host's launcher chain is a few deep). */
#define MAX_ANCESTORS 16

static void fail(const char* what, DWORD err) {
  fprintf(stderr, "reapkit-job: %s failed (Windows error %lu)\n", what, (unsigned long)err);
}

static BOOL WINAPI ignore_ctrl(DWORD type) {
  (void)type;
  return TRUE; /* the command gets the event too; its exit ends us */
}

static wchar_t* skip_blanks(wchar_t* cl) {
  while (*cl == L' ' || *cl == L'\t') cl++;
  return cl;
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
  return skip_blanks(cl);
}

/* One unquoted option token at `cl` into `out` (at most `size` - 1 characters); the rest after it. */
static wchar_t* take_token(wchar_t* cl, wchar_t* out, size_t size) {
  size_t n = 0;
  while (*cl && *cl != L' ' && *cl != L'\t') {
    if (n + 1 < size) out[n++] = *cl;
    cl++;
  }
  out[n] = 0;
  return skip_blanks(cl);
}

/* A decimal number in [0, max], or -1. */
static long long parse_number(const wchar_t* s, long long max) {
  if (*s == 0) return -1;
  long long v = 0;
  for (; *s; s++) {
    if (*s < L'0' || *s > L'9') return -1;
    v = v * 10 + (*s - L'0');
    if (v > max) return -1;
  }
  return v;
}

/*
 * Whether the program (the command line's first token, as CreateProcess reads it) is a batch file,
 * which CreateProcess would run through cmd.exe. Windows drops trailing dots and spaces from a
 * file name ("x.bat. ." opens x.bat), so they are dropped here too (CVE-2024-27980/-36138).
 */
static BOOL is_batch_program(const wchar_t* cl) {
  const wchar_t* start = cl;
  const wchar_t* end;
  if (*cl == L'"') {
    start = ++cl;
    while (*cl && *cl != L'"') cl++;
    end = cl;
  } else {
    while (*cl && *cl != L' ' && *cl != L'\t') cl++;
    end = cl;
  }
  while (end > start && (end[-1] == L'.' || end[-1] == L' ')) end--;
  if (end - start < 4) return FALSE;
  const wchar_t* ext = end - 4;
  return _wcsnicmp(ext, L".bat", 4) == 0 || _wcsnicmp(ext, L".cmd", 4) == 0;
}

static void inheritable(DWORD which) {
  HANDLE h = GetStdHandle(which);
  if (h != NULL && h != INVALID_HANDLE_VALUE) SetHandleInformation(h, HANDLE_FLAG_INHERIT, HANDLE_FLAG_INHERIT);
}

static ULONGLONG filetime(FILETIME t) { return ((ULONGLONG)t.dwHighDateTime << 32) | t.dwLowDateTime; }

/*
 * `pid`, opened for waiting, only if it is the process that was running when `child_created` (its
 * child's creation time) was taken: a pid reused by a younger process is not that process (its
 * creation time is later). NULL when it is already gone (*gone set) or cannot be opened.
 */
static HANDLE open_older(DWORD pid, ULONGLONG child_created, BOOL* gone, ULONGLONG* created) {
  *gone = FALSE;
  HANDLE h = OpenProcess(SYNCHRONIZE | PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
  if (h == NULL) {
    *gone = GetLastError() == ERROR_INVALID_PARAMETER; /* no such pid */
    return NULL;
  }
  FILETIME c, unused1, unused2, unused3;
  if (!GetProcessTimes(h, &c, &unused1, &unused2, &unused3)) {
    CloseHandle(h);
    return NULL;
  }
  *created = filetime(c);
  if (*created > child_created) {
    CloseHandle(h);
    *gone = TRUE; /* the pid names a process younger than its child: the one meant has exited */
    return NULL;
  }
  if (WaitForSingleObject(h, 0) == WAIT_OBJECT_0) {
    CloseHandle(h);
    *gone = TRUE;
    return NULL;
  }
  return h;
}

static ULONGLONG my_creation_time(void) {
  FILETIME c, unused1, unused2, unused3;
  GetProcessTimes(GetCurrentProcess(), &c, &unused1, &unused2, &unused3);
  return filetime(c);
}

/*
 * This process's ancestors, nearest first, each opened for waiting and checked to be older than
 * its child in the chain: into `out` (at most MAX_ANCESTORS), their count returned. The walk stops
 * at a process it cannot open (another user's, a system process) or one already gone (*gone set:
 * the host is dead already).
 */
static DWORD open_ancestors(HANDLE* out, BOOL* gone) {
  *gone = FALSE;
  HANDLE snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
  if (snap == INVALID_HANDLE_VALUE) return 0;
  DWORD n = 0;
  DWORD pid = GetCurrentProcessId();
  ULONGLONG child_created = my_creation_time();
  while (n < MAX_ANCESTORS) {
    DWORD parent = 0;
    PROCESSENTRY32W e;
    e.dwSize = sizeof e;
    for (BOOL ok = Process32FirstW(snap, &e); ok; ok = Process32NextW(snap, &e)) {
      if (e.th32ProcessID == pid) {
        parent = e.th32ParentProcessID;
        break;
      }
    }
    if (parent == 0 || parent == 4 || parent == pid) break; /* the top, or System */
    ULONGLONG created = 0;
    BOOL ancestor_gone = FALSE;
    HANDLE h = open_older(parent, child_created, &ancestor_gone, &created);
    if (h == NULL) {
      /* Our parent gone before we looked: the host has died already. An ancestor further up that
       * is gone (explorer.exe's parent, long exited) or not ours to open only ends the walk. */
      if (n == 0) *gone = ancestor_gone;
      break;
    }
    out[n++] = h;
    pid = parent;
    child_created = created;
  }
  CloseHandle(snap);
  return n;
}

/*
 * Ends every member of the job and waits until the job lists none: each listed pid is opened and
 * waited for (a member that has already gone cannot be opened, or is signalled). Bounded: about
 * 10 s in all, after which this process exits anyway and its handle's close is the kernel's last
 * word.
 */
static void end_job(HANDLE job, UINT code) {
  TerminateJobObject(job, code);
  DWORD capacity = 64;
  for (int round = 0; round < 100; round++) {
    SIZE_T bytes = sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST) + capacity * sizeof(ULONG_PTR);
    JOBOBJECT_BASIC_PROCESS_ID_LIST* list = (JOBOBJECT_BASIC_PROCESS_ID_LIST*)HeapAlloc(GetProcessHeap(), 0, bytes);
    if (list == NULL) return;
    BOOL ok = QueryInformationJobObject(job, JobObjectBasicProcessIdList, list, (DWORD)bytes, NULL);
    if (!ok && GetLastError() != ERROR_MORE_DATA) {
      HeapFree(GetProcessHeap(), 0, list);
      return;
    }
    if (list->NumberOfAssignedProcesses == 0) {
      HeapFree(GetProcessHeap(), 0, list);
      return;
    }
    if (list->NumberOfAssignedProcesses > list->NumberOfProcessIdsInList) capacity = list->NumberOfAssignedProcesses + 16;
    /* Wait for up to MAXIMUM_WAIT_OBJECTS of the listed members at a time, 100 ms a round. */
    HANDLE waits[MAXIMUM_WAIT_OBJECTS];
    DWORD n = 0;
    for (DWORD i = 0; i < list->NumberOfProcessIdsInList && n < MAXIMUM_WAIT_OBJECTS; i++) {
      HANDLE h = OpenProcess(SYNCHRONIZE, FALSE, (DWORD)list->ProcessIdList[i]);
      if (h != NULL) waits[n++] = h;
    }
    HeapFree(GetProcessHeap(), 0, list);
    if (n > 0) {
      WaitForMultipleObjects(n, waits, TRUE, 100);
      for (DWORD i = 0; i < n; i++) CloseHandle(waits[i]);
    } else {
      Sleep(10); /* listed but not openable: on its way out */
    }
    TerminateJobObject(job, code); /* a member created between the rounds */
  }
}

int main(void) {
  wchar_t* command = after_argv0(GetCommandLineW());
  DWORD host_pid = 0;
  BOOL ancestors = FALSE;
  DWORD close_timeout = 0;
  for (;;) {
    if (command[0] != L'-' || command[1] != L'-') break;
    wchar_t option[32];
    wchar_t value[32];
    command = take_token(command, option, sizeof option / sizeof option[0]);
    if (wcscmp(option, L"--") == 0) break;
    long long v;
    if (wcscmp(option, L"--host") == 0) {
      command = take_token(command, value, sizeof value / sizeof value[0]);
      if (wcscmp(value, L"ancestors") == 0) {
        ancestors = TRUE;
        continue;
      }
      v = parse_number(value, 0xFFFFFFFFLL);
      if (v <= 0) goto usage;
      host_pid = (DWORD)v;
    } else if (wcscmp(option, L"--close-timeout") == 0) {
      command = take_token(command, value, sizeof value / sizeof value[0]);
      v = parse_number(value, 3600000LL);
      if (v < 0) goto usage;
      close_timeout = (DWORD)v;
    } else {
      goto usage;
    }
  }
  if (*command == 0) goto usage;

  if (is_batch_program(command)) {
    fprintf(stderr, "reapkit-job: a .bat/.cmd file runs through cmd.exe, which re-parses its arguments: run it as `cmd.exe /d /s /c \"...\"` with arguments quoted for cmd.exe\n");
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

  /* The stop request, by name: ours alone. One that exists already was made by someone else. */
  wchar_t name[64];
  swprintf(name, sizeof name / sizeof name[0], L"Local\\reapkit-job-stop-%lu", (unsigned long)GetCurrentProcessId());
  HANDLE stop = CreateEventW(NULL, TRUE, FALSE, name);
  if (stop != NULL && GetLastError() == ERROR_ALREADY_EXISTS) {
    CloseHandle(stop);
    stop = NULL; /* killProcessGracefully then terminates this process: the kernel ends the job */
  }
  /* The host(s) to watch: the one named, or every ancestor (the first death is the host's). */
  BOOL host_gone = FALSE;
  HANDLE hosts[MAX_ANCESTORS];
  DWORD host_count = 0;
  if (ancestors) {
    host_count = open_ancestors(hosts, &host_gone);
  } else if (host_pid != 0) {
    ULONGLONG created;
    HANDLE h = open_older(host_pid, my_creation_time(), &host_gone, &created);
    if (h != NULL) hosts[host_count++] = h;
  }

  inheritable(STD_INPUT_HANDLE);
  inheritable(STD_OUTPUT_HANDLE);
  inheritable(STD_ERROR_HANDLE);
  STARTUPINFOEXW six;
  ZeroMemory(&six, sizeof six);
  STARTUPINFOW* si = &six.StartupInfo;
  si->cb = sizeof six;
  si->dwFlags = STARTF_USESTDHANDLES;
  si->hStdInput = GetStdHandle(STD_INPUT_HANDLE);
  si->hStdOutput = GetStdHandle(STD_OUTPUT_HANDLE);
  si->hStdError = GetStdHandle(STD_ERROR_HANDLE);
  /* The C runtime's descriptor table that libuv built for us (fds 3 and up: Node's IPC channel,
   * extra stdio pipes) goes to the command as it came: its handles are inherited already. */
  STARTUPINFOW self;
  GetStartupInfoW(&self);
  if (self.cbReserved2 != 0 && self.lpReserved2 != NULL) {
    si->cbReserved2 = self.cbReserved2;
    si->lpReserved2 = self.lpReserved2;
  }
  /* Windows 10+: the command is created inside the job (no moment outside it, even suspended).
   * Elsewhere (and where the attribute is refused) it is assigned right after its creation, still
   * suspended. */
  DWORD flags = CREATE_SUSPENDED | CREATE_UNICODE_ENVIRONMENT;
  SIZE_T attr_size = 0;
  InitializeProcThreadAttributeList(NULL, 1, 0, &attr_size);
  LPPROC_THREAD_ATTRIBUTE_LIST attrs = attr_size ? (LPPROC_THREAD_ATTRIBUTE_LIST)HeapAlloc(GetProcessHeap(), 0, attr_size) : NULL;
  BOOL in_job = FALSE;
  if (attrs != NULL && InitializeProcThreadAttributeList(attrs, 1, 0, &attr_size)) {
    if (UpdateProcThreadAttribute(attrs, 0, PROC_THREAD_ATTRIBUTE_JOB_LIST, &job, sizeof job, NULL, NULL)) {
      six.lpAttributeList = attrs;
      in_job = TRUE;
    }
  }
  PROCESS_INFORMATION pi;
  ZeroMemory(&pi, sizeof pi);
  BOOL created = CreateProcessW(NULL, buffer, NULL, NULL, TRUE, flags | (in_job ? EXTENDED_STARTUPINFO_PRESENT : 0), NULL,
                                NULL, si, &pi);
  if (!created && in_job) { /* the attribute refused at creation: the older way */
    six.lpAttributeList = NULL;
    in_job = FALSE;
    si->cb = sizeof(STARTUPINFOW);
    created = CreateProcessW(NULL, buffer, NULL, NULL, TRUE, flags, NULL, NULL, si, &pi);
  }
  if (!created) {
    fail("CreateProcess", GetLastError());
    return 127;
  }
  if (!in_job && !AssignProcessToJobObject(job, pi.hProcess)) {
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

  /* Wait: the command [0], the stop request, the host(s). */
  HANDLE waits[2 + MAX_ANCESTORS];
  DWORD n = 0;
  waits[n++] = pi.hProcess;
  if (stop != NULL) waits[n++] = stop;
  DWORD first_host = n;
  for (DWORD i = 0; i < host_count; i++) waits[n++] = hosts[i];
  if (!host_gone) {
    DWORD which = WaitForMultipleObjects(n, waits, FALSE, INFINITE);
    host_gone = which >= WAIT_OBJECT_0 + first_host && which < WAIT_OBJECT_0 + n;
  }
  if (host_gone) {
    /* The host is gone: the command may leave by itself within the close timeout, or be stopped. */
    if (close_timeout > 0) WaitForMultipleObjects(first_host, waits, FALSE, close_timeout);
  }
  end_job(job, 1); /* the command's leftovers, or the whole job on a stop or the host's death */
  WaitForSingleObject(pi.hProcess, 10000);
  DWORD code = 1;
  if (!GetExitCodeProcess(pi.hProcess, &code) || code == STILL_ACTIVE) code = 1;
  ExitProcess(code);

usage:
  fprintf(stderr, "usage: reapkit-job [--host PID|ancestors] [--close-timeout MS] [--] COMMAND [ARGS...]\n");
  return 125;
}
