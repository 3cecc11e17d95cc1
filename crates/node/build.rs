//! Build script: the Node-API link arguments (none on Windows), and a stable install name on
//! macOS.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "macos" {
        // A stable install name keeps the Mach-O bytes independent of the build path.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/cipherlite.node");
    }
    // On Windows napi-build would link against an import library of `libnode.dll`; the
    // addon resolves Node-API at load time instead (napi's `dyn-symbols`: GetProcAddress on
    // the process's main module), so a GNU-ABI DLL loads into MSVC-built node.exe and into
    // Electron alike, with no import library (docs/build-targets.md §3).
    if target_os != "windows" {
        napi_build::setup();
    } else if std::env::var("CARGO_CFG_TARGET_ENV").as_deref() == Ok("gnu") {
        // The export list. rustc hands the GNU linker one as `-Wl,<list.def>`, which zig
        // does not take (cargo-zigbuild drops it), and without one the MinGW linker exports
        // every global symbol (all of SQLite's API among them). zig takes a `.def` file as
        // an input file.
        let def = std::path::Path::new(&std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
            .join("cipherlite.def");
        println!("cargo:rerun-if-changed=cipherlite.def");
        println!("cargo:rustc-cdylib-link-arg={}", def.display());
    }
}
