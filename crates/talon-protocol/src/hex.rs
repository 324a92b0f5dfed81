//! Lowercase hexadecimal: the one encoder of ids, digests and trace ids
//! the workspace shares (token digests, artifact digests, minted ids, the
//! `traceparent` header).

/// `bytes` as lowercase hex, two digits a byte.
pub fn encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_byte_is_two_lowercase_digits() {
        assert_eq!(super::encode(&[]), "");
        assert_eq!(super::encode(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }
}
