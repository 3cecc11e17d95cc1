//! AES-256-CBC without padding, and the CBC ciphertext stealing of SQLite3 Multiple
//! Ciphers' page 1 (docs/sqlcipher4-format.md §4b), in place over byte slices.
//!
//! Both directions run inside one call into the `aes` crate's backend
//! (`encrypt_with_backend`/`decrypt_with_backend`), so the CPU-feature dispatch happens
//! once per page and the AES-NI/VAES/ARMv8 code is inlined into the CBC loop. Encryption
//! is sequential by nature; decryption hands the backend as many blocks at once as it
//! processes in parallel (8 for AES-NI, 30 or 64 for VAES), keeping a copy of that chunk's
//! ciphertext for the chaining XOR, so it can run in place without a page-sized scratch
//! buffer. Each call wipes the stack the backend used when it returns
//! (`scrub_stack_after_portable_pass`): the round keys it loaded, whose first two are the
//! key, are spilled there on some CPUs (on aarch64 and x86-64 alike).
//!
//! Public for the benchmark and for tests; the VFS uses [`PageCodec`](super::PageCodec).

use aes::cipher::array::Array;
use aes::cipher::consts::U16;
use aes::cipher::{
    BlockCipherDecBackend, BlockCipherDecClosure, BlockCipherDecrypt, BlockCipherEncBackend,
    BlockCipherEncClosure, BlockCipherEncrypt, BlockSizeUser, ParBlocks,
};
use aes::{Aes256, Block};
use zeroize::Zeroize;

use crate::error::CodecError;
use crate::scrub::scrub_stack_after_portable_pass;
use crate::IV_SIZE;

const BLOCK_SIZE: usize = 16;

/// AES-256-CBC encryption of `data` in place. `data.len()` must be a multiple of 16.
pub fn cbc_encrypt_in_place(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let result = cbc_encrypt_pass(cipher, iv, data);
    scrub_stack_after_portable_pass();
    result
}

/// [`cbc_encrypt_in_place`] before its stack is wiped: never inlined, so that the round keys
/// the `aes` crate spills lie in frames below the wrapper's.
#[inline(never)]
fn cbc_encrypt_pass(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let blocks = as_blocks(data)?;
    cipher.encrypt_with_backend(CbcEncrypt {
        iv: Block::from(*iv),
        blocks,
    });
    Ok(())
}

/// AES-256-CBC decryption of `data` in place. `data.len()` must be a multiple of 16.
pub fn cbc_decrypt_in_place(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let result = cbc_decrypt_pass(cipher, iv, data);
    scrub_stack_after_portable_pass();
    result
}

/// [`cbc_decrypt_in_place`] before its stack is wiped: never inlined, so that the round keys
/// the `aes` crate spills lie in frames below the wrapper's.
#[inline(never)]
fn cbc_decrypt_pass(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let blocks = as_blocks(data)?;
    cipher.decrypt_with_backend(CbcDecrypt {
        iv: Block::from(*iv),
        blocks,
    });
    Ok(())
}

/// CBC with ciphertext stealing as SQLite3 Multiple Ciphers writes it (§4b), in place.
///
/// `data.len()` must be at least 16. With `n` full blocks and a final partial block of
/// `f` bytes (`0 < f < 16`): CBC-encrypt the `n` full blocks to `C_0..C_{n-1}`, then
/// `C_n = AES(P_n || 0-padding XOR C_{n-1})`, and store `C_0..C_{n-2} || C_n ||
/// C_{n-1}[..f]`. Without a partial block this is plain CBC.
pub fn cts_encrypt_in_place(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let result = cts_encrypt_pass(cipher, iv, data);
    scrub_stack_after_portable_pass();
    result
}

/// [`cts_encrypt_in_place`] before its stack is wiped: never inlined, so that the round keys
/// the `aes` crate spills lie in frames below the wrapper's.
#[inline(never)]
fn cts_encrypt_pass(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let (full_len, partial) = cts_split(data.len())?;
    if partial == 0 {
        return cbc_encrypt_pass(cipher, iv, data);
    }
    let (full, tail) = data.split_at_mut(full_len);
    cbc_encrypt_pass(cipher, iv, full)?;
    let last_full = &mut full[full_len - BLOCK_SIZE..];

    // stolen = C_{n-1}; block = (P_n zero-padded) XOR C_{n-1}, then encrypted: C_n.
    let mut stolen = Block::default();
    stolen.copy_from_slice(last_full);
    let mut block = Block::default();
    block[..partial].copy_from_slice(tail);
    xor_in_place(&mut block, &stolen);
    cipher.encrypt_block(&mut block);

    last_full.copy_from_slice(&block);
    tail.copy_from_slice(&stolen[..partial]);
    stolen.zeroize();
    block.zeroize();
    Ok(())
}

