//! The other AEGIS algorithms SQLite3 Multiple Ciphers' `aegis` scheme offers
//! (`PRAGMA algorithm`, docs/aegis-format.md §1): AEGIS-128L and its multi-lane forms
//! AEGIS-128X2 and AEGIS-128X4, and the multi-lane AEGIS-256X2 and AEGIS-256X4
//! (draft-irtf-cfrg-aegis-aead; as libaegis computes them, which SQLite3MC compiles in:
//! `src/aegis/aegis128x2/aegis128x2_common.h` and its siblings). An X variant with `D`
//! lanes runs `D` AEGIS-128L (or AEGIS-256) states side by side, each lane's state
//! initialised with a context block `[lane, D - 1, 0 …]` XORed into two of its blocks
//! before every initialisation update, its message blocks interleaved lane by lane, and its
//! tag the XOR of the lanes' tags. With `D = 1` the context is zero and the algorithm is
//! AEGIS-128L (or AEGIS-256) itself.
//!
//! Portable and constant time, as `aegis256`: every AES round is the `aes` crate's
//! (`aes::hazmat::cipher_round_par`, eight blocks per call: AES-NI or ARMv8 AES when the
//! CPU has them, else RustCrypto's fixsliced software round, with no table and no
//! secret-dependent branch), and nothing branches on or indexes by the key, the nonce or
//! the data.
//!
//! [`PageAead`] is what the page scheme (`aegis_page`) asks of each of the six: a state
//! initialised with a key and nonce, detached encryption and decryption, a tag check
//! without plaintext, the 256-bit tag, and the key stream.

use aes::hazmat::{cipher_round_par, Block8};
use aes::Block;
use zeroize::Zeroize;

use crate::aegis256::{Aegis256, AEGIS256_KEY_SIZE, AEGIS256_NONCE_SIZE, AEGIS256_TAG_SIZE};

type B = [u8; 16];

const C0: B = [
    0x00, 0x01, 0x01, 0x02, 0x03, 0x05, 0x08, 0x0d, 0x15, 0x22, 0x37, 0x59, 0x90, 0xe9, 0x79, 0x62,
];
const C1: B = [
    0xdb, 0x3d, 0x18, 0x55, 0x6d, 0xc2, 0x2f, 0xf1, 0x20, 0x11, 0x31, 0x42, 0x73, 0xb5, 0x28, 0xdd,
];

/// The largest rate (bytes absorbed per update): AEGIS-128X4's two blocks in four lanes.
const MAX_RATE: usize = 128;
/// The most AES rounds one update runs: AEGIS-128X4's eight blocks in four lanes.
const MAX_ROUNDS: usize = 32;

fn xor(a: &B, b: &B) -> B {
    (u128::from_ne_bytes(*a) ^ u128::from_ne_bytes(*b)).to_ne_bytes()
}

fn and(a: &B, b: &B) -> B {
    (u128::from_ne_bytes(*a) & u128::from_ne_bytes(*b)).to_ne_bytes()
}

fn block_at(bytes: &[u8], at: usize) -> B {
    let mut b = [0u8; 16];
    b.copy_from_slice(&bytes[at..at + 16]);
    b
}

/// `blocks[i] = AESRound(blocks[i], keys[i])` for every `i`, eight rounds per call of the
/// `aes` crate's parallel round.
fn aes_rounds(blocks: &mut [B], keys: &[B]) {
    for (blocks, keys) in blocks.chunks_mut(8).zip(keys.chunks(8)) {
        let mut input = Block8::default();
        let mut round_keys = Block8::default();
        for ((slot, key_slot), (block, key)) in input
            .iter_mut()
            .zip(round_keys.iter_mut())
            .zip(blocks.iter().zip(keys))
        {
            *slot = Block::from(*block);
            *key_slot = Block::from(*key);
        }
        cipher_round_par(&mut input, &round_keys);
        for (block, out) in blocks.iter_mut().zip(input.iter()) {
            block.copy_from_slice(out);
        }
        // A memset the optimiser must keep (`zeroize`'s byte-wise volatile stores, on every
        // update, would cost more than the rounds).
        for block in input.iter_mut().chain(round_keys.iter_mut()) {
            block.fill(0);
        }
        core::hint::black_box((&input, &round_keys));
    }
}

/// Clears an update's copies of the state (a memset the optimiser must keep: `zeroize`'s
/// byte-wise volatile stores cost more than the update).
fn wipe(blocks: &mut [B], keys: &mut [B]) {
    blocks.fill([0; 16]);
    keys.fill([0; 16]);
    core::hint::black_box((blocks, keys));
}

/// The context block of lane `lane` of `lanes`: `[lane, lanes - 1, 0 …]` (zero for one lane).
fn context(lane: usize, lanes: usize) -> B {
    let mut c = [0u8; 16];
    c[0] = lane as u8;
    c[1] = (lanes - 1) as u8;
    c
}

/// The two little-endian 64-bit bit lengths `Finalize` absorbs.
fn lengths(ad_len: usize, msg_len: usize) -> B {
    let mut u = [0u8; 16];
    u[..8].copy_from_slice(&((ad_len as u64) << 3).to_le_bytes());
    u[8..].copy_from_slice(&((msg_len as u64) << 3).to_le_bytes());
    u
}

