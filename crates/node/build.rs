//! Build script: the Node-API link arguments, and a stable install name on macOS.

fn main() {
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if target_os == "macos" {
        // A stable install name keeps the Mach-O bytes independent of the build path.
        println!("cargo:rustc-cdylib-link-arg=-Wl,-install_name,@rpath/cipherlite.node");
    }
    napi_build::setup();
}
