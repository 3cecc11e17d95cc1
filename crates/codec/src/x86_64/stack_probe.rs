//! Test support: what key material a call left on the stack below its caller's frame (the
//! page passes spill vector registers; `cargo test --release --lib on_the_stack` in CI).

/// Copies the `out.len()` bytes below this function's stack pointer, where the frames
/// of the caller's previous call lived, into `out`.
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

/// The 32 KiB of stack below this frame after `call` returned, scrubbed before it ran.
/// Meaningful in release builds (`cargo test --release … on_the_stack`, run by CI): in
/// debug builds the page passes scrub half a megabyte of stack after themselves,
/// whatever they left.
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
