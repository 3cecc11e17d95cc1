//! AEGIS-256 (draft-irtf-cfrg-aegis-aead, 32-byte key, 32-byte nonce, 256-bit tag) on the
//! AES round function of the `aes` crate (`aes::hazmat`: AES-NI or ARMv8 AES when the CPU
//! has them, chosen at run time, otherwise RustCrypto's fixsliced software round, which has
//! no table and no secret-dependent branch). The six state blocks go through one parallel
//! round call per update. Only what SQLite3 Multiple Ciphers' `aegis` scheme needs
//! (`aegis_page`): detached encryption, decryption whose tag the caller compares, the
//! tag of a ciphertext without keeping its plaintext, and the key stream.

use aes::hazmat::cipher_round_par;
use aes::hazmat::Block8;
use aes::Block;
use zeroize::Zeroize;

/// AEGIS-256's key size.
pub const AEGIS256_KEY_SIZE: usize = 32;
/// AEGIS-256's nonce size.
pub const AEGIS256_NONCE_SIZE: usize = 32;
/// The tag size SQLite3MC uses (the 256-bit tag).
pub const AEGIS256_TAG_SIZE: usize = 32;

/// What a page pass does with its region.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Encrypts the plaintext region in place.
    Encrypt,
    /// Decrypts the ciphertext region in place.
    Decrypt,
    /// Reads the ciphertext region and keeps no plaintext (a tag check).
    Absorb,
}

/// The bytes a page pass runs over: in place (encryption, decryption) or only read (a tag
/// check, with [`Mode::Absorb`]).
pub(crate) enum Region<'a> {
    /// Read and overwritten with the pass's output.
    InPlace(&'a mut [u8]),
    /// Only read.
    ReadOnly(&'a [u8]),
}

// Read by the AES-NI pass (`x86_64::aegis`) only.
#[cfg(target_arch = "x86_64")]
impl Region<'_> {
    /// The region's bytes, to read.
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Region::InPlace(bytes) => bytes,
            Region::ReadOnly(bytes) => bytes,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.bytes().len()
    }
}

type B = [u8; 16];

const C0: B = [
    0x00, 0x01, 0x01, 0x02, 0x03, 0x05, 0x08, 0x0d, 0x15, 0x22, 0x37, 0x59, 0x90, 0xe9, 0x79, 0x62,
];
const C1: B = [
    0xdb, 0x3d, 0x18, 0x55, 0x6d, 0xc2, 0x2f, 0xf1, 0x20, 0x11, 0x31, 0x42, 0x73, 0xb5, 0x28, 0xdd,
];

fn xor(a: &B, b: &B) -> B {
    (u128::from_ne_bytes(*a) ^ u128::from_ne_bytes(*b)).to_ne_bytes()
}

fn and(a: &B, b: &B) -> B {
    (u128::from_ne_bytes(*a) & u128::from_ne_bytes(*b)).to_ne_bytes()
}

fn half(bytes: &[u8; 32], which: usize) -> B {
    let mut b = [0u8; 16];
    b.copy_from_slice(&bytes[which * 16..which * 16 + 16]);
    b
}

/// The AEGIS-256 state after initialisation with a key and nonce. Wiped when dropped.
pub(crate) struct Aegis256 {
    s: [B; 6],
}

impl Drop for Aegis256 {
    fn drop(&mut self) {
        self.s.zeroize();
    }
}

impl Aegis256 {
    pub(crate) fn new(key: &[u8; AEGIS256_KEY_SIZE], nonce: &[u8; AEGIS256_NONCE_SIZE]) -> Self {
        let (k0, k1) = (half(key, 0), half(key, 1));
        let (n0, n1) = (half(nonce, 0), half(nonce, 1));
        let (k0n0, k1n1) = (xor(&k0, &n0), xor(&k1, &n1));
        let mut state = Aegis256 {
            s: [k0n0, k1n1, C1, C0, xor(&k0, &C0), xor(&k1, &C1)],
        };
        for _ in 0..4 {
            state.update(&k0);
            state.update(&k1);
            state.update(&k0n0);
            state.update(&k1n1);
        }
        state
    }

    /// `Update(M)`: `S'0 = AESRound(S5, S0 ^ M)`, `S'i = AESRound(S(i-1), Si)`.
    fn update(&mut self, m: &B) {
        let s = &self.s;
        let zero = Block::default();
        let mut blocks = Block8::from([
            Block::from(s[5]),
            Block::from(s[0]),
            Block::from(s[1]),
            Block::from(s[2]),
            Block::from(s[3]),
            Block::from(s[4]),
            zero,
            zero,
        ]);
        let keys = Block8::from([
            Block::from(xor(&s[0], m)),
            Block::from(s[1]),
            Block::from(s[2]),
            Block::from(s[3]),
            Block::from(s[4]),
            Block::from(s[5]),
            zero,
            zero,
        ]);
        cipher_round_par(&mut blocks, &keys);
        for (slot, block) in self.s.iter_mut().zip(blocks.iter()) {
            slot.copy_from_slice(block);
        }
    }

    /// `S1 ^ S4 ^ S5 ^ (S2 & S3)`: what a message block is XORed with.
    fn keystream(&self) -> B {
        let s = &self.s;
        xor(&xor(&s[1], &s[4]), &xor(&s[5], &and(&s[2], &s[3])))
    }

    /// Absorbs associated data (zero-padded to whole blocks; the page scheme has none, the
    /// draft's test vectors do).
    #[cfg(test)]
    pub(crate) fn absorb(&mut self, ad: &[u8]) {
        for chunk in ad.chunks(16) {
            let mut block = [0u8; 16];
            block[..chunk.len()].copy_from_slice(chunk);
            self.update(&block);
        }
    }

