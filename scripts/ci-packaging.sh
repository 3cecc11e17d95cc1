#!/usr/bin/env bash
# The packaging part of CI: all eight targets built with zig (pinned in .venv-build), so the
# binary checks of 40-packaging run on every one; the host build checked byte-for-byte
# against a rebuild at another path (the release workflow checks all eight); the four Linux
# builds run under their own Node (arm64 under qemu, musl through musl's loader); and the
# codec's and the VFS's Rust unit tests on arm64 under qemu (the ARMv8 AES passes).
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/build-targets.js --targets all
node scripts/check-reproducible.js --targets host --against-packaged
node scripts/test-targets.js --targets linux-x64-gnu,linux-arm64-gnu,linux-x64-musl,linux-arm64-musl
node scripts/test-targets.js --rust-tests
