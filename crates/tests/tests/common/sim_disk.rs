//! A simulated disk as a SQLite VFS, for the power-loss and fault sweeps: files live in
//! memory, each write, sync, truncate and delete is counted, and the disk can lose power
//! at any of them. It sits *below* the encrypting VFS (`KeyedVfsHandle::register_over`),
//! so the sweeps exercise the codec and VFS exactly as a real disk would.
//!
//! A file keeps what it held at its last sync (`durable`) and the writes and truncates
//! since (`unsynced`). When power is lost, the disk image becomes, per file, the durable
//! bytes plus — depending on [`Loss`] — nothing, a random subset of the unsynced writes
//! each torn at the sector size, or all of them (the process killed, not the machine:
//! [`Loss::ProcessKilled`]). After the loss every call fails with `SQLITE_IOERR`, as the
//! process would have died; [`SimDisk::recover`] then installs the image.
//!
//! One connection at a time: locks always succeed, and the wal-index lives in memory
//! (dropped at a power loss, as a real `-shm` is rebuilt after a crash).
//!
//! It is also a [`FileSystem`] for the key lifecycle (`cipherlite_core::key_lifecycle`): files
//! created with `create_new` and renames are namespace changes that survive a power loss
//! only once the directory is synced (`sync_dir`); before that, none of them survive
//! ([`Loss::AllUnsynced`]) or a random prefix of them does ([`Loss::RandomTorn`]). A file
//! is named by its path (no inodes): a handle open on a path that is renamed over sees
//! the new file, which the key lifecycle never relies on (it writes nothing to the
//! original after the rename). SQLite's own creations and deletions are durable at once.

#![allow(dead_code)]

use cipherlite_core::key_lifecycle::fs::FileSystem;
use cipherlite_sqlite::ffi;
use cipherlite_vfs::shim::{self, guard, Registered, VfsShim};
use std::{
    collections::HashMap,
    ffi::{c_char, c_int, c_void, CStr, CString},
    path::{Path, PathBuf},
    ptr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

/// The largest file the simulated disk holds (it is memory): a write or a truncate past it
/// fails with `SQLITE_FULL`, as on a full disk.
pub const MAX_FILE_SIZE: u64 = 256 << 20;

/// What survives a power loss of the writes made since each file's last sync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Loss {
    /// Nothing: each file as of its last sync.
    AllUnsynced,
    /// A random subset of the unsynced writes (and truncates), in order, each write torn
    /// at the sector size (random sectors of it kept).
    RandomTorn { seed: u64 },
    /// The process killed, the machine still up: every write, truncate and namespace change
    /// made so far is kept, synced or not (the kernel has them); only what the process had
    /// not handed to the OS is lost. What SQLite promises at `synchronous = OFF`.
    ProcessKilled,
}

/// An injected failure: the `at`-th counted call (0-based) fails with `code`, once.
#[derive(Debug, Clone, Copy)]
pub struct Fault {
    pub at: u64,
    pub code: c_int,
    /// Which calls count: writes, syncs, truncates, deletes, and (when set) reads,
    /// file sizes, locks and shm maps.
    pub include_reads: bool,
}

#[derive(Default, Clone)]
struct SimFile {
    current: Vec<u8>,
    durable: Vec<u8>,
    unsynced: Vec<Op>,
}

/// A namespace change not yet made durable by a directory sync.
#[derive(Clone)]
enum NamespaceOp {
    Created(String),
    /// `from` renamed to `to`, which named `replaced` before.
    Renamed {
        from: String,
        to: String,
        replaced: Option<SimFile>,
    },
}

#[derive(Clone)]
enum Op {
    Write(u64, Vec<u8>),
    Truncate(u64),
}

struct State {
    files: HashMap<String, SimFile>,
    shm: HashMap<String, Vec<Box<[u8]>>>,
    /// Counted mutating calls so far (writes, syncs, truncates, deletes).
    ops: u64,
    /// Counted calls of the fault sweep so far.
    fault_ops: u64,
    power_loss_at: Option<(u64, Loss)>,
    fault: Option<Fault>,
    faults_injected: u64,
    dead: bool,
    image: Option<HashMap<String, SimFile>>,
    /// Namespace changes since the last directory sync, in order.
    namespace: Vec<NamespaceOp>,
}

