// peerCredentials(fd): who is at the other end of a connected Unix socket, as the kernel recorded
// it at connect() time (Linux SO_PEERCRED; getpeereid() on macOS and the BSDs). The Supervisor's
// control socket (lib/policies/supervisor/control.ts) serves its own user only: the socket file's
// mode keeps others from connecting, and this check refuses anyone else who connected some other
// way (a folder or a socket mode loosened after the socket was made). It names who called
// connect(), not who holds the descriptor now: a connection made by this user and then passed on
// (SCM_RIGHTS, fork, a setuid drop) still reads as this user's. The check is on the connecting
// process, so only what this user connects and hands over can reach it that way.
//
// Returns { uid, gid, pid } (pid -1 where the platform does not tell it), or throws a system error.
#include <napi.h>

#include "errors.h"
#include "reapkit.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

namespace reapkit {

static Napi::Value PeerCredentials(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int32_t fd;
  if (!ArgInt(info, 0, "fd", &fd)) return env.Undefined();
  Napi::Object out = Napi::Object::New(env);
#ifdef __linux__
  struct ucred cred;
  socklen_t len = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return ThrowSystemError(env, errno, "getsockopt");
  out.Set("uid", Napi::Number::New(env, cred.uid));
  out.Set("gid", Napi::Number::New(env, cred.gid));
  out.Set("pid", Napi::Number::New(env, cred.pid));
#else
  uid_t uid;
  gid_t gid;
  if (getpeereid(fd, &uid, &gid) != 0) return ThrowSystemError(env, errno, "getpeereid");
  out.Set("uid", Napi::Number::New(env, uid));
  out.Set("gid", Napi::Number::New(env, gid));
  out.Set("pid", Napi::Number::New(env, -1));
#endif
  return out;
}

void InitPeerCred(Napi::Env env, Napi::Object exports) {
  exports.Set("peerCredentials", Napi::Function::New(env, PeerCredentials, "peerCredentials"));
}

}  // namespace reapkit
