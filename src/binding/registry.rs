//! Per-module-instance registries of live native objects, by small integer id. The raw
//! hot paths (`fast.rs`) find their object from the id the JS side passes, which costs an
//! index instead of Node-API's property lookups (`napi_unwrap`, type tags). An id is
//! removed when its object is dropped, which cannot happen while the JS object holding the
//! id (and the native object) is alive; a stale or forged id finds nothing or another live
//! object of the same type and the same module instance, never freed memory.
//!
//! A module instance is one load of the addon into one Node environment: the main thread
//! and each worker load it separately, and so does `process.dlopen` of the same file
//! again (the statics of the shared object are then shared, its `napi_env` is not). The
//! registries hang off the instance's `napi_env` as its instance data, so one instance's
//! entry points never reach another's objects (whose env they would misuse).

use super::{
    callbacks::Lifecycle,
    js::{check, JsResult},
    state::DbShared,
    statement::StatementCore,
};
use napi::sys;
use std::{
    cell::RefCell,
    ffi::c_void,
    ptr,
    rc::{Rc, Weak},
};

pub(crate) struct Registry<T> {
    slots: RefCell<Vec<Weak<T>>>,
    free: RefCell<Vec<u32>>,
}

impl<T> Registry<T> {
    const fn new() -> Self {
        Registry {
            slots: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
        }
    }

    pub fn register(&self, item: &Rc<T>) -> u32 {
        let weak = Rc::downgrade(item);
        let mut slots = self.slots.borrow_mut();
        match self.free.borrow_mut().pop() {
            Some(id) => {
                slots[id as usize] = weak;
                id
            }
            None => {
                slots.push(weak);
                (slots.len() - 1) as u32
            }
        }
    }

    pub fn get(&self, id: u32) -> Option<Rc<T>> {
        self.slots.borrow().get(id as usize).and_then(Weak::upgrade)
    }

    pub fn remove(&self, id: u32) {
        let mut slots = self.slots.borrow_mut();
        if let Some(slot) = slots.get_mut(id as usize) {
            *slot = Weak::new();
            self.free.borrow_mut().push(id);
        }
    }
}

/// Everything one module instance keeps: its registries, the databases it opened (closed
/// by the environment's cleanup hook), and whether its environment is stopping.
pub(crate) struct Instance {
    pub statements: Registry<StatementCore>,
    pub databases: Registry<DbShared>,
    pub open_databases: RefCell<Vec<Weak<DbShared>>>,
    /// Whether the environment can still run JS (shared with its connections' callbacks).
    pub lifecycle: Rc<Lifecycle>,
}

impl Instance {
    fn new() -> Self {
        Instance {
            statements: Registry::new(),
            databases: Registry::new(),
            open_databases: RefCell::new(Vec::new()),
            lifecycle: Lifecycle::new(),
        }
    }

    pub fn is_stopping(&self) -> bool {
        self.lifecycle.is_stopping()
    }

    pub fn set_stopping(&self) {
        self.lifecycle.set_stopping();
    }

    /// Creates the instance of the module being initialised in `env` and attaches it as
    /// the env's instance data (released when the env is torn down). Returns it, and a
    /// pointer to it that stays valid for the env's lifetime (for callback data).
    pub fn install(env: sys::napi_env) -> JsResult<(Rc<Instance>, *const Instance)> {
        let instance = Rc::new(Instance::new());
        let raw = Rc::into_raw(instance.clone());
        // SAFETY: module initialisation on the JS thread of `env`; `raw` is one strong
        // count, given back to `release_instance` when the env is torn down. The cleanup
        // hook gets a strong count of its own.
        unsafe {
            if let Err(e) = check(sys::napi_set_instance_data(
                env,
                raw.cast_mut().cast::<c_void>(),
                Some(release_instance),
                ptr::null_mut(),
            )) {
                drop(Rc::from_raw(raw));
                return Err(e);
            }
            let hook = Rc::into_raw(instance.clone());
            if sys::napi_add_env_cleanup_hook(
                env,
                Some(close_instance_databases),
                hook.cast_mut().cast::<c_void>(),
            ) != sys::Status::napi_ok
            {
                drop(Rc::from_raw(hook));
            }
        }
        Ok((instance, raw))
    }

    /// The instance of the module that owns `env` (`None` before its initialisation).
    pub fn of(env: sys::napi_env) -> Option<Rc<Instance>> {
        let mut data = ptr::null_mut();
        // SAFETY: on the JS thread of `env`; only this module sets its env's instance
        // data, always to a pointer from `Rc::into_raw` that stays alive until the env's
        // teardown releases it.
        unsafe {
            if sys::napi_get_instance_data(env, &mut data) != sys::Status::napi_ok || data.is_null()
            {
                return None;
            }
            let raw = data.cast::<Instance>().cast_const();
            Rc::increment_strong_count(raw);
            Some(Rc::from_raw(raw))
        }
    }

    /// Remembers an open database, to be closed when the environment exits.
    pub fn track_open_database(&self, db: &Rc<DbShared>) {
        let mut list = self.open_databases.borrow_mut();
        list.retain(|w| w.strong_count() > 0);
        list.push(Rc::downgrade(db));
    }
}

unsafe extern "C" fn release_instance(_env: sys::napi_env, data: *mut c_void, _hint: *mut c_void) {
    if data.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `data` is the strong count `Instance::install` gave the env.
        drop(unsafe { Rc::from_raw(data.cast::<Instance>().cast_const()) });
    });
}

unsafe extern "C" fn close_instance_databases(data: *mut c_void) {
    if data.is_null() {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: `data` is the strong count `Instance::install` gave the hook.
        let instance = unsafe { Rc::from_raw(data.cast::<Instance>().cast_const()) };
        // The environment is going away: no JS runs for it any more.
        instance.set_stopping();
        let dbs = std::mem::take(&mut *instance.open_databases.borrow_mut());
        for db in dbs.iter().filter_map(Weak::upgrade) {
            let _ = db.close();
        }
    });
}
