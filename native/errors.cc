#include "errors.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

namespace reapkit {

const char* ErrnoName(int err) {
  switch (err) {
#define REAPKIT_ERRNO(name) \
  case name:                \
    return #name;
    REAPKIT_ERRNO(EPERM)
    REAPKIT_ERRNO(ENOENT)
    REAPKIT_ERRNO(ESRCH)
    REAPKIT_ERRNO(EINTR)
    REAPKIT_ERRNO(EIO)
    REAPKIT_ERRNO(EBADF)
    REAPKIT_ERRNO(ECHILD)
    REAPKIT_ERRNO(EAGAIN)
    REAPKIT_ERRNO(ENOMEM)
    REAPKIT_ERRNO(EACCES)
    REAPKIT_ERRNO(EFAULT)
    REAPKIT_ERRNO(EBUSY)
    REAPKIT_ERRNO(EEXIST)
    REAPKIT_ERRNO(ENODEV)
    REAPKIT_ERRNO(EINVAL)
    REAPKIT_ERRNO(ENFILE)
    REAPKIT_ERRNO(EMFILE)
    REAPKIT_ERRNO(ENOSPC)
    REAPKIT_ERRNO(ERANGE)
    REAPKIT_ERRNO(ENOSYS)
    REAPKIT_ERRNO(ETIMEDOUT)
    // peerCredentials' (getsockopt, getpeereid): a descriptor that is no socket, or not connected.
    REAPKIT_ERRNO(ENOTSOCK)
    REAPKIT_ERRNO(ENOTCONN)
    REAPKIT_ERRNO(ENOPROTOOPT)
#if defined(ENODATA)
    REAPKIT_ERRNO(ENODATA)
#endif
#if defined(ENOTSUP)
    REAPKIT_ERRNO(ENOTSUP)
#endif
#if defined(EOPNOTSUPP) && (!defined(ENOTSUP) || EOPNOTSUPP != ENOTSUP)
    REAPKIT_ERRNO(EOPNOTSUPP)
#endif
#undef REAPKIT_ERRNO
    default:
      return nullptr;
  }
}

Napi::Error SystemError(Napi::Env env, int err, const char* syscall) {
  const char* name = ErrnoName(err);
  char fallback[32];
  if (name == nullptr) {
    std::snprintf(fallback, sizeof fallback, "E%d", err);
    name = fallback;
  }
  // Same message shape as Node's own `process.kill(…)` errors: "kill ESRCH".
  std::string message = std::string(syscall) + " " + name + " (" + std::strerror(err) + ")";
  Napi::Error error = Napi::Error::New(env, message);
  Napi::Object obj = error.Value();
  obj.Set("code", Napi::String::New(env, name));
  obj.Set("errno", Napi::Number::New(env, -err));
  obj.Set("syscall", Napi::String::New(env, syscall));
  return error;
}

Napi::Value ThrowSystemError(Napi::Env env, int err, const char* syscall) {
  SystemError(env, err, syscall).ThrowAsJavaScriptException();
  return env.Undefined();
}

Napi::Value ThrowTypeError(Napi::Env env, const char* message) {
  Napi::TypeError::New(env, message).ThrowAsJavaScriptException();
  return env.Undefined();
}

bool ArgInt(const Napi::CallbackInfo& info, size_t index, const char* name, int32_t* out) {
  if (info.Length() <= index || !info[index].IsNumber()) {
    std::string message = std::string(name) + " must be a number";
    ThrowTypeError(info.Env(), message.c_str());
    return false;
  }
  *out = info[index].As<Napi::Number>().Int32Value();
  return true;
}

}  // namespace reapkit