/// XORs lane `i`'s context block into state blocks `a` and `b` of lane `i`, for every
/// lane: what an X variant does before each initialisation update.
fn add_context<const N: usize, const D: usize>(s: &mut [[B; D]; N], a: usize, b: usize) {
    for block in [a, b] {
        for (lane, x) in s[block].iter_mut().enumerate() {
            *x = xor(x, &context(lane, D));
        }
    }
}

/// `Update` in every lane of a state of `N` blocks: `S'j = AESRound(S(j-1), Sj)`, the
/// message XORed into the round key of each block `j` that `messages` lists as `(j, M)`.
fn rotate_rounds<const N: usize, const D: usize>(
    s: &mut [[B; D]; N],
    messages: &[(usize, &[B; D])],
) {
    let mut blocks = [[0u8; 16]; MAX_ROUNDS];
    let mut keys = [[0u8; 16]; MAX_ROUNDS];
    for j in 0..N {
        for i in 0..D {
            blocks[j * D + i] = s[(j + N - 1) % N][i];
            keys[j * D + i] = s[j][i];
        }
    }
    for &(j, m) in messages {
        for i in 0..D {
            keys[j * D + i] = xor(&keys[j * D + i], &m[i]);
        }
    }
    aes_rounds(&mut blocks[..N * D], &keys[..N * D]);
    for j in 0..N {
        for i in 0..D {
            s[j][i] = blocks[j * D + i];
        }
    }
    wipe(&mut blocks[..N * D], &mut keys[..N * D]);
}

/// The XOR, over every lane, of state blocks `from..to`: a tag is made of such sums.
fn xor_lanes<const N: usize, const D: usize>(s: &[[B; D]; N], from: usize, to: usize) -> B {
    let mut sum = [0u8; 16];
    for blocks in &s[from..to] {
        for block in blocks {
            sum = xor(&sum, block);
        }
    }
    sum
}

/// The 256-bit tag of a state of `N` blocks: the lanes' XOR of its first half of blocks,
/// then of its second half.
fn tag256<const N: usize, const D: usize>(s: &[[B; D]; N]) -> [u8; 32] {
    let mut tag = [0u8; 32];
    tag[..16].copy_from_slice(&xor_lanes(s, 0, N / 2));
    tag[16..].copy_from_slice(&xor_lanes(s, N / 2, N));
    tag
}

/// A state's rate-sized steps, from which [`run`] builds encryption, decryption and the
/// ciphertext-only pass.
trait Rate {
    /// Bytes absorbed per update.
    const RATE: usize;
    /// The key stream a rate-sized message block is XORed with, into `z[..RATE]`.
    fn keystream(&self, z: &mut [u8; MAX_RATE]);
    /// `Update` with the rate-sized message block `m[..RATE]`.
    fn absorb_block(&mut self, m: &[u8; MAX_RATE]);

    /// Absorbs associated data (zero-padded to whole rate blocks; the page scheme has
    /// none, the draft's test vectors do).
    #[cfg(test)]
    fn absorb(&mut self, ad: &[u8]) {
        for chunk in ad.chunks(Self::RATE) {
            let mut m = [0u8; MAX_RATE];
            m[..chunk.len()].copy_from_slice(chunk);
            self.absorb_block(&m);
        }
    }
}

/// Encrypts (`encrypt`) or decrypts `data` in place in rate-sized blocks, the last one
/// zero-padded: the plaintext is absorbed, its padding as zeros, as the draft specifies.
fn run<S: Rate>(state: &mut S, data: &mut [u8], encrypt: bool) {
    let mut m = [0u8; MAX_RATE];
    let mut z = [0u8; MAX_RATE];
    for chunk in data.chunks_mut(S::RATE) {
        let n = chunk.len();
        if encrypt {
            state.keystream(&mut z);
            m[..n].copy_from_slice(chunk);
            m[n..S::RATE].fill(0);
            state.absorb_block(&m);
            for ((out, p), k) in chunk.iter_mut().zip(&m[..n]).zip(&z[..n]) {
                *out = p ^ k;
            }
        } else {
            absorb_decrypted(state, chunk, &mut m, &mut z);
            chunk.copy_from_slice(&m[..n]);
        }
    }
    m.zeroize();
    z.zeroize();
}

/// Decryption's step without the write: absorbs read-only ciphertext (a tag check that
/// keeps no plaintext).
fn absorb_ciphertext<S: Rate>(state: &mut S, ciphertext: &[u8]) {
    let mut m = [0u8; MAX_RATE];
    let mut z = [0u8; MAX_RATE];
    for chunk in ciphertext.chunks(S::RATE) {
        absorb_decrypted(state, chunk, &mut m, &mut z);
    }
    m.zeroize();
    z.zeroize();
}

/// One decryption step: the plaintext of the ciphertext block `c` (at most a rate) into
/// `m[..c.len()]`, the rest of the rate zero, absorbed into the state (`z`: scratch for the
/// key stream).
fn absorb_decrypted<S: Rate>(
    state: &mut S,
    c: &[u8],
    m: &mut [u8; MAX_RATE],
    z: &mut [u8; MAX_RATE],
) {
    let n = c.len();
    state.keystream(z);
    for ((p, c), k) in m[..n].iter_mut().zip(c).zip(&z[..n]) {
        *p = c ^ k;
    }
    m[n..S::RATE].fill(0);
    state.absorb_block(m);
}

