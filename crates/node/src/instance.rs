//! One module instance: one load of the addon into one Node environment. The main thread
//! and each worker load it separately, and so does `process.dlopen` of the same file
//! again (the statics of the shared object are then shared, its `napi_env` is not). An
//! instance's registries (`registry.rs`) hang off its `napi_env` as its instance data, so
//! one instance's entry points never reach another's objects (whose env they would
//! misuse); its databases are closed when the environment exits.

use super::{
    callbacks::Lifecycle,
    db_shared::DbShared,
    js::{check, JsResult},
    registry::Registry,
    statement::StatementCore,
};
use napi::sys;
use std::{
    cell::RefCell,
    ffi::c_void,
    ptr,
    rc::{Rc, Weak},
};

/// Everything one module instance keeps: its registries, the databases it opened (closed
/// by the environment's cleanup hook), and whether its environment is stopping.
pub(crate) struct Instance {
    /// Shared with its statements, which remove their id when dropped.
    pub statements: Rc<Registry<StatementCore>>,
    pub databases: Registry<DbShared>,
    pub open_databases: RefCell<Vec<Weak<DbShared>>>,
    /// Whether the environment can still run JS (shared with its connections' callbacks).
    pub lifecycle: Rc<Lifecycle>,
}

impl Instance {
    fn new() -> Self {
        Instance {
            statements: Rc::new(Registry::new()),
            databases: Registry::new(),
            open_databases: RefCell::new(Vec::new()),
            lifecycle: Lifecycle::new(),
        }
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
