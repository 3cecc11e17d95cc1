//! Stack scrubbing: overwriting with zeros the stack where functions that handled key
//! material left their locals.

/// Bytes of stack [`scrub_stack`] overwrites below its caller's frame.
pub const STACK_SCRUB_BYTES: usize = 128 * 1024;

/// Overwrites with zeros the stack below the caller's frame, where the functions it called
/// left their locals: copies of the raw key moved on their way to the heap box, the AES key
/// schedule built before it was boxed, HMAC pads. Call it after any call chain that
/// handled key material (opening an encrypted database, closing one), from a frame above it.
#[inline(never)]
pub fn scrub_stack() {
    let mut area = [0u8; STACK_SCRUB_BYTES];
    zeroize::Zeroize::zeroize(&mut area[..]);
    core::hint::black_box(&area);
}

/// Bytes of stack [`scrub_stack_after_page_pass`] overwrites below its caller's frame: a
/// few hundred bytes hold an optimised pass's frames; unoptimised, the SHA-512 rounds keep
/// every temporary in a stack slot of their own (a 140 KiB frame for the stitched pass),
/// deeper than what [`scrub_stack`] covers at close.
#[cfg(target_arch = "x86_64")]
const PAGE_PASS_SCRUB_BYTES: usize = if cfg!(debug_assertions) {
    4 * STACK_SCRUB_BYTES
} else {
    8 * 1024
};

/// Wipes the stack the x86-64 page passes used (`StitchedKeys::encrypt_and_mac`, `mac`,
/// `encrypt_and_mac_lanes`, `mac4`), in every build: they keep spill copies of the AES
/// round keys (the first two are the key itself) and the HMAC states in their frames,
/// which would otherwise stay there for the connection's lifetime. Which values the
/// compiler spills is its choice (a barrier moved in the SHA-512 rounds once made the
/// optimised one-page pass copy all 15 round keys into its frame), so the frames are wiped
/// rather than each value. Optimised, the wipe is small next to the pass it follows.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub(crate) fn scrub_stack_after_page_pass() {
    let mut area = [0u8; PAGE_PASS_SCRUB_BYTES];
    zeroize::Zeroize::zeroize(&mut area[..]);
    core::hint::black_box(&area);
}

/// Bytes of stack [`scrub_stack_after_aegis_pass`] overwrites: the AES-NI AEGIS pass
/// (`x86_64::aegis`) keeps its states in vector registers and spills few; unoptimised,
/// every temporary has a slot of its own.
#[cfg(target_arch = "x86_64")]
const AEGIS_PASS_SCRUB_BYTES: usize = if cfg!(debug_assertions) {
    PAGE_PASS_SCRUB_BYTES
} else {
    2 * 1024
};

/// Wipes the stack the AES-NI AEGIS page pass used: spilled state blocks of the database
/// key's stream (AEGIS' update is invertible, so such a state gives the key back) and of
/// the page's one-time key. A plain zero fill the optimiser must keep (`black_box` reads
/// it), not `zeroize`'s byte-wise volatile stores, which would cost more than the pass.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub(crate) fn scrub_stack_after_aegis_pass() {
    let area = [0u8; AEGIS_PASS_SCRUB_BYTES];
    core::hint::black_box(&area);
}

/// Bytes of stack [`scrub_stack_after_portable_pass`] overwrites below its caller's frame:
/// optimised, the portable passes' frames (the AEGIS states of the widest X variant and
/// the one-time key, the `aes` crate's CBC with its round keys, the `hmac` crate's SHA-512
/// state and message schedule) take a few hundred bytes to a couple of KiB; unoptimised,
/// every temporary of the AES and SHA-512 rounds has a slot of its own.
const PORTABLE_PASS_SCRUB_BYTES: usize = if cfg!(debug_assertions) {
    16 * 1024
} else {
    8 * 1024
};

/// Wipes the stack the portable page passes used, on every architecture (on aarch64 they
/// are the only ones): the AEGIS states and one-time key of `aegis_page::portable_pass`
/// (the database key's state, like the AES-NI pass's, gives the key back), the AES round
/// keys the `aes` crate's CBC loads (the first two are the key itself: ARMv8's AES
/// instructions take them from vector registers the compiler spills) and the HMAC states
/// the `hmac` crate copies. The caller calls it right after the pass returns, from the
/// frame that called it; the pass is `#[inline(never)]` so that its frame lies below.
/// A plain zero fill the optimiser must keep, as [`scrub_stack_after_aegis_pass`].
#[inline(never)]
pub(crate) fn scrub_stack_after_portable_pass() {
    let area = [0u8; PORTABLE_PASS_SCRUB_BYTES];
    core::hint::black_box(&area);
}