/// AEGIS-128L (`D = 1`), AEGIS-128X2 (`D = 2`) and AEGIS-128X4 (`D = 4`): eight state
/// blocks per lane, 16-byte key and nonce, `32 D` bytes absorbed per update. Wiped when
/// dropped.
pub(crate) struct Aegis128X<const D: usize> {
    /// `s[j][i]`: state block `j` of lane `i`.
    s: [[B; D]; 8],
}

impl<const D: usize> Drop for Aegis128X<D> {
    fn drop(&mut self) {
        self.s.zeroize();
    }
}

/// AEGIS-128L.
pub(crate) type Aegis128L = Aegis128X<1>;

impl<const D: usize> Aegis128X<D> {
    pub(crate) fn new(key: &[u8; 16], nonce: &[u8; 16]) -> Self {
        let (k, n) = (*key, *nonce);
        let kn = xor(&k, &n);
        let lane = [kn, C1, C0, C1, kn, xor(&k, &C0), xor(&k, &C1), xor(&k, &C0)];
        let mut state = Aegis128X {
            s: core::array::from_fn(|j| [lane[j]; D]),
        };
        let (nonces, keys) = ([n; D], [k; D]);
        for _ in 0..10 {
            add_context(&mut state.s, 3, 7);
            state.update(&nonces, &keys);
        }
        state
    }

    /// `Update(M0, M1)` in every lane: `S'0 = AESRound(S7, S0 ^ M0)`, `S'4 = AESRound(S3,
    /// S4 ^ M1)`, `S'j = AESRound(S(j-1), Sj)` otherwise.
    fn update(&mut self, m0: &[B; D], m1: &[B; D]) {
        rotate_rounds(&mut self.s, &[(0, m0), (4, m1)]);
    }

    /// `Finalize`: the state after the seven length updates.
    fn finalize_state(&mut self, ad_len: usize, msg_len: usize) {
        let u = lengths(ad_len, msg_len);
        let t: [B; D] = core::array::from_fn(|i| xor(&self.s[2][i], &u));
        for _ in 0..7 {
            self.update(&t, &t);
        }
    }

    /// The 256-bit tag: `XOR over lanes (S0 ^ S1 ^ S2 ^ S3) ‖ XOR over lanes (S4 ^ S5 ^ S6 ^
    /// S7)`.
    fn tag256(&self) -> [u8; 32] {
        tag256(&self.s)
    }

    /// The 128-bit tag (the draft's other length; for its test vectors): `XOR over lanes
    /// (S0 ^ … ^ S6)`.
    #[cfg(test)]
    fn tag128(&self) -> B {
        xor_lanes(&self.s, 0, 7)
    }
}

impl<const D: usize> Rate for Aegis128X<D> {
    const RATE: usize = 32 * D;

    /// `z0 = S6 ^ S1 ^ (S2 & S3)` for the first `D` blocks, `z1 = S2 ^ S5 ^ (S6 & S7)` for
    /// the next `D`, lane by lane.
    fn keystream(&self, z: &mut [u8; MAX_RATE]) {
        let s = &self.s;
        for i in 0..D {
            let z0 = xor(&xor(&s[6][i], &s[1][i]), &and(&s[2][i], &s[3][i]));
            let z1 = xor(&xor(&s[2][i], &s[5][i]), &and(&s[6][i], &s[7][i]));
            z[16 * i..16 * i + 16].copy_from_slice(&z0);
            z[16 * (D + i)..16 * (D + i) + 16].copy_from_slice(&z1);
        }
    }

    fn absorb_block(&mut self, m: &[u8; MAX_RATE]) {
        let m0: [B; D] = core::array::from_fn(|i| block_at(m, 16 * i));
        let m1: [B; D] = core::array::from_fn(|i| block_at(m, 16 * (D + i)));
        self.update(&m0, &m1);
    }
}

/// AEGIS-256X2 (`D = 2`) and AEGIS-256X4 (`D = 4`); `D = 1` is AEGIS-256 (the page
/// scheme uses `aegis256::Aegis256` for it). Six state blocks per lane, 32-byte key and
/// nonce, `16 D` bytes absorbed per update. Wiped when dropped.
pub(crate) struct Aegis256X<const D: usize> {
    /// `s[j][i]`: state block `j` of lane `i`.
    s: [[B; D]; 6],
}

impl<const D: usize> Drop for Aegis256X<D> {
    fn drop(&mut self) {
        self.s.zeroize();
    }
}

impl<const D: usize> Aegis256X<D> {
    pub(crate) fn new(key: &[u8; 32], nonce: &[u8; 32]) -> Self {
        let (k0, k1) = (block_at(key, 0), block_at(key, 16));
        let (n0, n1) = (block_at(nonce, 0), block_at(nonce, 16));
        let (k0n0, k1n1) = (xor(&k0, &n0), xor(&k1, &n1));
        let lane = [k0n0, k1n1, C1, C0, xor(&k0, &C0), xor(&k1, &C1)];
        let mut state = Aegis256X {
            s: core::array::from_fn(|j| [lane[j]; D]),
        };
        let messages = [[k0; D], [k1; D], [k0n0; D], [k1n1; D]];
        for _ in 0..4 {
            for m in &messages {
                add_context(&mut state.s, 3, 5);
                state.update(m);
            }
        }
        state
    }

    /// `Update(M)` in every lane: `S'0 = AESRound(S5, S0 ^ M)`, `S'j = AESRound(S(j-1), Sj)`.
    fn update(&mut self, m: &[B; D]) {
        rotate_rounds(&mut self.s, &[(0, m)]);
    }

