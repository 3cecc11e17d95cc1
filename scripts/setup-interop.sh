#!/usr/bin/env bash
# Installs the real engines the interop tests (__test__/55-encryption-interop.test.js)
# compare cipherlite with, into a local virtualenv `.venv-interop/` (git-ignored):
#   - SQLCipher 4.12.0 community  (PyPI sqlcipher3-binary 0.6.0)
#   - SQLite3 Multiple Ciphers 2.6.1 / SQLite 3.54.0  (PyPI apsw-sqlite3mc 3.54.0.0)
# Idempotent: when the venv already has exactly these versions it only checks them.
# Usage: bash scripts/setup-interop.sh   (from anywhere; CIPHERLITE_INTEROP_VENV overrides the path)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${CIPHERLITE_INTEROP_VENV:-$ROOT/.venv-interop}"
PINS=(sqlcipher3-binary==0.6.0 apsw-sqlite3mc==3.54.0.0)
STAMP="$VENV/.cipherlite-interop-pins"
WANT="${PINS[*]}"

check() {
	"$VENV/bin/python" - <<'PY'
import sqlcipher3, apsw
c = sqlcipher3.connect(":memory:")
v = c.execute("PRAGMA cipher_version").fetchone()[0]
assert v.startswith("4."), v
mc = apsw.Connection(":memory:").execute("SELECT sqlite3mc_version()").fetchone()[0]
assert mc.startswith("SQLite3 Multiple Ciphers"), mc
print("interop engines: SQLCipher", v, "|", mc, "(apsw", apsw.apsw_version() + ")")
PY
}

if [ -x "$VENV/bin/python" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ] && check; then
	exit 0
fi

if [ ! -x "$VENV/bin/python" ]; then
	python3 -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-input --quiet --retries 2 --timeout 30 "${PINS[@]}"
check
printf '%s' "$WANT" > "$STAMP"
