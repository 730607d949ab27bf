// The addon's background threads (the exit watcher, the stdin watch): started with every signal
// blocked, so they never take a signal meant for Node's own handlers (SIGCHLD, SIGTERM run on the
// loop; a thread inherits the mask it is created with), and named so they show in /proc and ps.
#pragma once

#include <pthread.h>
#include <signal.h>

namespace reapkit {

// Creates the thread with all signals blocked in it; the caller's mask is left as it was. Returns
// pthread_create's result (0 or an errno).
inline int CreateQuietThread(pthread_t* thread, void* (*main)(void*), void* arg) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = pthread_create(thread, nullptr, main, arg);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return rc;
}

// Names the calling thread (up to 15 characters on Linux).
inline void NameThisThread(const char* name) {
#if defined(__APPLE__)
  pthread_setname_np(name);
#elif defined(__linux__)
  pthread_setname_np(pthread_self(), name);
#else
  (void)name;
#endif
}

}  // namespace reapkit
