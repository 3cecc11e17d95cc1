//! The native `Database` class: converts the constructor's arguments and opens through
//! `connection_policy`, and the methods on the connection itself (`prepare`, `exec`,
//! `close`, modes, `verbose`). The state it shares with its statements and the rules on
//! it are in `state.rs`.

use super::{
    db_shared::{DbParts, DbShared},
    instance::Instance,
    js::{self, arraybuffer_info, check, new_reference, type_error, JsAny, JsResult, Thrown},
    results::HEADER_BYTES,
    statement::NativeStatement,
};
use cipherlite_core::connection_policy::{self as policy, OpenRequest, Source};
use cipherlite_core::key_lifecycle::CipherScheme;
use cipherlite_sqlite::{self as sqlite, OpenFlags};
use napi::{sys, Env};
use napi_derive::napi;
use std::{ptr, rc::Rc};
use zeroize::Zeroizing;

#[napi]
pub struct Database {
    pub(crate) shared: Rc<DbShared>,
    /// Id in the module instance's registry, for the raw hot paths (`raw_entry_points.rs`).
    id: u32,
    /// The module instance this database belongs to (its registries).
    instance: Rc<Instance>,
}

impl Drop for Database {
    fn drop(&mut self) {
        self.instance.databases.remove(self.id);
    }
}

/// The options the JS layer has already validated.
#[napi(object)]
pub struct OpenOptions {
    pub filename: String,
    pub readonly: bool,
    pub file_must_exist: bool,
    pub timeout: u32,
    /// `'sqlite3mc'` (default) or `'sqlcipher'`: the page 1 a new encrypted file gets.
    pub cipher_layout: Option<String>,
    /// `'sqlcipher'` (default) or `'aegis'`: the page format of an encrypted file.
    pub cipher: Option<String>,
    /// With `cipher: 'aegis'`: its algorithm (SQLite3MC's `PRAGMA algorithm`, `'aegis-256'`
    /// by default).
    pub algorithm: Option<String>,
    /// With `cipher: 'aegis'` and a passphrase: Argon2id's iterations, memory (KiB) and
    /// parallelism (SQLite3MC's `tcost`, `mcost`, `pcost`; its defaults when not given).
    pub tcost: Option<u32>,
    pub mcost: Option<u32>,
    pub pcost: Option<u32>,
    /// `new Database(fd, { journalFd })` (better-sqlite3 13.2): open from these
    /// descriptors instead of `filename` (`crates/vfs/src/fd/`).
    pub database_fd: Option<i32>,
    pub journal_fd: Option<i32>,
    /// The page size of an encrypted database (SQLCipher's `cipher_page_size`); 4096 when
    /// not given.
    pub page_size: Option<u32>,
    /// PBKDF2 iterations of a passphrase's key derivation (SQLCipher's `kdf_iter`).
    pub kdf_iterations: Option<u32>,
    /// Roll back a hot journal SQLite3 Multiple Ciphers left (checksums over the plaintext).
    pub accept_plaintext_journal_checksums: Option<bool>,
}