    /// Encrypts `data` in place (the last block zero-padded, its output truncated).
    pub(crate) fn encrypt_in_place(&mut self, data: &mut [u8]) {
        for chunk in data.chunks_mut(16) {
            let mut m = [0u8; 16];
            m[..chunk.len()].copy_from_slice(chunk);
            let c = xor(&m, &self.keystream());
            self.update(&m);
            chunk.copy_from_slice(&c[..chunk.len()]);
            m.zeroize();
        }
    }

    /// Decrypts `data` in place; the caller compares [`finalize`](Self::finalize)'s tag
    /// before using the plaintext.
    pub(crate) fn decrypt_in_place(&mut self, data: &mut [u8]) {
        for chunk in data.chunks_mut(16) {
            let mut m = self.keystream();
            for (m, c) in m.iter_mut().zip(chunk.iter()) {
                *m ^= c;
            }
            // A partial last block: its padding is absorbed as zeros, not as key stream.
            m[chunk.len()..].fill(0);
            self.update(&m);
            chunk.copy_from_slice(&m[..chunk.len()]);
            m.zeroize();
        }
    }

    /// Absorbs `ciphertext` as decryption would, keeping none of the plaintext: for a tag
    /// check with nothing decrypted into the caller's memory.
    pub(crate) fn absorb_ciphertext(&mut self, ciphertext: &[u8]) {
        for chunk in ciphertext.chunks(16) {
            let mut m = self.keystream();
            for (m, c) in m.iter_mut().zip(chunk.iter()) {
                *m ^= c;
            }
            m[chunk.len()..].fill(0);
            self.update(&m);
            m.zeroize();
        }
    }

    /// The 256-bit tag after `ad_len` bytes of associated data and `msg_len` of message.
    pub(crate) fn finalize(mut self, ad_len: usize, msg_len: usize) -> [u8; AEGIS256_TAG_SIZE] {
        let mut lengths = [0u8; 16];
        lengths[..8].copy_from_slice(&((ad_len as u64) << 3).to_le_bytes());
        lengths[8..].copy_from_slice(&((msg_len as u64) << 3).to_le_bytes());
        let t = xor(&self.s[3], &lengths);
        for _ in 0..7 {
            self.update(&t);
        }
        let s = &self.s;
        let mut tag = [0u8; AEGIS256_TAG_SIZE];
        tag[..16].copy_from_slice(&xor(&xor(&s[0], &s[1]), &s[2]));
        tag[16..].copy_from_slice(&xor(&xor(&s[3], &s[4]), &s[5]));
        tag
    }

    /// libaegis' `aegis256_stream`: the encryption of `out.len()` zero bytes.
    pub(crate) fn stream(mut self, out: &mut [u8]) {
        out.fill(0);
        self.encrypt_in_place(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
            .collect()
    }

    fn arr32(s: &str) -> [u8; 32] {
        hex(s).try_into().expect("32 bytes")
    }

    const KEY: &str = "1001000000000000000000000000000000000000000000000000000000000000";
    const NONCE: &str = "1000020000000000000000000000000000000000000000000000000000000000";

    /// The draft's test vectors (as in the `aegis` crate's aegis-256-test-vectors.json).
    fn check(ad: &str, msg: &str, ct: &str, tag: &str) {
        let (ad, msg) = (hex(ad), hex(msg));
        let mut state = Aegis256::new(&arr32(KEY), &arr32(NONCE));
        state.absorb(&ad);
        let mut data = msg.clone();
        state.encrypt_in_place(&mut data);
        assert_eq!(data, hex(ct));
        assert_eq!(state.finalize(ad.len(), msg.len()).to_vec(), hex(tag));

        let mut state = Aegis256::new(&arr32(KEY), &arr32(NONCE));
        state.absorb(&ad);
        state.decrypt_in_place(&mut data);
        assert_eq!(data, msg);
        assert_eq!(state.finalize(ad.len(), msg.len()).to_vec(), hex(tag));

        let mut state = Aegis256::new(&arr32(KEY), &arr32(NONCE));
        state.absorb(&ad);
        state.absorb_ciphertext(&hex(ct));
        assert_eq!(state.finalize(ad.len(), msg.len()).to_vec(), hex(tag));
    }

    #[test]
    fn draft_test_vectors() {
        check(
            "",
            "00000000000000000000000000000000",
            "754fc3d8c973246dcc6d741412a4b236",
            "1181a1d18091082bf0266f66297d167d2e68b845f61a3b0527d31fc7b7b89f13",
        );
        check(
            "",
            "",
            "",
            "6a348c930adbd654896e1666aad67de989ea75ebaa2b82fb588977b1ffec864a",
        );
        check(
            "0001020304050607",
            "000102030405060708090a0b0c0d",
            "f373079ed84b2709faee37358458",
            "8c1cc703c81281bee3f6d9966e14948b4a175b2efbdc31e61a98b4465235c2d9",
        );
        check(
            "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20212223242526272829",
            "101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637",
            "57754a7d09963e7c787583a2e7b859bb24fa1e04d49fd550b2511a358e3bca252a9b1b8b30cc4a67",
            "a3aca270c006094d71c20e6910b5161c0826df233d08919a566ec2c05990f734",
        );
    }

    #[test]
    fn the_stream_is_the_encryption_of_zeros() {
        let mut out = [0u8; 16];
        Aegis256::new(&arr32(KEY), &arr32(NONCE)).stream(&mut out);
        assert_eq!(out.to_vec(), hex("754fc3d8c973246dcc6d741412a4b236"));
    }
}