    fn finalize_state(&mut self, ad_len: usize, msg_len: usize) {
        let u = lengths(ad_len, msg_len);
        let t: [B; D] = core::array::from_fn(|i| xor(&self.s[3][i], &u));
        for _ in 0..7 {
            self.update(&t);
        }
    }

    /// `XOR over lanes (S0 ^ S1 ^ S2) ‖ XOR over lanes (S3 ^ S4 ^ S5)`.
    fn tag256(&self) -> [u8; 32] {
        tag256(&self.s)
    }

    /// `XOR over lanes (S0 ^ … ^ S5)`.
    #[cfg(test)]
    fn tag128(&self) -> B {
        xor_lanes(&self.s, 0, 6)
    }
}

impl<const D: usize> Rate for Aegis256X<D> {
    const RATE: usize = 16 * D;

    /// `S1 ^ S4 ^ S5 ^ (S2 & S3)`, lane by lane.
    fn keystream(&self, z: &mut [u8; MAX_RATE]) {
        let s = &self.s;
        for i in 0..D {
            let zi = xor(
                &xor(&s[1][i], &s[4][i]),
                &xor(&s[5][i], &and(&s[2][i], &s[3][i])),
            );
            z[16 * i..16 * i + 16].copy_from_slice(&zi);
        }
    }

    fn absorb_block(&mut self, m: &[u8; MAX_RATE]) {
        let m: [B; D] = core::array::from_fn(|i| block_at(m, 16 * i));
        self.update(&m);
    }
}

/// What the page scheme needs of an AEGIS algorithm, with no associated data: a state from
/// a key and nonce (`KEY_SIZE`, `NONCE_SIZE` bytes), the region encrypted or decrypted in
/// place (the caller compares the tag before using a plaintext) or only absorbed, the
/// 256-bit tag, and the key stream (libaegis' `*_stream`: the encryption of zeros).
pub(crate) trait PageAead: Sized {
    const KEY_SIZE: usize;
    const NONCE_SIZE: usize;
    /// `key` and `nonce` are exactly `KEY_SIZE` and `NONCE_SIZE` bytes.
    fn init(key: &[u8], nonce: &[u8]) -> Self;
    fn encrypt_in_place(&mut self, data: &mut [u8]);
    fn decrypt_in_place(&mut self, data: &mut [u8]);
    fn absorb_ciphertext(&mut self, ciphertext: &[u8]);
    /// The 256-bit tag after `msg_len` bytes of message (and no associated data).
    fn tag(self, msg_len: usize) -> [u8; AEGIS256_TAG_SIZE];
    fn stream(mut self, out: &mut [u8]) {
        out.fill(0);
        self.encrypt_in_place(out);
    }
}

impl PageAead for Aegis256 {
    const KEY_SIZE: usize = AEGIS256_KEY_SIZE;
    const NONCE_SIZE: usize = AEGIS256_NONCE_SIZE;
    fn init(key: &[u8], nonce: &[u8]) -> Self {
        let mut k = [0u8; AEGIS256_KEY_SIZE];
        let mut n = [0u8; AEGIS256_NONCE_SIZE];
        k.copy_from_slice(key);
        n.copy_from_slice(nonce);
        let state = Aegis256::new(&k, &n);
        k.zeroize();
        n.zeroize();
        state
    }
    fn encrypt_in_place(&mut self, data: &mut [u8]) {
        Aegis256::encrypt_in_place(self, data);
    }
    fn decrypt_in_place(&mut self, data: &mut [u8]) {
        Aegis256::decrypt_in_place(self, data);
    }
    fn absorb_ciphertext(&mut self, ciphertext: &[u8]) {
        Aegis256::absorb_ciphertext(self, ciphertext);
    }
    fn tag(self, msg_len: usize) -> [u8; AEGIS256_TAG_SIZE] {
        self.finalize(0, msg_len)
    }
    fn stream(self, out: &mut [u8]) {
        Aegis256::stream(self, out);
    }
}

macro_rules! page_aead {
    ($ty:ty, $n:literal) => {
        impl<const D: usize> PageAead for $ty {
            const KEY_SIZE: usize = $n;
            const NONCE_SIZE: usize = $n;
            fn init(key: &[u8], nonce: &[u8]) -> Self {
                let mut k = [0u8; $n];
                let mut n = [0u8; $n];
                k.copy_from_slice(key);
                n.copy_from_slice(nonce);
                let state = Self::new(&k, &n);
                k.zeroize();
                n.zeroize();
                state
            }
            fn encrypt_in_place(&mut self, data: &mut [u8]) {
                run(self, data, true);
            }
            fn decrypt_in_place(&mut self, data: &mut [u8]) {
                run(self, data, false);
            }
            fn absorb_ciphertext(&mut self, ciphertext: &[u8]) {
                absorb_ciphertext(self, ciphertext);
            }
            fn tag(mut self, msg_len: usize) -> [u8; AEGIS256_TAG_SIZE] {
                self.finalize_state(0, msg_len);
                self.tag256()
            }
        }
    };
}

page_aead!(Aegis128X<D>, 16);
page_aead!(Aegis256X<D>, 32);

