/* A minimal macOS-shaped <libproc.h>, for a COMPILE-ONLY check of native/proc_darwin.cc on Linux
 * (test/native-build.test.ts, with -DREAPKIT_FORCE_DARWIN_PROC). It declares only the calls that
 * file uses, with the prototypes of Apple's header (xnu libsyscall/wrappers/libproc/libproc.h); it
 * implements nothing and is never linked or run. */
#pragma once
#include <stdint.h>
#include <sys/proc_info.h>
#ifdef __cplusplus
extern "C" {
#endif
int proc_listallpids(void *buffer, int buffersize);
int proc_pidinfo(int pid, int flavor, uint64_t arg, void *buffer, int buffersize);
int proc_pidfdinfo(int pid, int fd, int flavor, void *buffer, int buffersize);
#ifdef __cplusplus
}
#endif
