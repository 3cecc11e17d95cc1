"""Runs jobs against real encryption engines for 55-encryption-interop.test.js.

Engines (installed by scripts/setup-interop.sh into .venv-interop/):
  sqlcipher  - SQLCipher 4.12.0 community (PyPI sqlcipher3-binary 0.6.0)
  mc0 / mc4  - SQLite3 Multiple Ciphers 2.6.1 (PyPI apsw-sqlite3mc 3.54.0.0) with
               PRAGMA cipher='sqlcipher' and legacy=0 (its default) / legacy=4
  aegis      - the same SQLite3MC with PRAGMA cipher='aegis' (algorithm aegis-256, its
               default; 88-aegis.test.js); "cache_size" (optional) is set after the key;
               "algorithm", "tcost", "mcost", "pcost" (optional) are its PRAGMAs, set
               before the key (88b-aegis-algorithms.test.js); "key" (optional, hex) the
               job's own raw key (an AEGIS-128 algorithm's is 16 bytes)

stdin: {"key": "<64 hex>", "jobs": [job, ...], "exit_without_closing": bool}
job:   {"id": str, "engine": "sqlcipher"|"mc0"|"mc4"|"aegis", "file": path,
        "passphrase": str, "page_size": int, "kdf_iter": int   (optional: SQLCipher's
                                      PRAGMA key = 'passphrase', cipher_page_size, kdf_iter;
                                      SQLite3MC's legacy_page_size, kdf_iter)
        "exec": [sql, ...]            statements run one by one (autocommit), then
        "queries": {name: sql},       each query's rows (lists), then
        "keep_open": bool}            leave the connection open (with exit_without_closing:
                                      the process ends without closing it, like a crash)
stdout: {"engines": {...}, "results": {id: {"ok": true, "rows": {name: rows}} |
                                            {"ok": false, "error": "<message>"}}}
"""
import json
import os
import sys

import apsw
import sqlcipher3


def key_pragma(key_hex, job):
    """PRAGMA key for the job: its passphrase if it has one, else the raw key."""
    if job.get("passphrase") is not None:
        return "PRAGMA key = '%s'" % job["passphrase"].replace("'", "''")
    return "PRAGMA key = \"x'%s'\"" % key_hex


def open_sqlcipher(path, key_hex, job=None):
    job = job or {}
    conn = sqlcipher3.connect(path, isolation_level=None)
    conn.execute(key_pragma(key_hex, job))
    if job.get("page_size"):
        conn.execute("PRAGMA cipher_page_size = %d" % job["page_size"])
    if job.get("kdf_iter"):
        conn.execute("PRAGMA kdf_iter = %d" % job["kdf_iter"])

    def run(sql):
        return [list(r) for r in conn.execute(sql).fetchall()]

    return conn, run


def open_mc(path, key_hex, legacy, job=None):
    job = job or {}
    conn = apsw.Connection(path)
    conn.execute("PRAGMA cipher = 'sqlcipher'")
    conn.execute("PRAGMA legacy = %d" % legacy)
    if job.get("page_size") and legacy != 0:
        conn.execute("PRAGMA legacy_page_size = %d" % job["page_size"])
    if job.get("kdf_iter"):
        conn.execute("PRAGMA kdf_iter = %d" % job["kdf_iter"])
    conn.execute(key_pragma(key_hex, job))
    if job.get("page_size") and legacy == 0:
        # Outside legacy mode the page size is SQLite's own (a new database's).
        conn.execute("PRAGMA page_size = %d" % job["page_size"])

    def run(sql):
        return [list(r) for r in conn.execute(sql).fetchall()]

    return conn, run


def open_mc_aegis(path, key_hex, job):
    conn = apsw.Connection(path)
    conn.execute("PRAGMA cipher = 'aegis'")
    if job.get("algorithm"):
        conn.execute("PRAGMA algorithm = '%s'" % job["algorithm"])
    for cost in ("tcost", "mcost", "pcost"):
        if job.get(cost):
            conn.execute("PRAGMA %s = %d" % (cost, job[cost]))
    conn.execute(key_pragma(job.get("key") or key_hex, job))
    if job.get("cache_size"):
        conn.execute("PRAGMA cache_size = %d" % job["cache_size"])

    def run(sql):
        return [list(r) for r in conn.execute(sql).fetchall()]

    return conn, run


def jsonable(v):
    if isinstance(v, (bytes, bytearray, memoryview)):
        return {"blob": bytes(v).hex()}
    return v


def main():
    req = json.load(sys.stdin)
    key = req["key"]
    kept = []
    results = {}
    for job in req["jobs"]:
        conn = None
        try:
            if job["engine"] == "sqlcipher":
                conn, run = open_sqlcipher(job["file"], key, job)
            elif job["engine"] == "aegis":
                conn, run = open_mc_aegis(job["file"], key, job)
            else:
                conn, run = open_mc(job["file"], key, 0 if job["engine"] == "mc0" else 4, job)
            for sql in job.get("exec", []):
                run(sql)
            rows = {}
            for name, sql in job.get("queries", {}).items():
                rows[name] = [[jsonable(v) for v in r] for r in run(sql)]
            results[job["id"]] = {"ok": True, "rows": rows}
        except Exception as e:  # an engine refusing a file is a result, not a failure
            results[job["id"]] = {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        finally:
            if conn is not None:
                if job.get("keep_open") and results[job["id"]]["ok"]:
                    kept.append(conn)
                else:
                    conn.close()
    mc = apsw.Connection(":memory:").execute("SELECT sqlite3mc_version()").fetchone()[0]
    sc = sqlcipher3.connect(":memory:").execute("PRAGMA cipher_version").fetchone()[0]
    sys.stdout.write(json.dumps({"engines": {"sqlcipher": sc, "sqlite3mc": mc}, "results": results}))
    sys.stdout.flush()
    if req.get("exit_without_closing"):
        os._exit(0)  # like a crash: open connections are not closed, WALs stay
    for conn in kept:
        conn.close()


if __name__ == "__main__":
    main()