#[cfg(test)]
mod tests {
    //! The draft's test vectors, as the `aegis` crate 0.9.20 ships them
    //! (`src/test-vectors/aegis-*-test-vectors.json`), for each algorithm: the update
    //! step (AEGIS-128L), the initial state (the X variants), encryption with and without
    //! associated data, partial blocks, both tag lengths, and the vectors that must fail.
    use super::*;

    const AEGIS128X4_CT: &str = "e836118562f4479c9d35c17356a833114c21f9aa39e4dda5e5c87f4152a00fce9a7c38f832eafe8b1c12f8a7cf12a81a1ad8a9c24ba9dedfbdaa586ffea67ddc801ea97d9ab4a872f42d0e352e2713dacd609f9442c17517c5a29daf3e2a3fac4ff6b1380c4e46df7b086af6ce6bc1ed594b8dd64aed2a7e";
    const AEGIS256X4_CT: &str = "bfc2085b7e8017da99b0b6d646ae4d01f4ba8f2e7dfca1d759ae48a135139b9aaac6b4f5db810d426be1fdaff4e1454153a34b11da78ed7e418ee2ee9853042e95536aecbb694cea1b16a478eb0d4d1bf6509b1ce652a45af58e0e46ffccfa2d0426e702391d2ff5813808b81748a490dd656465fed61f09";

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn b(s: &str) -> B {
        hex(s).try_into().expect("16 bytes")
    }

    /// One encryption vector: `(key, nonce, ad, msg, ct, tag128, tag256)`.
    type Vector = (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        &'static str,
    );

    /// What every algorithm's state answers in the checks below.
    trait Testable: PageAead {
        fn make(key: &[u8], nonce: &[u8]) -> Self;
        fn ad(&mut self, ad: &[u8]);
        fn tags(self, ad_len: usize, msg_len: usize) -> (B, [u8; 32]);
    }

    macro_rules! testable {
        ($ty:ty) => {
            impl<const D: usize> Testable for $ty {
                fn make(key: &[u8], nonce: &[u8]) -> Self {
                    Self::init(key, nonce)
                }
                fn ad(&mut self, ad: &[u8]) {
                    self.absorb(ad);
                }
                fn tags(mut self, ad_len: usize, msg_len: usize) -> (B, [u8; 32]) {
                    self.finalize_state(ad_len, msg_len);
                    (self.tag128(), self.tag256())
                }
            }
        };
    }
    testable!(Aegis128X<D>);
    testable!(Aegis256X<D>);

    fn check<S: Testable>(v: Vector) {
        let (key, nonce, ad, msg, ct, tag128, tag256) = v;
        let (key, nonce, ad, msg) = (hex(key), hex(nonce), hex(ad), hex(msg));
        let want = (b(tag128), hex(tag256));

        let mut state = S::make(&key, &nonce);
        state.ad(&ad);
        let mut data = msg.clone();
        state.encrypt_in_place(&mut data);
        assert_eq!(data, hex(ct), "ciphertext");
        let (t128, t256) = state.tags(ad.len(), msg.len());
        assert_eq!((t128, t256.to_vec()), want, "tags after encryption");

        let mut state = S::make(&key, &nonce);
        state.ad(&ad);
        state.decrypt_in_place(&mut data);
        assert_eq!(data, msg, "plaintext");
        let (t128, t256) = state.tags(ad.len(), msg.len());
        assert_eq!((t128, t256.to_vec()), want, "tags after decryption");

        let mut state = S::make(&key, &nonce);
        state.ad(&ad);
        state.absorb_ciphertext(&hex(ct));
        let (t128, t256) = state.tags(ad.len(), msg.len());
        assert_eq!((t128, t256.to_vec()), want, "tags of the ciphertext alone");

        if ad.is_empty() {
            let mut state = S::make(&key, &nonce);
            let mut data = msg.clone();
            state.encrypt_in_place(&mut data);
            assert_eq!(state.tag(msg.len()).to_vec(), want.1, "PageAead::tag");
        }
    }

    /// A vector that must not verify: decrypting `ct` gives neither tag.
    fn refused<S: Testable>(v: Vector) {
        let (key, nonce, ad, _, ct, tag128, tag256) = v;
        let (key, nonce, ad, ct) = (hex(key), hex(nonce), hex(ad), hex(ct));
        let mut state = S::make(&key, &nonce);
        state.ad(&ad);
        state.absorb_ciphertext(&ct);
        let (t128, t256) = state.tags(ad.len(), ct.len());
        assert_ne!(t128, b(tag128));
        assert_ne!(t256.to_vec(), hex(tag256));
    }

    const K128: &str = "10010000000000000000000000000000";
    const N128: &str = "10000200000000000000000000000000";

    #[test]
    fn aegis128l_update_vector() {
        let mut state = Aegis128L {
            s: [
                [b("9b7e60b24cc873ea894ecc07911049a3")],
                [b("330be08f35300faa2ebf9a7b0d274658")],
                [b("7bbd5bd2b049f7b9b515cf26fbe7756c")],
                [b("c35a00f55ea86c3886ec5e928f87db18")],
                [b("9ebccafce87cab446396c4334592c91f")],
                [b("58d83e31f256371e60fc6bb257114601")],
                [b("1639b56ea322c88568a176585bc915de")],
                [b("640818ffb57dc0fbc2e72ae93457e39a")],
            ],
        };
        state.update(
            &[b("033e6975b94816879e42917650955aa0")],
            &[b("fcc1968a46b7e97861bd6e89af6aa55f")],
        );
        let want = [
            "596ab773e4433ca0127c73f60536769d",
            "790394041a3d26ab697bde865014652d",
            "38cf49e4b65248acd533041b64dd0611",
            "16d8e58748f437bfff1797f780337cee",
            "9689ecdf08228c74d7e3360cca53d0a5",
            "a21746bb193a569e331e1aa985d0d729",
            "09d714e6fcf9177a8ed1cde7e3d259a6",
            "61279ba73167f0ab76f0a11bf203bdff",
        ];
        for (j, w) in want.iter().enumerate() {
            assert_eq!(state.s[j][0], b(w), "S{j}");
        }
    }