/// Inverse of [`cts_encrypt_in_place`], in place.
///
/// `D = AES⁻¹(stored block n-1)` is `P_n XOR C_{n-1}` with `P_n` zero-padded, so the last
/// `f` plaintext bytes are `D[..f] XOR tail` and `C_{n-1} = tail || D[f..]`; the full blocks
/// then decrypt as ordinary CBC.
pub fn cts_decrypt_in_place(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let result = cts_decrypt_pass(cipher, iv, data);
    scrub_stack_after_portable_pass();
    result
}

/// [`cts_decrypt_in_place`] before its stack is wiped: never inlined, so that the round keys
/// the `aes` crate spills lie in frames below the wrapper's.
#[inline(never)]
fn cts_decrypt_pass(
    cipher: &Aes256,
    iv: &[u8; IV_SIZE],
    data: &mut [u8],
) -> Result<(), CodecError> {
    let (full_len, partial) = cts_split(data.len())?;
    if partial == 0 {
        return cbc_decrypt_pass(cipher, iv, data);
    }
    let (full, tail) = data.split_at_mut(full_len);
    let last_full = &mut full[full_len - BLOCK_SIZE..];

    let mut decrypted = Block::default();
    decrypted.copy_from_slice(last_full);
    cipher.decrypt_block(&mut decrypted);

    // Rebuild C_{n-1} = tail || D[f..], and recover P_n = D[..f] XOR tail.
    last_full[..partial].copy_from_slice(tail);
    last_full[partial..].copy_from_slice(&decrypted[partial..]);
    for (plain, mask) in tail.iter_mut().zip(&decrypted[..partial]) {
        *plain ^= mask;
    }
    decrypted.zeroize();
    cbc_decrypt_pass(cipher, iv, full)
}

/// Splits a ciphertext-stealing length into (length of the full blocks, partial bytes).
fn cts_split(len: usize) -> Result<(usize, usize), CodecError> {
    if len < BLOCK_SIZE {
        return Err(CodecError::BadLength {
            expected: BLOCK_SIZE,
            actual: len,
        });
    }
    let partial = len % BLOCK_SIZE;
    Ok((len - partial, partial))
}

/// Views `data` as AES blocks; its length must be a multiple of the block size.
fn as_blocks(data: &mut [u8]) -> Result<&mut [Block], CodecError> {
    let len = data.len();
    match Array::<u8, U16>::slice_as_chunks_mut(data) {
        (blocks, []) => Ok(blocks),
        _ => Err(CodecError::BadLength {
            expected: len - len % BLOCK_SIZE,
            actual: len,
        }),
    }
}

#[inline(always)]
fn xor_in_place(block: &mut Block, mask: &Block) {
    for (byte, mask_byte) in block.iter_mut().zip(mask.iter()) {
        *byte ^= mask_byte;
    }
}

/// CBC encryption as a closure the `aes` crate runs with its selected backend.
struct CbcEncrypt<'a> {
    iv: Block,
    blocks: &'a mut [Block],
}

impl BlockSizeUser for CbcEncrypt<'_> {
    type BlockSize = U16;
}

impl BlockCipherEncClosure for CbcEncrypt<'_> {
    #[inline(always)]
    fn call<B: BlockCipherEncBackend<BlockSize = U16>>(self, backend: &B) {
        let mut previous = self.iv;
        for block in self.blocks.iter_mut() {
            xor_in_place(block, &previous);
            backend.encrypt_block_inplace(block);
            previous = *block;
        }
    }
}

/// CBC decryption as a closure the `aes` crate runs with its selected backend.
struct CbcDecrypt<'a> {
    iv: Block,
    blocks: &'a mut [Block],
}

impl BlockSizeUser for CbcDecrypt<'_> {
    type BlockSize = U16;
}

