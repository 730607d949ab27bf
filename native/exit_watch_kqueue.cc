// macOS / BSD exit-watch backend: kqueue EVFILT_PROC + NOTE_EXIT, which reports the exit of any
// process we may see, child or not. kqueue keys a knote by (pid, filter), so a pid has one knote and
// one registration: the thread reports pids and the common layer maps them to that registration.
// A pipe registered for EVFILT_READ wakes the thread (portable to compatibility libraries that
// lack EVFILT_USER).
//
// Known limit: kqueue names processes by pid. If a watched process exits, is reaped and its pid is
// reused by a new process between the kernel's event and JS handling it, a watch of the new
// process added in that window is resolved by the old exit. Linux pidfds have no such window.
#include "reapkit.h"

#if REAPKIT_EXIT_WATCH_KQUEUE

#include <fcntl.h>
#include <sys/event.h>
#include <sys/time.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>

#include "exit_watch.h"

namespace reapkit {

struct ExitBackend {
  int kq = -1;
  int wake[2] = {-1, -1};
};

static void CloseAll(ExitBackend* b) {
  if (b->kq >= 0) close(b->kq);
  if (b->wake[0] >= 0) close(b->wake[0]);
  if (b->wake[1] >= 0) close(b->wake[1]);
}

int BackendOpen(ExitBackend** out) {
  auto* b = new ExitBackend();
  b->kq = kqueue();
  if (b->kq < 0 || pipe(b->wake) < 0) {
    int err = errno;
    CloseAll(b);
    delete b;
    return err;
  }
  for (int fd : {b->kq, b->wake[0], b->wake[1]}) fcntl(fd, F_SETFD, FD_CLOEXEC);
  fcntl(b->wake[0], F_SETFL, O_NONBLOCK);
  fcntl(b->wake[1], F_SETFL, O_NONBLOCK);
  struct kevent ev;
  EV_SET(&ev, b->wake[0], EVFILT_READ, EV_ADD, 0, 0, 0);  // udata 0: intptr_t on older NetBSD
  if (kevent(b->kq, &ev, 1, nullptr, 0, nullptr) < 0) {
    int err = errno;
    CloseAll(b);
    delete b;
    return err;
  }
  *out = b;
  return 0;
}

void BackendClose(ExitBackend* b) {
  if (b == nullptr) return;
  CloseAll(b);
  delete b;
}

int BackendAdd(ExitBackend* b, uint32_t, int pid, int, int* fd) {
  struct kevent ev;
  EV_SET(&ev, (uintptr_t)pid, EVFILT_PROC, EV_ADD | EV_ONESHOT, NOTE_EXIT, 0, 0);
  if (kevent(b->kq, &ev, 1, nullptr, 0, nullptr) < 0) return errno;  // ESRCH: already gone
  *fd = -1;
  return 0;
}

void BackendRemove(ExitBackend* b, uint32_t, int pid, int) {
  struct kevent ev;
  EV_SET(&ev, (uintptr_t)pid, EVFILT_PROC, EV_DELETE, 0, 0, 0);
  kevent(b->kq, &ev, 1, nullptr, 0, nullptr);  // ENOENT after the exit fired: nothing to undo
}

// One knote per pid: a second registration of the same pid would replace the first one's knote.
bool BackendSameLiveProcess(int, int, int) { return true; }

bool BackendKeysAreIds() { return false; }

// NOTE_EXITSTATUS exists only for our own children on macOS, and the data field is meaningless
// otherwise, so the status stays unknown here; the TS layer gets the status of its children from
// the ChildProcess instead.
int BackendWait(ExitBackend* b, ExitEvent* out, int max) {
  struct kevent events[512];
  if (max > 512) max = 512;
  for (;;) {
    int n = kevent(b->kq, nullptr, 0, events, max, nullptr);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    int count = 0;
    for (int i = 0; i < n; i++) {
      if (events[i].filter == EVFILT_READ) {
        char drain[64];
        while (read(b->wake[0], drain, sizeof drain) > 0) {
        }
        continue;
      }
      // EV_EOF also marks a process knote whose process is gone.
      if (events[i].filter == EVFILT_PROC && ((events[i].fflags & NOTE_EXIT) || (events[i].flags & EV_EOF))) {
        ExitEvent& event = out[count++];
        event.key = (uint64_t)events[i].ident;
        event.status_known = false;
        event.code = -1;
        event.signal = 0;
      }
    }
    return count;
  }
}

void BackendWake(ExitBackend* b) {
  char one = 1;
  ssize_t ignored = write(b->wake[1], &one, 1);
  (void)ignored;
}

}  // namespace reapkit

#endif  // REAPKIT_EXIT_WATCH_KQUEUE