    #[test]
    fn aegis128l_test_vectors() {
        for v in [
            (
                K128,
                N128,
                "",
                "00000000000000000000000000000000",
                "c1c0e58bd913006feba00f4b3cc3594e",
                "abe0ece80c24868a226a35d16bdae37a",
                "25835bfbb21632176cf03840687cb968cace4617af1bd0f7d064c639a5c79ee4",
            ),
            (
                K128,
                N128,
                "",
                "",
                "",
                "c2b879a67def9d74e6c14f708bbcc9b4",
                "1360dc9db8ae42455f6e5b6a9d488ea4f2184c4e12120249335c4ee84bafe25d",
            ),
            (
                K128,
                N128,
                "0001020304050607",
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f",
                "79d94593d8c2119d7e8fd9b8fc77845c5c077a05b2528b6ac54b563aed8efe84",
                "cc6f3372f6aa1bb82388d695c3962d9a",
                "022cb796fe7e0ae1197525ff67e309484cfbab6528ddef89f17d74ef8ecd82b3",
            ),
            (
                K128,
                N128,
                "0001020304050607",
                "000102030405060708090a0b0c0d",
                "79d94593d8c2119d7e8fd9b8fc77",
                "5c04b3dba849b2701effbe32c7f0fab7",
                "86f1b80bfb463aba711d15405d094baf4a55a15dbfec81a76f35ed0b9c8b04ac",
            ),
            (
                K128,
                N128,
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223242526272829",
                "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637",
                "b31052ad1cca4e291abcf2df3502e6bdb1bfd6db36798be3607b1f94d34478aa7ede7f7a990fec10",
                "7542a745733014f9474417b337399507",
                "b91e2947a33da8bee89b6794e647baf0fc835ff574aca3fc27c33be0db2aff98",
            ),
        ] {
            check::<Aegis128L>(v);
        }
        // Test vectors 6–9: a wrong key, a changed ciphertext, associated data or tag.
        for v in [
            (
                "10000200000000000000000000000000",
                "10010000000000000000000000000000",
                "0001020304050607",
                "",
                "79d94593d8c2119d7e8fd9b8fc77",
                "5c04b3dba849b2701effbe32c7f0fab7",
                "86f1b80bfb463aba711d15405d094baf4a55a15dbfec81a76f35ed0b9c8b04ac",
            ),
            (
                K128,
                N128,
                "0001020304050607",
                "",
                "79d94593d8c2119d7e8fd9b8fc78",
                "5c04b3dba849b2701effbe32c7f0fab7",
                "86f1b80bfb463aba711d15405d094baf4a55a15dbfec81a76f35ed0b9c8b04ac",
            ),
            (
                K128,
                N128,
                "0001020304050608",
                "",
                "79d94593d8c2119d7e8fd9b8fc77",
                "5c04b3dba849b2701effbe32c7f0fab7",
                "86f1b80bfb463aba711d15405d094baf4a55a15dbfec81a76f35ed0b9c8b04ac",
            ),
            (
                K128,
                N128,
                "0001020304050607",
                "",
                "79d94593d8c2119d7e8fd9b8fc77",
                "6c04b3dba849b2701effbe32c7f0fab8",
                "86f1b80bfb463aba711d15405d094baf4a55a15dbfec81a76f35ed0b9c8b04ad",
            ),
        ] {
            refused::<Aegis128L>(v);
        }
    }

    const KX128: &str = "000102030405060708090a0b0c0d0e0f";
    const NX128: &str = "101112131415161718191a1b1c1d1e1f";
    const KX256: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const NX256: &str = "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f";
    const MSG_X: &str = "040506070405060704050607040506070405060704050607040506070405060704050607040506070405060704050607040506070405060704050607040506070405060704050607040506070405060704050607040506070405060704050607040506070405060704050607040506070405060704050607";