#[napi]
impl Database {
    /// `new Database(options, sqliteErrorClass, scratchArrayBuffer, serializedBuffer | null)`.
    #[napi(constructor, catch_unwind)]
    pub fn new(
        env: Env,
        options: OpenOptions,
        sqlite_error_class: JsAny,
        scratch: JsAny,
        serialized: JsAny,
        key: JsAny,
        passphrase: JsAny,
    ) -> napi::Result<Self> {
        let raw_env = env.raw();
        let error_class = new_reference(raw_env, sqlite_error_class.0)
            .map_err(|e| js::throw(raw_env, ptr::null_mut(), e))?;
        let fail = |e: Thrown| js::throw(raw_env, error_class, e);
        let open = || -> JsResult<(Rc<Instance>, Rc<DbShared>)> {
            let instance = Instance::of(raw_env)
                .ok_or_else(|| Thrown::Error("cipherlite: the addon was not initialised".into()))?;
            let (data, len) = arraybuffer_info(raw_env, scratch.0)?;
            if len < HEADER_BYTES || !(data as usize).is_multiple_of(8) {
                return type_error("invalid scratch buffer");
            }
            let flags = OpenFlags {
                readonly: options.readonly,
                must_exist: options.file_must_exist,
                uri: false,
            };
            let cipher =
                policy::scheme_named(options.cipher.as_deref(), options.algorithm.as_deref())
                    .unwrap_or_default();
            let key = read_key(raw_env, key.0, cipher)?;
            let defaults = policy::Argon2Costs::default();
            let argon2 = policy::Argon2Costs {
                t_cost: options.tcost.unwrap_or(defaults.t_cost),
                m_cost: options.mcost.unwrap_or(defaults.m_cost),
                p_cost: options.pcost.unwrap_or(defaults.p_cost),
            };
            let passphrase = read_passphrase(raw_env, passphrase.0)?;
            let source = match options.database_fd {
                Some(database) => Source::Descriptors {
                    database,
                    journal: options.journal_fd,
                },
                None => Source::Path,
            };
            let opened = policy::open(&OpenRequest {
                filename: &options.filename,
                flags,
                source,
                key: key.as_deref(),
                passphrase: passphrase.as_deref().map(Vec::as_slice),
                kdf_iterations: options.kdf_iterations,
                argon2,
                page_size: options.page_size,
                layout: policy::layout_named(options.cipher_layout.as_deref())
                    .unwrap_or(policy::CipherLayout::Sqlite3mc),
                cipher,
                busy_timeout: options.timeout,
                plaintext_journal_checksums: options
                    .accept_plaintext_journal_checksums
                    .unwrap_or(false),
            })?;
            // SAFETY: serialized is a value of this call.
            if let Some(bytes) = unsafe { js::array_buffer_view(raw_env, serialized.0) } {
                policy::deserialize(&opened.conn, bytes, options.readonly)?;
            }
            // References last: nothing can fail after them (no leak on a failed open).
            let object_prototype = object_prototype(raw_env)?;
            let scratch_ref = match new_reference(raw_env, scratch.0) {
                Ok(r) => r,
                Err(e) => {
                    // SAFETY: created just above, deleted once.
                    unsafe { sys::napi_delete_reference(raw_env, object_prototype) };
                    return Err(e);
                }
            };
            let lifecycle = instance.lifecycle.clone();
            Ok((
                instance,
                DbShared::new(DbParts {
                    env: raw_env,
                    lifecycle,
                    opened,
                    key,
                    scratch: (scratch_ref, data, len),
                    sqlite_error_class: error_class,
                    object_prototype,
                }),
            ))
        };
        let opened = open();
        // The key passed through this call's callees (the JS bytes' copy, the VFS box, the
        // codec's key schedule): wipe what they left on the stack.
        policy::scrub_key_residue();
        match opened {
            Ok((instance, shared)) => {
                instance.track_open_database(&shared);
                let id = instance.databases.register(&shared);
                Ok(Database {
                    shared,
                    id,
                    instance,
                })
            }
            Err(e) => {
                let err = fail(e);
                // SAFETY: the reference was created above and is not used again.
                unsafe { sys::napi_delete_reference(raw_env, error_class) };
                Err(err)
            }
        }
    }

    #[napi(catch_unwind)]
    pub fn prepare(&self, sql: String, pragma: bool) -> napi::Result<NativeStatement> {
        let db = &self.shared;
        let run = || -> JsResult<NativeStatement> {
            db.require_open()?;
            db.require_not_busy()?;
            if pragma {
                db.require_no_iterators_unless_unsafe()?;
            }
            // Preparing can run user code (a virtual table's factory on connect): busy.
            let busy = db.busy_guard();
            let prepared = db.with_conn(|c| Ok(c.prepare(&sql, !pragma)?));
            drop(busy);
            let (stmt, tail) = prepared?;
            let Some(mut stmt) = stmt else {
                return js::range_error("The supplied SQL string contains no statements");
            };
            if !sqlite::is_blank_sql_tail(&sql.as_bytes()[tail..]) {
                stmt.finalize();
                return js::range_error("The supplied SQL string contains more than one statement");
            }
            Ok(NativeStatement::new(
                &self.instance.statements,
                db.clone(),
                stmt,
                pragma,
            ))
        };
        run().map_err(|e| db.throw(e))
    }

    /// Returns `undefined`, or `null` when the environment stopped (a worker terminated
    /// while a user function ran): then nothing can be thrown, and the JS layer throws.
    #[napi(catch_unwind)]
    pub fn exec(&self, sql: String) -> napi::Result<JsAny> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_open()?;
            db.require_not_busy()?;
            db.require_no_iterators_unless_unsafe()?;
            db.clear_stale_exception();
            let busy = db.busy_guard();
            let result = db.with_conn(|c| {
                c.exec_each_then(
                    &sql,
                    |stmt| db.log(stmt).map_err(|_| sqlite::ExecAbort::Caller),
                    || db.after_statement(),
                )
                .map_err(|e| match e {
                    sqlite::ExecAbort::Sqlite(e) => Thrown::Sqlite(e),
                    sqlite::ExecAbort::Caller => Thrown::Pending,
                })
            });
            drop(busy);
            db.after_statement();
            result
        };
        match run() {
            // SAFETY: on the JS thread.
            Ok(()) => Ok(JsAny(unsafe { js::undefined(db.env()) })),
            // SAFETY: on the JS thread.
            Err(_) if db.instance.is_stopping() => Ok(JsAny(unsafe { js::null(db.env()) })),
            Err(e) => Err(db.throw(e)),
        }
    }

    #[napi(catch_unwind)]
    pub fn close(&self) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            if !db.is_open() {
                return Ok(());
            }
            db.require_closable()?;
            db.close()
        };
        run().map_err(|e| db.throw(e))
    }

    /// This database's id for the raw hot paths (`fast.inTransaction(id)`).
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> u32 {
        self.id
    }

    #[napi(getter, catch_unwind)]
    pub fn open(&self) -> bool {
        self.shared.is_open()
    }

    #[napi(catch_unwind)]
    pub fn default_safe_integers(&self, on: bool) {
        self.shared.set_default_safe_integers(on);
    }

    #[napi(catch_unwind)]
    pub fn unsafe_mode(&self, on: bool) -> napi::Result<()> {
        let db = &self.shared;
        db.set_unsafe_mode(on).map_err(|e| db.throw(e))
    }

    /// Sets (or clears, with null) the `verbose` logger.
    #[napi(catch_unwind)]
    pub fn set_verbose(&self, logger: JsAny) -> napi::Result<()> {
        let db = &self.shared;
        db.set_verbose(logger.0).map_err(|e| db.throw(e))
    }

    /// The current scratch buffer (after a batch reported `FLAG_SCRATCH_REPLACED`).
    #[napi(catch_unwind)]
    pub fn scratch(&self) -> JsAny {
        JsAny(self.shared.scratch_value())
    }

    /// Shrinks a scratch buffer that a large batch grew (see `DbShared::shrink_scratch`)
    /// and returns the current one.
    #[napi(catch_unwind)]
    pub fn shrink_scratch(&self) -> napi::Result<JsAny> {
        let db = &self.shared;
        db.shrink_scratch().map_err(|e| db.throw(e))?;
        Ok(JsAny(db.scratch_value()))
    }
}

