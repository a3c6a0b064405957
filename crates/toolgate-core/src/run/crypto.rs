//! The few cryptographic helpers of a run: SHA-256 digests, HMAC-SHA256 tags compared in
//! constant time, and random identifiers from the kernel.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

type HmacSha256 = Hmac<Sha256>;

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)] as char);
        out.push(DIGITS[usize::from(byte & 0xf)] as char);
    }
    out
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

/// The SHA-256 digest of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn keyed(secret: &[u8]) -> Result<HmacSha256> {
    HmacSha256::new_from_slice(secret)
        .map_err(|err| Error::Internal(format!("HMAC key rejected: {err}")))
}

/// The HMAC-SHA256 tag of `message` under `secret`, in hex.
pub fn hmac_hex(secret: &[u8], message: &[u8]) -> Result<String> {
    let mut mac = keyed(secret)?;
    mac.update(message);
    Ok(hex(&mac.finalize().into_bytes()))
}

/// Whether `tag` (hex) is the HMAC-SHA256 of `message` under `secret`; compared in constant
/// time.
pub fn hmac_matches(secret: &[u8], message: &[u8], tag: &str) -> Result<bool> {
    let Some(tag) = unhex(tag) else {
        return Ok(false);
    };
    let mut mac = keyed(secret)?;
    mac.update(message);
    Ok(mac.verify_slice(&tag).is_ok())
}

/// `bytes` random bytes from the kernel, in hex.
pub fn random_hex(bytes: usize) -> Result<String> {
    let mut buffer = vec![0u8; bytes];
    let mut filled = 0;
    while filled < buffer.len() {
        let read =
            rustix::rand::getrandom(&mut buffer[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(|err| Error::Internal(format!("the kernel gave no random bytes: {err}")))?;
        filled += read;
    }
    Ok(hex(&buffer))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_is_the_rfc_4231_value_and_any_change_fails() {
        // RFC 4231, test case 2.
        let tag = hmac_hex(b"Jefe", b"what do ya want for nothing?").unwrap();
        assert_eq!(
            tag,
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(hmac_matches(b"Jefe", b"what do ya want for nothing?", &tag).unwrap());
        assert!(!hmac_matches(b"Jefe", b"what do ya want for nothing!", &tag).unwrap());
        assert!(!hmac_matches(b"Jeff", b"what do ya want for nothing?", &tag).unwrap());
        assert!(!hmac_matches(b"Jefe", b"what do ya want for nothing?", "zz").unwrap());
        assert!(!hmac_matches(b"Jefe", b"what do ya want for nothing?", &tag[..10]).unwrap());
    }

    #[test]
    fn random_ids_differ() {
        let a = random_hex(16).unwrap();
        assert_eq!(a.len(), 32);
        assert_ne!(a, random_hex(16).unwrap());
    }

    #[test]
    fn sha256_is_hex() {
        assert_eq!(sha256_hex(b"").len(), 64);
    }
}