    #[test]
    fn aegis128x2_test_vectors() {
        let state = Aegis128X::<2>::new(
            &hex(KX128).try_into().expect("key"),
            &hex(NX128).try_into().expect("nonce"),
        );
        let want = [
            [
                "a4fc1ad9a72942fb88bd2cabbba6509a",
                "80a40e392fc71084209b6c3319bdc6cc",
            ],
            [
                "380f435cf801763b1f0c2a2f7212052d",
                "73796607b59b1b650ee91c152af1f18a",
            ],
            [
                "6ee1de433ea877fa33bc0782abff2dcb",
                "b9fab2ab496e16d1facaffd5453cbf14",
            ],
            [
                "85f94b0d4263bfa86fdf45a603d8b6ac",
                "90356c8cadbaa2c969001da02e3feca0",
            ],
            [
                "09bd69ad3730174bcd2ce9a27cd1357e",
                "e610b45125796a4fcf1708cef5c4f718",
            ],
            [
                "fcdeb0cf0a87bf442fc82383ddb0f6d6",
                "61ad32a4694d6f3cca313a2d3f4687aa",
            ],
            [
                "571c207988659e2cdfbdaae77f4f37e3",
                "32e6094e217573bf91fb28c145a3efa8",
            ],
            [
                "ca549badf8faa58222412478598651cf",
                "3407279a54ce76d2e2e8a90ec5d108eb",
            ],
        ];
        for (j, lanes) in want.iter().enumerate() {
            for (i, w) in lanes.iter().enumerate() {
                assert_eq!(state.s[j][i], b(w), "V[{j},{i}]");
            }
        }
        check::<Aegis128X<2>>((
            KX128,
            NX128,
            "",
            "",
            "",
            "63117dc57756e402819a82e13eca8379",
            "b92c71fdbd358b8a4de70b27631ace90cffd9b9cfba82028412bac41b4f53759",
        ));
        check::<Aegis128X<2>>((
            KX128,
            NX128,
            "0102030401020304",
            MSG_X,
            "5795544301997f93621b278809d6331b3bfa6f18e90db12c4aa35965b5e98c5fc6fb4e54bcb6111842c20637252eff747cb3a8f85b37de80919a589fe0f24872bc926360696739e05520647e390989e1eb5fd42f99678a0276a498f8c454761c9d6aacb647ad56be62b29c22cd4b5761b38f43d5a5ee062f",
            "1aebc200804f405cab637f2adebb6d77",
            "c471876f9b4978c44f2ae1ce770cdb11a094ee3feca64e7afcd48bfe52c60eca",
        ));
    }

    #[test]
    fn aegis128x4_test_vectors() {
        let state = Aegis128X::<4>::new(
            &hex(KX128).try_into().expect("key"),
            &hex(NX128).try_into().expect("nonce"),
        );
        let want = [
            [
                "924eb07635003a37e6c6575ba8ce1929",
                "c8b6a5d91475445e936d48e794be0ce2",
                "fcd37d050e24084befe3bbb219d64760",
                "2e9f58cfb893a8800220242c373a8b18",
            ],
            [
                "1a1f60c4fab64e5471dc72edfcf6fe6b",
                "c1e525ebea2d6375a9edd045dce96381",
                "97a3e25abd228a44d4a14a6d3fe9185c",
                "c2d4cf7f4287a98744645674265d4ca8",
            ],
            [
                "7bb50c534f6ec4780530ff1cce8a16e8",
                "7b08d57557da0b5ef7b5f7d98b0ba189",
                "6bfcac34ddb68404821a4d665303cb0f",
                "d95626f6dfad1aed7467622c38529932",
            ],
            [
                "af339fd2d50ee45fc47665c647cf6586",
                "d0669b39d140f0e118a4a511efe2f95a",
                "7a94330f35c194fadda2a87e42cdeccc",
                "233b640d1f4d56e2757e72c1a9d8ecb1",
            ],
            [
                "9f93737d699ba05c11e94f2b201bef5e",
                "61caf387cf7cfd3f8300ac7680ccfd76",
                "5825a671ecef03b7a9c98a601ae32115",
                "87a1fe4d558161a8f4c38731f3223032",
            ],
            [
                "7a5aca78d636c05bbc702b2980196ab6",
                "915d868408495d07eb527789f282c575",
                "d0947bfbc1d3309cdffc9be1503aea62",
                "8834ea57a15b9fbdc0245464a4b8cbef",
            ],
            [
                "e46f4cf71a95ac45b6f0823e3aba1a86",
                "8c4ecef682fc44a8eba911b3fc7d99f9",
                "a4fb61e2c928a2ca760b8772f2ea5f2e",
                "3d34ea89da73caa3016c280500a155a3",
            ],
            [
                "85075f0080e9d618e7eb40f57c32d9f7",
                "d2ab2b320c6e93b155a3787cb83e5281",
                "0b3af0250ae36831a1b072e499929bcb",
                "5cce4d00329d69f1aae36aa541347512",
            ],
        ];
        for (j, lanes) in want.iter().enumerate() {
            for (i, w) in lanes.iter().enumerate() {
                assert_eq!(state.s[j][i], b(w), "V[{j},{i}]");
            }
        }
        check::<Aegis128X<4>>((
            KX128,
            NX128,
            "",
            "",
            "",
            "5bef762d0947c00455b97bb3af30dfa3",
            "a4b25437f4be93cfa856a2f27e4416b42cac79fd4698f2cdbe6af25673e10a68",
        ));
        check::<Aegis128X<4>>((
            KX128,
            NX128,
            "0102030401020304",
            MSG_X,
            AEGIS128X4_CT,
            "0e56ab94e2e85db80f9d54010caabfb4",
            "69abf0f64a137dd6e122478d777e98bc422823006cf57f5ee822dd78397230b2",
        ));
    }