const MSG_BAD_KEY: &str = "Expected the \"key\" option to be a 32-byte Buffer or Uint8Array";

/// `message` (which says a key is 32 bytes) for `scheme`'s keys: 16 bytes for an AEGIS-128
/// algorithm, and which one.
fn key_message(message: &str, scheme: CipherScheme) -> String {
    match scheme.aegis_algorithm() {
        Some(algorithm) if algorithm.key_size() == 16 => format!(
            "{} (the AEGIS algorithm '{}' takes 128-bit keys)",
            message.replace("32-byte", "16-byte"),
            algorithm.name()
        ),
        _ => message.to_string(),
    }
}

/// The `key` argument: `null`/`undefined` is no key; anything else must be a real
/// Uint8Array of exactly the length `scheme`'s keys have (32 bytes; 16 for an AEGIS-128
/// algorithm, returned in the first half, the rest zero), or a TypeError — a key given but
/// unreadable is never taken as "no key" (that would write the database in plaintext).
fn read_key(
    env: sys::napi_env,
    value: sys::napi_value,
    scheme: CipherScheme,
) -> JsResult<Option<Zeroizing<[u8; 32]>>> {
    // SAFETY: value is a value of this call.
    let kind = unsafe { js::type_of(env, value) };
    if kind == sys::ValueType::napi_null || kind == sys::ValueType::napi_undefined {
        return Ok(None);
    }
    // SAFETY: value is a value of this call; the info calls only read.
    let bytes = unsafe { js::uint8_array_bytes(env, value) };
    match bytes {
        Some(bytes) if bytes.len() == scheme.key_size() => {
            let mut key = Zeroizing::new([0u8; 32]);
            key[..bytes.len()].copy_from_slice(bytes);
            Ok(Some(key))
        }
        _ => type_error(key_message(MSG_BAD_KEY, scheme)),
    }
}

/// A required key argument (rekey, backup under a key) for a file in `scheme`'s format: a
/// real Uint8Array of its key length, or a TypeError `what` (which says 32 bytes; 16 for
/// an AEGIS-128 algorithm).
pub(crate) fn required_key(
    env: sys::napi_env,
    value: sys::napi_value,
    what: &'static str,
    scheme: CipherScheme,
) -> JsResult<Zeroizing<[u8; 32]>> {
    match read_key(env, value, scheme) {
        Ok(Some(key)) => Ok(key),
        _ => type_error(key_message(what, scheme)),
    }
}

/// The `passphrase` argument: null for none, else the bytes of a real Uint8Array (JS
/// passes a string as a buffer of its own, which it wipes afterwards), copied into a wiped
/// allocation.
fn read_passphrase(
    env: sys::napi_env,
    value: sys::napi_value,
) -> JsResult<Option<Zeroizing<Vec<u8>>>> {
    // SAFETY: value is a value of this call.
    let kind = unsafe { js::type_of(env, value) };
    if kind == sys::ValueType::napi_null || kind == sys::ValueType::napi_undefined {
        return Ok(None);
    }
    // SAFETY: value is a value of this call; the info calls only read.
    match unsafe { js::uint8_array_bytes(env, value) } {
        Some(bytes) if !bytes.is_empty() => {
            let mut copy = Zeroizing::new(Vec::with_capacity(bytes.len()));
            copy.extend_from_slice(bytes);
            Ok(Some(copy))
        }
        _ => type_error(
            "Expected the \"passphrase\" option to be a non-empty string, Buffer or Uint8Array",
        ),
    }
}

fn object_prototype(env: sys::napi_env) -> JsResult<sys::napi_ref> {
    // SAFETY: on the JS thread; {} is created in the current realm.
    unsafe {
        let mut obj = ptr::null_mut();
        check(sys::napi_create_object(env, &mut obj))?;
        let mut proto = ptr::null_mut();
        check(sys::napi_get_prototype(env, obj, &mut proto))?;
        new_reference(env, proto)
    }
}