/// A simulated disk, registered as a VFS named [`SimDisk::name`].
pub struct SimDisk {
    /// The registration (set once the disk has its address): the first field, so the VFS
    /// is unregistered before the rest goes.
    registered: Option<Registered<DiskVfs>>,
    state: Mutex<State>,
    pub sector_size: c_int,
    pub device_characteristics: c_int,
    /// Behave as Windows does for the key lifecycle: a file can't be renamed over while
    /// open, so an operation's connection lets go of the file before the rename
    /// (`FileSystem::renames_over_open_files` false).
    pub closes_before_rename: std::sync::atomic::AtomicBool,
}

#[repr(C)]
struct SimFileHandle {
    base: ffi::sqlite3_file,
    disk: *const SimDisk,
    name: *mut String,
}

static NEXT: AtomicU64 = AtomicU64::new(1);

impl SimDisk {
    /// A new, empty disk reporting `sector_size` and, when `powersafe`, powersafe overwrite.
    pub fn new(sector_size: c_int, powersafe: bool) -> Box<SimDisk> {
        let name = CString::new(format!("simdisk-{}", NEXT.fetch_add(1, Ordering::Relaxed)))
            .expect("no NUL");
        let mut disk = Box::new(SimDisk {
            registered: None,
            state: Mutex::new(State {
                files: HashMap::new(),
                shm: HashMap::new(),
                ops: 0,
                fault_ops: 0,
                power_loss_at: None,
                fault: None,
                faults_injected: 0,
                dead: false,
                image: None,
                namespace: Vec::new(),
            }),
            sector_size,
            device_characteristics: if powersafe {
                ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
            } else {
                0
            },
            closes_before_rename: std::sync::atomic::AtomicBool::new(false),
        });
        // The disk is boxed (a stable address) and unregisters the VFS first when dropped.
        let disk_ptr: *const SimDisk = &*disk;
        let registered = shim::register(name, DiskVfs(disk_ptr));
        disk.registered = Some(registered.expect("the simulated disk registers"));
        disk
    }

