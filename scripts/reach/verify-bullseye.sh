#!/usr/bin/env bash
# The linux-x64 prebuild in a Debian 11 root (glibc 2.31) under Node 20 from npm: see verify.sh.
exec bash "$(dirname "$0")/verify.sh" x64
