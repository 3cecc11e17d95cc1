//! What this crate's tests share: a temporary directory removed on drop.

use std::path::PathBuf;

/// A fresh directory under the temp dir (`tag` and random digits in its name), removed
/// with everything in it when dropped.
pub(crate) struct Dir(pub PathBuf);

impl Dir {
    pub fn new(tag: &str) -> Dir {
        let mut random = [0u8; 6];
        getrandom::fill(&mut random).expect("random");
        let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let d = std::env::temp_dir().join(format!("cipherlite-core-{tag}-{hex}"));
        std::fs::create_dir_all(&d).expect("mkdir");
        Dir(d)
    }

    /// The path of `name` in this directory, as SQLite takes it.
    pub fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }

    /// The names of the files in this directory, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .expect("readdir")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