    pub fn name(&self) -> &CStr {
        self.registered.as_ref().map_or(c"", |r| r.name())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counted mutating calls since the counter was last reset.
    pub fn ops(&self) -> u64 {
        self.state().ops
    }

    pub fn fault_ops(&self) -> u64 {
        self.state().fault_ops
    }

    pub fn faults_injected(&self) -> u64 {
        self.state().faults_injected
    }

    pub fn reset_counters(&self) {
        let mut s = self.state();
        s.ops = 0;
        s.fault_ops = 0;
    }

    /// Power is lost just before the `at`-th counted mutating call from now on.
    pub fn lose_power_at(&self, at: u64, loss: Loss) {
        let mut s = self.state();
        s.ops = 0;
        s.power_loss_at = Some((at, loss));
    }

    pub fn inject(&self, fault: Option<Fault>) {
        let mut s = self.state();
        s.fault_ops = 0;
        s.fault = fault;
    }

    /// Whether power was lost.
    pub fn lost_power(&self) -> bool {
        self.state().image.is_some()
    }

    /// After a power loss: the disk holds what survived; calls work again.
    pub fn recover(&self) {
        let mut s = self.state();
        if let Some(image) = s.image.take() {
            s.files = image;
        }
        s.shm.clear();
        s.namespace.clear();
        s.dead = false;
        s.power_loss_at = None;
    }

    /// Everything synced now (a clean state to start a sweep from).
    pub fn sync_all(&self) {
        let mut s = self.state();
        for f in s.files.values_mut() {
            f.durable = f.current.clone();
            f.unsynced.clear();
        }
        s.namespace.clear();
    }

    /// A copy of the whole disk, and putting one back.
    pub fn snapshot(&self) -> HashMap<String, Vec<u8>> {
        self.state()
            .files
            .iter()
            .map(|(k, v)| (k.clone(), v.current.clone()))
            .collect()
    }

    pub fn restore(&self, files: &HashMap<String, Vec<u8>>) {
        let mut s = self.state();
        s.files = files
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    SimFile {
                        current: v.clone(),
                        durable: v.clone(),
                        unsynced: Vec::new(),
                    },
                )
            })
            .collect();
        s.shm.clear();
        s.namespace.clear();
        s.dead = false;
        s.image = None;
        s.power_loss_at = None;
        s.fault = None;
    }

    pub fn file(&self, name: &str) -> Option<Vec<u8>> {
        self.state().files.get(name).map(|f| f.current.clone())
    }

    pub fn file_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.state().files.keys().cloned().collect();
        names.sort();
        names
    }

    /// Counts a mutating call; `Err` when it must fail (power lost, or a fault).
    fn mutating_call(&self) -> Result<(), c_int> {
        let mut s = self.state();
        if s.dead {
            return Err(ffi::SQLITE_IOERR);
        }
        if let Some((at, loss)) = s.power_loss_at {
            if s.ops == at {
                let sector = self.sector_size.max(512) as usize;
                let mut image = crash_image(&s.files, loss, sector);
                undo_namespace(&mut image, &s.namespace, loss, sector);
                s.image = Some(image);
                s.dead = true;
                return Err(ffi::SQLITE_IOERR);
            }
        }
        s.ops += 1;
        drop(s);
        self.fault_call(true)
    }

    /// Counts a call of the fault sweep; `Err(code)` for the injected one.
    fn fault_call(&self, mutating: bool) -> Result<(), c_int> {
        let mut s = self.state();
        if s.dead {
            return Err(ffi::SQLITE_IOERR);
        }
        let Some(fault) = s.fault else { return Ok(()) };
        if !mutating && !fault.include_reads {
            return Ok(());
        }
        let n = s.fault_ops;
        s.fault_ops += 1;
        if n == fault.at {
            s.faults_injected += 1;
            return Err(fault.code);
        }
        Ok(())
    }
}

fn io_error(rc: c_int) -> std::io::Error {
    std::io::Error::other(format!(
        "simulated disk: {}",
        cipherlite_sqlite::code_name(rc)
    ))
}

impl FileSystem for SimDisk {
    fn vfs(&self) -> Option<&CStr> {
        Some(self.name())
    }
    fn renames_over_open_files(&self) -> bool {
        !self.closes_before_rename.load(Ordering::Relaxed)
    }
    fn create_new(&self, path: &Path) -> std::io::Result<()> {
        let name = path.to_string_lossy().into_owned();
        if self.state().files.contains_key(&name) {
            return Err(std::io::ErrorKind::AlreadyExists.into());
        }
        self.mutating_call().map_err(io_error)?;
        let mut s = self.state();
        s.files.insert(name.clone(), SimFile::default());
        s.namespace.push(NamespaceOp::Created(name));
        Ok(())
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        let name = path.to_string_lossy().into_owned();
        if !self.state().files.contains_key(&name) {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        self.mutating_call().map_err(io_error)?;
        self.state().files.remove(&name);
        Ok(())
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        let (from, to) = (
            from.to_string_lossy().into_owned(),
            to.to_string_lossy().into_owned(),
        );
        if !self.state().files.contains_key(&from) {
            return Err(std::io::ErrorKind::NotFound.into());
        }
        self.mutating_call().map_err(io_error)?;
        let mut s = self.state();
        let moved = s.files.remove(&from).unwrap_or_default();
        let replaced = s.files.insert(to.clone(), moved);
        s.namespace
            .push(NamespaceOp::Renamed { from, to, replaced });
        Ok(())
    }
    fn sync_dir(&self, _dir: &Path) -> std::io::Result<()> {
        self.mutating_call().map_err(io_error)?;
        self.state().namespace.clear(); // one directory holds every file of a sweep
        Ok(())
    }
    fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
        let prefix = format!("{}/", dir.to_string_lossy());
        Ok(self
            .state()
            .files
            .keys()
            .filter(|n| {
                n.strip_prefix(&prefix)
                    .is_some_and(|rest| !rest.contains('/'))
            })
            .map(PathBuf::from)
            .collect())
    }
    fn file_len(&self, path: &Path) -> std::io::Result<u64> {
        let s = self.state();
        let f = s
            .files
            .get(&*path.to_string_lossy())
            .ok_or(std::io::ErrorKind::NotFound)?;
        Ok(f.current.len() as u64)
    }
    fn canonicalize(&self, path: &Path) -> std::io::Result<PathBuf> {
        self.file_len(path).map(|_| path.to_path_buf())
    }
    fn hard_link(&self, _from: &Path, _to: &Path) -> std::io::Result<()> {
        Err(std::io::ErrorKind::Unsupported.into())
    }
}

