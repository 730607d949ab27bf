// One interface for "tell me when this process exits", by kernel event and never by polling.
// A backend (exit_watch_pidfd.cc on Linux, exit_watch_kqueue.cc on macOS/BSD) supplies the kernel
// side; exit_watch.cc owns the one background thread per environment that waits on it, the tables
// that map a kernel event to the watches it settles, and the hand-off to JavaScript.
//
// The unit the kernel knows is a *registration*: one per watched process, whatever the number of
// watches on it (a pidfd in epoll, or a kqueue knote). Watches of one process share it, refcounted.
#pragma once

#include <cstdint>

namespace reapkit {

struct ExitBackend;  // defined by the backend

// What the thread reports for one exit. `key` is a registration id or a pid (see BackendKeysAreIds).
struct ExitEvent {
  uint64_t key;
  bool status_known;  // code/signal are valid (our own child, read before libuv reaped it)
  int code;           // exit code, or -1 when killed by a signal
  int signal;         // terminating signal, or 0
};

// Called on the JS thread unless said otherwise. Errors are returned as errno values.
int BackendOpen(ExitBackend** out);
void BackendClose(ExitBackend* backend);
// Registers process `pid` under registration id `reg` (32 bits, never 0). `handle_fd` is a
// ProcessHandle's pidfd to pin the process with, or -1 to open one for `pid`. Stores the
// backend's own descriptor (or -1) in *fd. Returns 0, or an errno (ESRCH: the process is gone).
int BackendAdd(ExitBackend* backend, uint32_t reg, int pid, int handle_fd, int* fd);
// Deregisters and releases what BackendAdd made.
void BackendRemove(ExitBackend* backend, uint32_t reg, int pid, int fd);
// Whether a new watch of `pid` (pinned by `handle_fd`, or -1) may share the registration (`pid`,
// `fd`) already made for that pid: true only when both name the same, still running process.
bool BackendSameLiveProcess(int pid, int fd, int handle_fd);
// The keys that BackendWait reports are registration ids (true) or pids (false).
bool BackendKeysAreIds();

// Background thread only: blocks until at least one watched process exits or BackendWake is called.
// Stores up to `max` events and returns their count (0 after a wake-up), or -errno. Where it can,
// it reads the exit status of our own children here, at once, without reaping them (libuv still
// reaps them), because by the time JS runs libuv may have reaped the child and the status is gone.
int BackendWait(ExitBackend* backend, ExitEvent* events, int max);
// Any thread: makes a blocked BackendWait return.
void BackendWake(ExitBackend* backend);

}  // namespace reapkit
