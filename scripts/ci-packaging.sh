#!/usr/bin/env bash
# The packaging slice of CI: the host target and two others built with zig (pinned in
# .venv-build), the host build checked byte-for-byte against a rebuild at another path,
# and the Linux builds run under their own Node (arm64 under qemu, musl through musl's
# loader). The release workflow builds and checks all six.
set -euo pipefail
cd "$(dirname "$0")/.."
node scripts/build-targets.js --targets host,linux-arm64-gnu,linux-x64-musl
node scripts/check-reproducible.js --targets host --against-packaged
node scripts/test-targets.js --targets linux-x64-gnu,linux-arm64-gnu,linux-x64-musl
node scripts/run-tests.js 40-packaging