/// A small deterministic PRNG (xorshift64*), for the random-loss variants.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.next() % den < num
    }
}

fn apply(file: &mut Vec<u8>, op: &Op) {
    match op {
        Op::Write(off, data) => {
            let end = *off as usize + data.len();
            if file.len() < end {
                file.resize(end, 0);
            }
            file[*off as usize..end].copy_from_slice(data);
        }
        Op::Truncate(size) => file.resize(*size as usize, 0), // ftruncate: shrinks or zero-extends
    }
}

/// Undoes on a crash image the namespace changes that did not survive: all of them, or
/// (random loss) those after a random prefix.
fn undo_namespace(
    image: &mut HashMap<String, SimFile>,
    ops: &[NamespaceOp],
    loss: Loss,
    sector: usize,
) {
    let kept = match loss {
        Loss::AllUnsynced => 0,
        Loss::RandomTorn { seed } => {
            (Rng::new(seed ^ 0x5eed).next() % (ops.len() as u64 + 1)) as usize
        }
        Loss::ProcessKilled => ops.len(),
    };
    for op in ops[kept..].iter().rev() {
        match op {
            NamespaceOp::Created(name) => {
                image.remove(name);
            }
            NamespaceOp::Renamed { from, to, replaced } => {
                if let Some(f) = image.remove(to) {
                    image.insert(from.clone(), f);
                }
                if let Some(old) = replaced {
                    let one = HashMap::from([(to.clone(), old.clone())]);
                    image.extend(crash_image(&one, loss, sector));
                }
            }
        }
    }
}

fn crash_image(
    files: &HashMap<String, SimFile>,
    loss: Loss,
    sector: usize,
) -> HashMap<String, SimFile> {
    let mut rng = match loss {
        Loss::AllUnsynced | Loss::ProcessKilled => Rng::new(0),
        Loss::RandomTorn { seed } => Rng::new(seed),
    };
    let mut out = HashMap::new();
    for (name, f) in files {
        let mut bytes = if loss == Loss::ProcessKilled {
            f.current.clone()
        } else {
            f.durable.clone()
        };
        if let Loss::RandomTorn { .. } = loss {
            for op in &f.unsynced {
                if !rng.chance(1, 2) {
                    continue;
                }
                match op {
                    Op::Truncate(_) => apply(&mut bytes, op),
                    Op::Write(off, data) => {
                        // Keep random whole sectors of the write.
                        let start = *off as usize;
                        let end = start + data.len();
                        let mut at = start;
                        while at < end {
                            let sector_end = ((at / sector) + 1) * sector;
                            let piece_end = sector_end.min(end);
                            if rng.chance(3, 4) {
                                let piece = Op::Write(
                                    at as u64,
                                    data[at - start..piece_end - start].to_vec(),
                                );
                                apply(&mut bytes, &piece);
                            }
                            at = piece_end;
                        }
                    }
                }
            }
        }
        out.insert(
            name.clone(),
            SimFile {
                current: bytes.clone(),
                durable: bytes,
                unsynced: Vec::new(),
            },
        );
    }
    out
}