    #[test]
    fn aegis256x2_test_vectors() {
        let state = Aegis256X::<2>::new(
            &hex(KX256).try_into().expect("key"),
            &hex(NX256).try_into().expect("nonce"),
        );
        let want = [
            [
                "eca2bf4538442e8712d4972595744039",
                "201405efa9264f07911db58101903087",
            ],
            [
                "3e536a998799408a97f3479a6f779d48",
                "0d79a7d822a5d215f78c3bf2feb33ae1",
            ],
            [
                "cf8c63d6f2b4563cdd9231107c85950e",
                "78d17ed7d8d563ff11bd202c76864839",
            ],
            [
                "d7e0707e6bfbbad913bc94b6993a9fa0",
                "097e4b1bff40d4c19cb29dfd125d62f2",
            ],
            [
                "a373cf6d537dd66bc0ef0f2f9285359f",
                "c0d0ae0c48f9df3faaf0e7be7768c326",
            ],
            [
                "9f76560dcae1efacabdcce446ae283bc",
                "bd52a6b9c8f976a26ec1409df19e8bfe",
            ],
        ];
        for (j, lanes) in want.iter().enumerate() {
            for (i, w) in lanes.iter().enumerate() {
                assert_eq!(state.s[j][i], b(w), "V[{j},{i}]");
            }
        }
        check::<Aegis256X<2>>((
            KX256,
            NX256,
            "",
            "",
            "",
            "62cdbab084c83dacdb945bb446f049c8",
            "25d7e799b49a80354c3f881ac2f1027f471a5d293052bd9997abd3ae84014bb7",
        ));
        check::<Aegis256X<2>>((
            KX256,
            NX256,
            "0102030401020304",
            MSG_X,
            "72120c2ea8236180d67859001f4729077b7064c414384fe3a7b52f1571f4f8a7d0f01e18db4f3bc0adb150702e5d147a8d36522132761b994c1bd395589e2ccf0790dfe2a3d12d61cd666b2859827739db4037dd3124c78424459376f6cac08e1a7223a2a43e398ce6385cd654a19f481cba3b8f25910b42",
            "635d391828520bf1512763f0c8f5cdbd",
            "b5668d3317159e9cc5d46e4803c3a76ad63bb42b3f47956d94f30db8cb366ad7",
        ));
    }

    #[test]
    fn aegis256x4_test_vectors() {
        let state = Aegis256X::<4>::new(
            &hex(KX256).try_into().expect("key"),
            &hex(NX256).try_into().expect("nonce"),
        );
        let want = [
            [
                "482a86e8436cd2361063a4b2702769b9",
                "d95a2be81c9245b22996f68eea0122f9",
                "0c2a3b348b1a5e256c6751377318c41e",
                "f64436a21653fe7cf2e0829a177db383",
            ],
            [
                "e705e8866267717d96092e58e78b574c",
                "d1dd412142df9806cc267af2fe1d830e",
                "30e7dfd3c9941b8394e95bdf5bac99d9",
                "9f27186f8a4fab86820689822c3c74d2",
            ],
            [
                "e1aa6af5d9e31dde8d94a48a0810fa89",
                "63555cdf0d98f18fb75b029ad80786c0",
                "a3ee0e4a3429a9539e4fcec385475608",
                "28ea527d31ef61df498dc107fe02df99",
            ],
            [
                "37f06808410c8f3954525ae44584d3be",
                "8fcc23bca2fe2209f93d34e2da35b33d",
                "33156347df89eaa69ab11096362daccf",
                "bbe58d9dbe8c5b0469be5a87086db5d4",
            ],
            [
                "d1c9eb37fecbc5ada7b351fa4f501f32",
                "0b9b803283c1538628b507c8f6432434",
                "bfb8b6d4f87cce28825c7e92f54b8728",
                "8917bb5b09c32f900c6a5a1d63c46264",
            ],
            [
                "4f6110c2ef0c3c687e90c1e5532ddf8e",
                "031bd85d99f64684d23728a0453c72a1",
                "10bc7ec34d4119b5bdeb6c7dfc458247",
                "591ece530aeaa5c9867220156f5c25e3",
            ],
        ];
        for (j, lanes) in want.iter().enumerate() {
            for (i, w) in lanes.iter().enumerate() {
                assert_eq!(state.s[j][i], b(w), "V[{j},{i}]");
            }
        }
        check::<Aegis256X<4>>((
            KX256,
            NX256,
            "",
            "",
            "",
            "3b7fee6cee7bf17888ad11ed2397beb4",
            "6093a1a8aab20ec635dc1ca71745b01b5bec4fc444c9ffbebd710d4a34d20eaf",
        ));
        check::<Aegis256X<4>>((
            KX256,
            NX256,
            "0102030401020304",
            MSG_X,
            AEGIS256X4_CT,
            "b63b611b13975e2f3dc3cb6c2397bfcd",
            "7847eace74409ee56c8f4cf63a9c2841ce7c8bd567d7c0ca514c879a190b978c",
        ));
    }

    /// With one lane AEGIS-256X is AEGIS-256: the generic state and `aegis256`'s agree.
    #[test]
    fn one_lane_of_aegis256x_is_aegis256() {
        let key: [u8; 32] = core::array::from_fn(|i| i as u8 * 3);
        let nonce: [u8; 32] = core::array::from_fn(|i| 0x80 ^ i as u8);
        let msg: Vec<u8> = (0..1000).map(|i| (i * 13) as u8).collect();
        let (mut a, mut b) = (msg.clone(), msg.clone());
        let mut x = Aegis256X::<1>::init(&key, &nonce);
        x.encrypt_in_place(&mut a);
        let mut y = <Aegis256 as PageAead>::init(&key, &nonce);
        PageAead::encrypt_in_place(&mut y, &mut b);
        assert_eq!(a, b);
        assert_eq!(x.tag(msg.len()), PageAead::tag(y, msg.len()));
    }
}
