// Linux exit-watch backend: each watched process is one pidfd in one epoll set (dup'ed from a
// ProcessHandle, or opened for a bare pid), however many watches share it. A pidfd polls readable
// once the process has exited (zombie or reaped). EPOLLONESHOT keeps an exited process from waking
// the thread again before JS has removed it.
//
// The epoll data of a registration packs (id << 32 | pidfd), so the thread can read the exit status
// from the pidfd without a table shared with the JS thread. If JS removes a registration (closing
// its pidfd) while the thread is looking at its event, the descriptor number may already belong to
// another one: the status read is then attributed to the removed id, which JS no longer knows, and
// is dropped. A live registration's pidfd is never closed before its event is delivered.
#include "reapkit.h"

#if REAPKIT_EXIT_WATCH_PIDFD

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "exit_watch.h"

#ifndef P_PIDFD
#define P_PIDFD 3
#endif

namespace reapkit {

static const uint64_t kWakeKey = 0;  // registration ids start at 1
static const int kMaxEvents = 512;

static uint64_t Pack(uint64_t id, int fd) { return (id << 32) | (uint32_t)fd; }

struct ExitBackend {
  int epfd = -1;
  int wakefd = -1;
};

int BackendOpen(ExitBackend** out) {
  auto* b = new ExitBackend();
  b->epfd = epoll_create1(EPOLL_CLOEXEC);
  if (b->epfd < 0) {
    int err = errno;
    delete b;
    return err;
  }
  b->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (b->wakefd < 0) {
    int err = errno;
    close(b->epfd);
    delete b;
    return err;
  }
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kWakeKey;
  if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, b->wakefd, &ev) < 0) {
    int err = errno;
    close(b->wakefd);
    close(b->epfd);
    delete b;
    return err;
  }
  *out = b;
  return 0;
}

void BackendClose(ExitBackend* b) {
  if (b == nullptr) return;
  if (b->wakefd >= 0) close(b->wakefd);
  if (b->epfd >= 0) close(b->epfd);
  delete b;
}

int BackendAdd(ExitBackend* b, uint32_t reg, int pid, int handle_fd, int* out_fd) {
  int fd = handle_fd >= 0 ? fcntl(handle_fd, F_DUPFD_CLOEXEC, 3) : PidfdOpen(pid);
  if (fd < 0) return errno;
  if (handle_fd < 0) fcntl(fd, F_SETFD, FD_CLOEXEC);  // pidfd_open sets it already; be explicit
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLONESHOT;
  ev.data.u64 = Pack(reg, fd);
  if (epoll_ctl(b->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
    int err = errno;
    close(fd);
    return err;
  }
  *out_fd = fd;
  return 0;
}

void BackendRemove(ExitBackend* b, uint32_t, int, int fd) {
  if (fd < 0) return;
  epoll_ctl(b->epfd, EPOLL_CTL_DEL, fd, nullptr);
  close(fd);
}

// A pidfd is readable once its process has exited. Both descriptors unreadable at once means both
// processes were running with the same pid at that moment: they are the same process. (The
// registration's process ran since before the handle's check, so no recycling fits in between.)
bool BackendSameLiveProcess(int, int fd, int handle_fd) {
  pollfd fds[2] = {{fd, POLLIN, 0}, {handle_fd, POLLIN, 0}};
  int n = poll(fds, handle_fd >= 0 ? 2 : 1, 0);
  return n == 0;
}

// Exit status of our own child, read without reaping it. Fails (ECHILD) for processes that are not
// our children, and for children libuv has already reaped: the status is then unknown here.
static bool ReadStatus(int pidfd, ExitEvent* event) {
  siginfo_t info{};
  if (waitid((idtype_t)P_PIDFD, (id_t)pidfd, &info, WEXITED | WNOWAIT | WNOHANG) < 0) return false;
  if (info.si_pid == 0) return false;
  if (info.si_code == CLD_EXITED) {
    event->code = info.si_status;
    event->signal = 0;
  } else {
    event->code = -1;
    event->signal = info.si_status;
  }
  return true;
}

bool BackendKeysAreIds() { return true; }

int BackendWait(ExitBackend* b, ExitEvent* out, int max) {
  epoll_event events[kMaxEvents];
  if (max > kMaxEvents) max = kMaxEvents;
  for (;;) {
    int n = epoll_wait(b->epfd, events, max, -1);
    if (n < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    int count = 0;
    for (int i = 0; i < n; i++) {
      if (events[i].data.u64 == kWakeKey) {
        uint64_t drain;
        while (read(b->wakefd, &drain, sizeof drain) > 0) {
        }
        continue;
      }
      ExitEvent& event = out[count++];
      event.key = events[i].data.u64 >> 32;
      event.code = -1;
      event.signal = 0;
      event.status_known = ReadStatus((int)(uint32_t)events[i].data.u64, &event);
    }
    return count;
  }
}

void BackendWake(ExitBackend* b) {
  uint64_t one = 1;
  ssize_t ignored = write(b->wakefd, &one, sizeof one);
  (void)ignored;
}

}  // namespace reapkit

#endif  // REAPKIT_EXIT_WATCH_PIDFD
