//! Test support: what key material a call left on the stack below its caller's frame (the
//! page passes spill key and state blocks; `cargo test --release --lib on_the_stack` in CI,
//! on x86-64 and on aarch64 under qemu).

/// Copies the `out.len()` bytes below this function's stack pointer, where the frames
/// of the caller's previous call lived, into `out`.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn stack_below(out: &mut [u8]) {
    // SAFETY: a test thread's stack is mapped well below the current frame (the scrub
    // before the probed call touched 128 KiB of it); reads only, into `out`.
    unsafe {
        core::arch::asm!(
            "mov rsi, rsp",
            "sub rsi, rcx",
            "rep movsb",
            inout("rdi") out.as_mut_ptr() => _,
            inout("rcx") out.len() => _,
            out("rsi") _,
        );
    }
}

/// Copies the `out.len()` bytes below this function's stack pointer, where the frames
/// of the caller's previous call lived, into `out` (byte by byte: `out.len()` is not 0).
#[cfg(target_arch = "aarch64")]
#[inline(never)]
fn stack_below(out: &mut [u8]) {
    assert!(!out.is_empty());
    // SAFETY: as on x86-64, a test thread's stack is mapped well below the current frame
    // (the scrub before the probed call touched 128 KiB of it); the loop reads
    // `out.len()` bytes from `sp - out.len()` up to `sp` and writes them to `out` only,
    // with `out.len() > 0`, so it stops after `out.len()` bytes.
    unsafe {
        core::arch::asm!(
            "mov {src}, sp",
            "sub {src}, {src}, {len}",
            "2:",
            "ldrb {tmp:w}, [{src}], #1",
            "strb {tmp:w}, [{dst}], #1",
            "subs {len}, {len}, #1",
            "b.ne 2b",
            src = out(reg) _,
            dst = inout(reg) out.as_mut_ptr() => _,
            len = inout(reg) out.len() => _,
            tmp = out(reg) _,
        );
    }
}

/// The 32 KiB of stack below this frame after `call` returned, scrubbed before it ran.
/// Meaningful in release builds (`cargo test --release … on_the_stack`, run by CI); in
/// debug builds the page passes scrub more stack after themselves than their unoptimised
/// frames take.
#[inline(never)]
pub(crate) fn stack_left_by(call: impl FnOnce()) -> Vec<u8> {
    crate::scrub_stack();
    let mut stack = vec![0u8; 32 * 1024];
    call();
    stack_below(&mut stack);
    stack
}

/// Whether the 8 bytes `word` lie anywhere in `stack`.
pub(crate) fn holds(stack: &[u8], word: &[u8]) -> bool {
    stack.windows(8).any(|w| w == word)
}

/// Key material to look for on the stack: `bytes` in 8-byte words, each named.
pub(crate) fn add_words(secrets: &mut Vec<(String, Vec<u8>)>, name: &str, bytes: &[u8]) {
    for (i, word) in bytes.chunks(8).enumerate() {
        secrets.push((format!("{name}, word {i}"), word.to_vec()));
    }
}

/// Which of `secrets` `stack` holds.
pub(crate) fn secrets_left(secrets: &[(String, Vec<u8>)], stack: &[u8]) -> Vec<String> {
    secrets
        .iter()
        .filter(|(_, word)| holds(stack, word))
        .map(|(name, _)| name.clone())
        .collect()
}
