// Node-style system errors for the addon: an Error with `code` ('ESRCH'), negative `errno` (libuv's
// convention, as in errors thrown by Node's own process.kill) and `syscall`. Built without C++
// exceptions: callers set the pending JS exception and return.
#pragma once

#include <napi.h>

namespace reapkit {

// Symbolic name of an errno value ("ESRCH"), or nullptr when this table does not know it.
const char* ErrnoName(int err);

// Creates the error object (does not throw it).
Napi::Error SystemError(Napi::Env env, int err, const char* syscall);

// Sets a pending JS exception of the shape above. Returns undefined so that callers can write
// `return ThrowSystemError(env, errno, "kill");`.
Napi::Value ThrowSystemError(Napi::Env env, int err, const char* syscall);

// Sets a pending TypeError (bad argument shape reaching the binding; the TS layer validates first).
Napi::Value ThrowTypeError(Napi::Env env, const char* message);

// Reads an int32 argument, or sets a TypeError and returns false.
bool ArgInt(const Napi::CallbackInfo& info, size_t index, const char* name, int32_t* out);

}  // namespace reapkit
