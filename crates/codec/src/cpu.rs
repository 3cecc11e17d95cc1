//! Which implementation of AES and SHA-512 the RustCrypto crates picked on this CPU, for
//! benchmark reports and diagnostics. Detection mirrors what `aes` 0.9 and `sha2` 0.11 do
//! at run time (both use `cpufeatures`); it does not see the crates' `--cfg` overrides that
//! force a software backend, except `aes_backend = "soft"`, which
//! [`aes::hardware_accelerated`] reports.

use std::sync::OnceLock;

/// A one-line description such as `"AES-256: AES-NI + VAES (AVX-512); SHA-512: AVX2; page
/// HMACs: sha2 crate, after CBC on writes"`.
///
/// x86 SHA extensions (`sha_ni`) cover SHA-1 and SHA-256 only; SHA-512 runs on AVX2 there
/// (or plain software), and on ARMv8.2 with the SHA-512 instructions (`sha3` feature).
pub fn cpu_features() -> &'static str {
    static DESCRIPTION: OnceLock<String> = OnceLock::new();
    DESCRIPTION.get_or_init(|| {
        format!(
            "AES-256: {}; SHA-512: {}; page HMACs: {}",
            aes_backend(),
            sha512_backend(),
            page_hmacs()
        )
    })
}

/// How pages are authenticated (see `backend`): the `sha2` crate named before it
/// still derives keys.
fn page_hmacs() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    if crate::x86_64::stitched::available() {
        return "own SHA-512 (schedule in SSE/AVX, BMI2 rounds), stitched with CBC on writes";
    }
    "sha2 crate, after CBC on writes"
}

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
fn aes_backend() -> &'static str {
    cpufeatures::new!(vaes512_cpuid, "avx512f", "vaes");
    cpufeatures::new!(vaes256_cpuid, "vaes");
    if !aes::hardware_accelerated() {
        "bitsliced software (no AES-NI)"
    } else if vaes512_cpuid::get() {
        "AES-NI + VAES (AVX-512)"
    } else if vaes256_cpuid::get() {
        "AES-NI + VAES (AVX2)"
    } else {
        "AES-NI"
    }
}

#[cfg(target_arch = "aarch64")]
fn aes_backend() -> &'static str {
    if aes::hardware_accelerated() {
        "ARMv8 AES instructions"
    } else {
        "bitsliced software (no ARMv8 AES)"
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64")))]
fn aes_backend() -> &'static str {
    "bitsliced software"
}

#[cfg(any(target_arch = "x86_64", target_arch = "x86"))]
fn sha512_backend() -> &'static str {
    cpufeatures::new!(avx2_cpuid, "avx2");
    if avx2_cpuid::get() {
        "AVX2"
    } else {
        "portable software"
    }
}

#[cfg(target_arch = "aarch64")]
fn sha512_backend() -> &'static str {
    cpufeatures::new!(sha3_hwcap, "sha3");
    if sha3_hwcap::get() {
        "ARMv8 SHA-512 instructions"
    } else {
        "portable software"
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64")))]
fn sha512_backend() -> &'static str {
    "portable software"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_names_both_primitives() {
        let text = cpu_features();
        assert!(text.starts_with("AES-256: "), "{text}");
        assert!(text.contains("; SHA-512: "), "{text}");
        assert!(text.contains("; page HMACs: "), "{text}");
        // Stable across calls (computed once).
        assert!(core::ptr::eq(text, cpu_features()));
    }

    /// On aarch64 the `aes` crate (which every AES and AEGIS pass goes through) takes the
    /// ARMv8 AES instructions exactly when the kernel reports them (`AT_HWCAP`, as the standard
    /// library reads it), and the description names the path taken. The arm64 run under
    /// qemu (`scripts/test-targets.js --rust-tests`) sets `CIPHERLITE_EXPECT_ARMV8_AES`:
    /// qemu's default CPU has AES, so there the instructions must be what the tests exercise.
    #[cfg(target_arch = "aarch64")]
    #[test]
    fn aes_path_is_the_armv8_instructions_when_the_cpu_has_them() {
        let cpu_has_aes = std::arch::is_aarch64_feature_detected!("aes");
        assert_eq!(aes::hardware_accelerated(), cpu_has_aes);
        let expected = if cpu_has_aes {
            "AES-256: ARMv8 AES instructions; "
        } else {
            "AES-256: bitsliced software (no ARMv8 AES); "
        };
        assert!(cpu_features().starts_with(expected), "{}", cpu_features());
        if std::env::var_os("CIPHERLITE_EXPECT_ARMV8_AES").is_some() {
            assert!(
                cpu_has_aes,
                "this run expects a CPU with the ARMv8 AES instructions"
            );
        }
    }
}
