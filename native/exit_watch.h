// One interface for "tell me when this process exits", by kernel event and never by polling.
// A backend (exit_watch_pidfd.cc on Linux, exit_watch_kqueue.cc on macOS/BSD) supplies the kernel
// side; exit_watch.cc owns the one background thread per environment that waits on it and hands
// events to JavaScript through a thread-safe function.
#pragma once

#include <cstdint>

namespace reapkit {

struct WatchEntry {
  int pid;
  int fd;  // the backend's own descriptor for this watch (a dup'ed pidfd), or -1
};

struct ExitBackend;  // defined by the backend

// What the thread reports for one exit. `key` is a watch id or a pid (see BackendKeysAreIds).
struct ExitEvent {
  uint64_t key;
  bool status_known;  // code/signal are valid (our own child, read before libuv reaped it)
  int code;           // exit code, or -1 when killed by a signal
  int signal;         // terminating signal, or 0
};

// Called on the JS thread unless said otherwise. Errors are returned as errno values.
int BackendOpen(ExitBackend** out);
void BackendClose(ExitBackend* backend);
// Registers entry under `id`. `handle_fd` is the ProcessHandle's pidfd (or -1); the backend may
// dup it into entry->fd. Returns 0, or an errno (ESRCH: the process is already gone).
int BackendAdd(ExitBackend* backend, uint64_t id, int handle_fd, WatchEntry* entry);
// Deregisters and releases entry->fd. `pid_still_watched`: another watch covers the same pid.
void BackendRemove(ExitBackend* backend, uint64_t id, WatchEntry* entry, bool pid_still_watched);
// The keys that BackendWait reports are watch ids (true) or pids (false).
bool BackendKeysAreIds();

// Background thread only: blocks until at least one watched process exits or BackendWake is called.
// Stores up to `max` events and returns their count (0 after a wake-up), or -errno. Where it can,
// it reads the exit status of our own children here, at once, without reaping them (libuv still
// reaps them), because by the time JS runs libuv may have reaped the child and the status is gone.
int BackendWait(ExitBackend* backend, ExitEvent* events, int max);
// Any thread: makes a blocked BackendWait return.
void BackendWake(ExitBackend* backend);

}  // namespace reapkit