/// # Safety
/// `f` is an open SimFileHandle.
unsafe fn handle<'a>(f: *mut ffi::sqlite3_file) -> (&'a SimDisk, &'a str) {
    // SAFETY: per contract.
    unsafe {
        let h = &*f.cast::<SimFileHandle>();
        (&*h.disk, (*h.name).as_str())
    }
}

static IO: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(f_close),
    xRead: Some(f_read),
    xWrite: Some(f_write),
    xTruncate: Some(f_truncate),
    xSync: Some(f_sync),
    xFileSize: Some(f_file_size),
    xLock: Some(f_lock),
    xUnlock: Some(f_unlock),
    xCheckReservedLock: Some(f_check_reserved),
    xFileControl: Some(f_file_control),
    xSectorSize: Some(f_sector_size),
    xDeviceCharacteristics: Some(f_device_characteristics),
    xShmMap: Some(f_shm_map),
    xShmLock: Some(f_shm_lock),
    xShmBarrier: Some(f_shm_barrier),
    xShmUnmap: Some(f_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};

fn getrandom_fill(buf: &mut [u8]) -> Result<(), ()> {
    let mut rng = Rng::new(NEXT.fetch_add(1, Ordering::Relaxed));
    for b in buf {
        *b = rng.next() as u8;
    }
    Ok(())
}

/// The VFS of a [`SimDisk`], which outlives its registration (see `SimDisk::registered`).
struct DiskVfs(*const SimDisk);

impl VfsShim for DiskVfs {
    const VERSION: c_int = 2;

    /// None: the disk is the bottom of the stack.
    fn base(&self) -> *mut ffi::sqlite3_vfs {
        ptr::null_mut()
    }

    fn file_size(&self) -> c_int {
        std::mem::size_of::<SimFileHandle>() as c_int
    }

    unsafe fn open(
        &self,
        name: *const c_char,
        out: *mut ffi::sqlite3_file,
        flags: c_int,
        out_flags: *mut c_int,
    ) -> c_int {
        // SAFETY: SQLite's xOpen contract; the disk outlives its registration.
        unsafe {
            let disk = &*self.0;
            (*out).pMethods = ptr::null();
            let name = if name.is_null() {
                format!("temp-{}", NEXT.fetch_add(1, Ordering::Relaxed))
            } else {
                CStr::from_ptr(name).to_string_lossy().into_owned()
            };
            if let Err(rc) = disk.fault_call(false) {
                return rc;
            }
            let mut s = disk.state();
            if s.dead {
                return ffi::SQLITE_IOERR;
            }
            if !s.files.contains_key(&name) {
                if flags & ffi::SQLITE_OPEN_CREATE == 0 {
                    return ffi::SQLITE_CANTOPEN;
                }
                s.files.insert(name.clone(), SimFile::default());
            }
            drop(s);
            out.cast::<SimFileHandle>().write(SimFileHandle {
                base: ffi::sqlite3_file { pMethods: &IO },
                disk,
                name: Box::into_raw(Box::new(name)),
            });
            if !out_flags.is_null() {
                *out_flags = flags;
            }
            ffi::SQLITE_OK
        }
    }

    unsafe fn delete(&self, name: *const c_char, _sync: c_int) -> c_int {
        // SAFETY: SQLite's contract: name is NUL-terminated; the disk outlives its
        // registration.
        unsafe {
            let disk = &*self.0;
            if let Err(rc) = disk.mutating_call() {
                return if rc == ffi::SQLITE_IOERR {
                    ffi::SQLITE_IOERR_DELETE
                } else {
                    rc
                };
            }
            let name = CStr::from_ptr(name).to_string_lossy().into_owned();
            disk.state().files.remove(&name);
            ffi::SQLITE_OK
        }
    }

    unsafe fn access(&self, name: *const c_char, _flags: c_int, out: *mut c_int) -> c_int {
        // SAFETY: SQLite's contract; the disk outlives its registration.
        unsafe {
            let disk = &*self.0;
            let name = CStr::from_ptr(name).to_string_lossy().into_owned();
            let s = disk.state();
            *out = c_int::from(s.files.get(&name).is_some_and(|f| !f.current.is_empty()));
            ffi::SQLITE_OK
        }
    }

