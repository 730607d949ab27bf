#!/usr/bin/env bash
# The linux-arm64 prebuild in an arm64 Debian 11 root under qemu-user, Node 20's arm64 binary from
# npm: see verify.sh.
exec bash "$(dirname "$0")/verify.sh" arm64