impl BlockCipherDecClosure for CbcDecrypt<'_> {
    #[inline(always)]
    fn call<B: BlockCipherDecBackend<BlockSize = U16>>(self, backend: &B) {
        // P_i = AES⁻¹(C_i) XOR C_{i-1}. Each chunk is decrypted in place in one parallel
        // batch; `saved` keeps its ciphertext for the XOR (C_{i-1} of the next block).
        let mut previous = self.iv;
        let mut saved = ParBlocks::<B>::default();
        let (chunks, tail) = ParBlocks::<B>::slice_as_chunks_mut(self.blocks);
        for chunk in chunks.iter_mut() {
            saved.clone_from(chunk);
            backend.decrypt_par_blocks_inplace(chunk);
            unchain(chunk, &saved, &mut previous);
        }
        let saved_tail = &mut saved[..tail.len()];
        saved_tail.copy_from_slice(tail);
        backend.decrypt_tail_blocks_inplace(tail);
        unchain(tail, saved_tail, &mut previous);
    }
}

/// XORs each decrypted block with the ciphertext block before it.
#[inline(always)]
fn unchain(decrypted: &mut [Block], ciphertext: &[Block], previous: &mut Block) {
    for (block, cipher_block) in decrypted.iter_mut().zip(ciphertext) {
        xor_in_place(block, previous);
        *previous = *cipher_block;
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::hex;
    use super::*;
    use aes::cipher::KeyInit;
    use proptest::prelude::*;

    fn cipher(key: &[u8]) -> Aes256 {
        Aes256::new_from_slice(key).expect("32-byte key")
    }

    fn iv(bytes: &[u8]) -> [u8; 16] {
        bytes.try_into().expect("16-byte IV")
    }

    // NIST SP 800-38A, F.2.5/F.2.6 CBC-AES256.
    const NIST_KEY: &str = "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4";
    const NIST_IV: &str = "000102030405060708090a0b0c0d0e0f";
    const NIST_PLAIN: &str = "6bc1bee22e409f96e93d7e117393172aae2d8a571e03ac9c9eb76fac45af8e51\
                              30c81c46a35ce411e5fbc1191a0a52eff69f2445df4f9b17ad2b417be66c3710";
    const NIST_CIPHER: &str = "f58c4c04d6e5f1ba779eabfb5f7bfbd69cfc4e967edb808d679f777bc6702c7d\
                               39f23369a9d9bacfa530e26304231461b2eb05e2c39be9fcda6c19078c6a9d1b";

    #[test]
    fn cbc_matches_nist_sp800_38a() {
        let aes = cipher(&hex(NIST_KEY));
        let iv = iv(&hex(NIST_IV));
        let mut data = hex(NIST_PLAIN);
        cbc_encrypt_in_place(&aes, &iv, &mut data).expect("4 blocks");
        assert_eq!(data, hex(NIST_CIPHER));
        cbc_decrypt_in_place(&aes, &iv, &mut data).expect("4 blocks");
        assert_eq!(data, hex(NIST_PLAIN));
    }

    #[test]
    fn cts_matches_reference_construction() {
        // 40 bytes = 2 blocks + 8, computed with Python `cryptography` (AES-CBC on the full
        // blocks, then AES-ECB of the zero-padded last part XOR C_1, per §4b).
        let aes = cipher(&hex(NIST_KEY));
        let iv = iv(&hex(NIST_IV));
        let plain: Vec<u8> = (0u8..40).collect();
        let mut data = plain.clone();
        cts_encrypt_in_place(&aes, &iv, &mut data).expect("40 bytes");
        assert_eq!(
            data,
            hex(
                "e568f68194cf76d6174d4cc04310a854cb33b3d281ddd89333da7a5e46724d4b\
                 d09ef932b9ff1244"
            )
        );
        cts_decrypt_in_place(&aes, &iv, &mut data).expect("40 bytes");
        assert_eq!(data, plain);
    }

    #[test]
    fn cbc_rejects_partial_blocks() {
        let aes = cipher(&[1; 32]);
        let mut data = [0u8; 33];
        let expected = Err(CodecError::BadLength {
            expected: 32,
            actual: 33,
        });
        assert_eq!(cbc_encrypt_in_place(&aes, &[0; 16], &mut data), expected);
        assert_eq!(cbc_decrypt_in_place(&aes, &[0; 16], &mut data), expected);
        assert_eq!(data, [0u8; 33]);
    }

    #[test]
    fn cts_rejects_less_than_one_block() {
        let aes = cipher(&[1; 32]);
        let mut data = [0u8; 15];
        let expected = Err(CodecError::BadLength {
            expected: 16,
            actual: 15,
        });
        assert_eq!(cts_encrypt_in_place(&aes, &[0; 16], &mut data), expected);
        assert_eq!(cts_decrypt_in_place(&aes, &[0; 16], &mut data), expected);
    }

    #[test]
    fn cts_of_whole_blocks_is_cbc() {
        let aes = cipher(&[9; 32]);
        let plain = vec![0x5a; 64];
        let mut with_cts = plain.clone();
        let mut with_cbc = plain.clone();
        cts_encrypt_in_place(&aes, &[3; 16], &mut with_cts).expect("64 bytes");
        cbc_encrypt_in_place(&aes, &[3; 16], &mut with_cbc).expect("64 bytes");
        assert_eq!(with_cts, with_cbc);
    }

    /// Decryption with the parallel backend path must equal block-by-block CBC, for lengths
    /// around every batch size the backends use (8, 30, 64 blocks).
    #[test]
    fn cbc_decrypt_matches_single_block_reference() {
        let aes = cipher(&[0x42; 32]);
        let iv = [0x17; 16];
        for blocks in [1usize, 7, 8, 9, 29, 30, 31, 63, 64, 65, 128, 251, 4091] {
            let plain: Vec<u8> = (0..blocks * 16).map(|i| (i * 31 % 251) as u8).collect();
            let mut data = plain.clone();
            cbc_encrypt_in_place(&aes, &iv, &mut data).expect("whole blocks");

            // Reference: one block at a time.
            let mut reference = data.clone();
            let mut previous = iv;
            for chunk in reference.chunks_exact_mut(16) {
                let ciphertext: [u8; 16] = chunk.try_into().expect("16 bytes");
                let mut block = Block::from(ciphertext);
                aes.decrypt_block(&mut block);
                for (out, (d, p)) in chunk.iter_mut().zip(block.iter().zip(previous)) {
                    *out = d ^ p;
                }
                previous = ciphertext;
            }
            assert_eq!(reference, plain, "reference, {blocks} blocks");

            cbc_decrypt_in_place(&aes, &iv, &mut data).expect("whole blocks");
            assert_eq!(data, plain, "{blocks} blocks");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn cbc_round_trips(
            key in prop::array::uniform32(any::<u8>()),
            iv in prop::array::uniform16(any::<u8>()),
            plain in prop::collection::vec(any::<u8>(), 0..64).prop_map(|mut v| {
                v.truncate(v.len() / 16 * 16);
                v
            }),
        ) {
            let aes = cipher(&key);
            let mut data = plain.clone();
            cbc_encrypt_in_place(&aes, &iv, &mut data).expect("whole blocks");
            if !plain.is_empty() {
                prop_assert_ne!(&data, &plain);
            }
            cbc_decrypt_in_place(&aes, &iv, &mut data).expect("whole blocks");
            prop_assert_eq!(data, plain);
        }

        #[test]
        fn cts_round_trips(
            key in prop::array::uniform32(any::<u8>()),
            iv in prop::array::uniform16(any::<u8>()),
            plain in prop::collection::vec(any::<u8>(), 16..1100),
        ) {
            let aes = cipher(&key);
            let mut data = plain.clone();
            cts_encrypt_in_place(&aes, &iv, &mut data).expect("at least one block");
            prop_assert_eq!(data.len(), plain.len());
            prop_assert_ne!(&data, &plain);
            cts_decrypt_in_place(&aes, &iv, &mut data).expect("at least one block");
            prop_assert_eq!(data, plain);
        }

        /// A flipped ciphertext bit changes the plaintext (CTS leaves no byte unencrypted).
        #[test]
        fn cts_every_ciphertext_byte_matters(
            plain in prop::collection::vec(any::<u8>(), 16..200),
            bit in any::<prop::sample::Index>(),
        ) {
            let aes = cipher(&[5; 32]);
            let mut data = plain.clone();
            cts_encrypt_in_place(&aes, &[6; 16], &mut data).expect("at least one block");
            let bit = bit.index(data.len() * 8);
            data[bit / 8] ^= 1 << (bit % 8);
            cts_decrypt_in_place(&aes, &[6; 16], &mut data).expect("at least one block");
            prop_assert_ne!(data, plain);
        }
    }
}