    unsafe fn full_pathname(&self, name: *const c_char, n: c_int, out: *mut c_char) -> c_int {
        // SAFETY: SQLite's contract: out has n bytes.
        unsafe {
            let bytes = CStr::from_ptr(name).to_bytes_with_nul();
            if bytes.len() > n as usize {
                return ffi::SQLITE_CANTOPEN;
            }
            ptr::copy_nonoverlapping(bytes.as_ptr().cast(), out, bytes.len());
        }
        ffi::SQLITE_OK
    }

    unsafe fn randomness(&self, n: c_int, out: *mut c_char) -> c_int {
        // SAFETY: out has n bytes.
        let buf = unsafe { std::slice::from_raw_parts_mut(out.cast::<u8>(), n.max(0) as usize) };
        let _ = getrandom_fill(buf);
        n
    }

    fn sleep(&self, micros: c_int) -> c_int {
        micros
    }

    unsafe fn current_time(&self, out: *mut f64) -> c_int {
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64());
        // SAFETY: out is SQLite's.
        unsafe { *out = 2_440_587.5 + secs / 86_400.0 };
        ffi::SQLITE_OK
    }
}

unsafe extern "C" fn f_close(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: closed once; the name box is freed here.
    unsafe {
        let h = &mut *f.cast::<SimFileHandle>();
        if !h.name.is_null() {
            drop(Box::from_raw(h.name));
            h.name = ptr::null_mut();
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn f_read(
    f: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    guard(ffi::SQLITE_IOERR_READ, || {
        // SAFETY: buf has amt bytes; f is open.
        unsafe {
            let (disk, name) = handle(f);
            let out = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amt.max(0) as usize);
            if let Err(rc) = disk.fault_call(false) {
                out.fill(0);
                return if rc == ffi::SQLITE_IOERR {
                    ffi::SQLITE_IOERR_READ
                } else {
                    rc
                };
            }
            let s = disk.state();
            if s.dead {
                return ffi::SQLITE_IOERR_READ;
            }
            let data = s.files.get(name).map_or(&[][..], |f| f.current.as_slice());
            let off = off as usize;
            let have = data.len().saturating_sub(off).min(out.len());
            out[..have].copy_from_slice(&data[off.min(data.len())..off.min(data.len()) + have]);
            if have < out.len() {
                out[have..].fill(0);
                return ffi::SQLITE_IOERR_SHORT_READ;
            }
            ffi::SQLITE_OK
        }
    })
}

unsafe extern "C" fn f_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    guard(ffi::SQLITE_IOERR_WRITE, || {
        // SAFETY: buf has amt bytes; f is open.
        unsafe {
            let (disk, name) = handle(f);
            if let Err(rc) = disk.mutating_call() {
                return if rc == ffi::SQLITE_IOERR {
                    ffi::SQLITE_IOERR_WRITE
                } else {
                    rc
                };
            }
            let data = std::slice::from_raw_parts(buf.cast::<u8>(), amt.max(0) as usize);
            if off < 0 || off as u64 + data.len() as u64 > MAX_FILE_SIZE {
                return ffi::SQLITE_FULL;
            }
            let mut s = disk.state();
            let file = s.files.entry(name.to_owned()).or_default();
            let op = Op::Write(off as u64, data.to_vec());
            apply(&mut file.current, &op);
            file.unsynced.push(op);
            ffi::SQLITE_OK
        }
    })
}

unsafe extern "C" fn f_truncate(f: *mut ffi::sqlite3_file, size: i64) -> c_int {
    guard(ffi::SQLITE_IOERR_TRUNCATE, || {
        // SAFETY: f is open.
        unsafe {
            let (disk, name) = handle(f);
            if let Err(rc) = disk.mutating_call() {
                return if rc == ffi::SQLITE_IOERR {
                    ffi::SQLITE_IOERR_TRUNCATE
                } else {
                    rc
                };
            }
            if size as u64 > MAX_FILE_SIZE {
                return ffi::SQLITE_FULL;
            }
            let mut s = disk.state();
            let file = s.files.entry(name.to_owned()).or_default();
            let op = Op::Truncate(size.max(0) as u64);
            apply(&mut file.current, &op);
            file.unsynced.push(op);
            ffi::SQLITE_OK
        }
    })
}

unsafe extern "C" fn f_sync(f: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_FSYNC, || {
        // SAFETY: f is open.
        unsafe {
            let (disk, name) = handle(f);
            if let Err(rc) = disk.mutating_call() {
                return if rc == ffi::SQLITE_IOERR {
                    ffi::SQLITE_IOERR_FSYNC
                } else {
                    rc
                };
            }
            let mut s = disk.state();
            if let Some(file) = s.files.get_mut(name) {
                file.durable = file.current.clone();
                file.unsynced.clear();
            }
            ffi::SQLITE_OK
        }
    })
}

