//! Per-module-instance registries of live native objects, by small integer id. The raw
//! hot paths (`raw_entry_points.rs`) find their object from the id the JS side passes, which costs an
//! index instead of Node-API's property lookups (`napi_unwrap`, type tags). An id is
//! removed when its object is dropped, which cannot happen while the JS object holding the
//! id (and the native object) is alive; a stale or forged id finds nothing or another live
//! object of the same type and the same module instance, never freed memory.
//!
//! Each module instance has its own registries (`instance.rs`).

use std::{
    cell::RefCell,
    rc::{Rc, Weak},
};

pub(crate) struct Registry<T> {
    slots: RefCell<Vec<Weak<T>>>,
    free: RefCell<Vec<u32>>,
}

impl<T> Registry<T> {
    pub const fn new() -> Self {
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