unsafe extern "C" fn f_file_size(f: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    guard(ffi::SQLITE_IOERR_FSTAT, || {
        // SAFETY: f is open; size is SQLite's.
        unsafe {
            let (disk, name) = handle(f);
            if let Err(rc) = disk.fault_call(false) {
                return if rc == ffi::SQLITE_IOERR {
                    ffi::SQLITE_IOERR_FSTAT
                } else {
                    rc
                };
            }
            let s = disk.state();
            if s.dead {
                return ffi::SQLITE_IOERR_FSTAT;
            }
            *size = s.files.get(name).map_or(0, |f| f.current.len() as i64);
            ffi::SQLITE_OK
        }
    })
}

unsafe extern "C" fn f_lock(f: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_LOCK, || {
        // SAFETY: f is open.
        let (disk, _) = unsafe { handle(f) };
        match disk.fault_call(false) {
            Err(rc) if rc == ffi::SQLITE_IOERR => ffi::SQLITE_IOERR_LOCK,
            Err(rc) => rc,
            Ok(()) => ffi::SQLITE_OK,
        }
    })
}

unsafe extern "C" fn f_unlock(_f: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn f_check_reserved(_f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: out is SQLite's.
    unsafe { *out = 0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn f_file_control(
    _f: *mut ffi::sqlite3_file,
    _op: c_int,
    _arg: *mut c_void,
) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn f_sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: f is open.
    unsafe { handle(f).0.sector_size }
}

unsafe extern "C" fn f_device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: f is open.
    unsafe { handle(f).0.device_characteristics }
}

unsafe extern "C" fn f_shm_map(
    f: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    guard(ffi::SQLITE_IOERR_SHMMAP, || {
        // SAFETY: f is open; out is SQLite's.
        unsafe {
            let (disk, name) = handle(f);
            *out = ptr::null_mut();
            if let Err(rc) = disk.fault_call(false) {
                return if rc == ffi::SQLITE_IOERR {
                    ffi::SQLITE_IOERR_SHMMAP
                } else {
                    rc
                };
            }
            let mut s = disk.state();
            if s.dead {
                return ffi::SQLITE_IOERR_SHMMAP;
            }
            let regions = s.shm.entry(name.to_owned()).or_default();
            let region = region as usize;
            if regions.len() <= region {
                if extend == 0 {
                    return ffi::SQLITE_OK;
                }
                while regions.len() <= region {
                    regions.push(vec![0u8; size as usize].into_boxed_slice());
                }
            }
            *out = regions[region].as_mut_ptr().cast();
            ffi::SQLITE_OK
        }
    })
}

unsafe extern "C" fn f_shm_lock(
    _f: *mut ffi::sqlite3_file,
    _o: c_int,
    _n: c_int,
    _fl: c_int,
) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn f_shm_barrier(_f: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(Ordering::SeqCst);
}

unsafe extern "C" fn f_shm_unmap(f: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    guard(ffi::SQLITE_OK, || {
        // SAFETY: f is open.
        unsafe {
            let (disk, name) = handle(f);
            if delete != 0 {
                disk.state().shm.remove(name);
            }
            ffi::SQLITE_OK
        }
    })
}
