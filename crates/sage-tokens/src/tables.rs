//! How the rank tables are laid out: shared by `build.rs`, which lays them out once at compile
//! time, and the crate, which reads them in place. One definition, so the two cannot disagree.
//!
//! Why at compile time: building them took a few milliseconds and ~3 MB of fresh pages at the
//! first encode, which a short `sage score` run paid in full; embedded, they are read-only
//! pages of the binary that are mapped as lookups touch them.

/// Ordinary tokens; ids past them are the special tokens.
#[allow(dead_code)] // build.rs checks the table's length with it
pub(crate) const ORDINARY: u32 = 100_256;

/// Up to 15 bytes and their length in one integer.
///
/// Byte `i` of the piece is byte `i` of the little-endian integer, byte 15 is the length. Read
/// with two overlapping loads rather than a copy (a call to memmove per piece).
#[inline]
pub(crate) fn packed(bytes: &[u8]) -> Option<u128> {
    let n = bytes.len();
    let load8 = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let load4 = |at: usize| {
        u64::from(u32::from_le_bytes(
            bytes[at..at + 4].try_into().expect("4 bytes"),
        ))
    };
    let (low, high) = match n {
        // the overlapping loads agree on the bytes they share
        9..=15 => (load8(0), load8(n - 8) >> (8 * (16 - n))),
        8 => (load8(0), 0),
        4..=7 => (load4(0) | load4(n - 4) << (8 * (n - 4)), 0),
        0..=3 => (
            bytes
                .iter()
                .enumerate()
                .fold(0u64, |v, (i, &b)| v | u64::from(b) << (8 * i)),
            0,
        ),
        _ => return None,
    };
    Some(u128::from(low) | u128::from(high) << 64 | (n as u128) << 120)
}

/// A 64-bit mix of a packed key: every input bit reaches the low bits the table indexes by.
#[inline]
pub(crate) fn spread(key: u128) -> u64 {
    let x = (key as u64) ^ ((key >> 64) as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let x = (x ^ (x >> 32)).wrapping_mul(0xD6E8_FEB8_6659_FD93);
    x ^ (x >> 32)
}

/// Slots of the open-addressing table of short tokens: load ≤ 0.4 keeps probes short.
#[allow(dead_code)] // build.rs sizes the table with it
pub(crate) fn slot_count(tokens: usize) -> usize {
    (tokens * 5 / 2).next_power_of_two()
}

/// The slot where the probe for `key` starts; a probe goes on at the next slot (wrapping) until
/// it meets the key or an empty slot (0).
#[inline]
pub(crate) fn first_slot(key: u128, slots: usize) -> usize {
    spread(key) as usize & (slots - 1)
}

/// Bits of the filter in front of the short-token table: 128 KB, which stays in L2 where the
/// table (~5 MB) does not.
pub(crate) const FILTER_BITS: usize = 1 << 20;

/// The two filter bits of a packed key: every short token sets both, so a key with either bit
/// clear is no token. ~3% of other keys pass (two bits per key, 99,000 keys in 2^20 bits).
///
/// Why: byte-pair merging asks the table of many byte runs that are no token (an upper-cased
/// word asks ~4), and each such question missed L2 (and the TLB) once.
#[inline]
pub(crate) fn filter_bits(key: u128) -> [usize; 2] {
    let h = spread(key);
    [
        h as usize & (FILTER_BITS - 1),
        (h >> 40) as usize & (FILTER_BITS - 1),
    ]
}

/// Where each rank's `[length, bytes...]` entry starts in a rank table.
#[allow(dead_code)] // build.rs lays the starts out with it
pub(crate) fn table_starts(table: &[u8]) -> Vec<u32> {
    let mut starts = Vec::with_capacity(ORDINARY as usize);
    let mut at = 0;
    while at < table.len() {
        starts.push(at as u32);
        at += 1 + usize::from(table[at]);
    }
    starts
}

/// The bytes of the entry at `start` of a rank table.
pub(crate) fn table_token(table: &[u8], start: u32) -> &[u8] {
    let start = start as usize;
    &table[start + 1..start + 1 + usize::from(table[start])]
}

/// The character classes cl100k's pattern tells apart, as the class table stores them.
pub(crate) mod class {
    /// `\p{L}`.
    pub(crate) const LETTER: u8 = 0;
    /// `\p{N}`.
    pub(crate) const NUMBER: u8 = 1;
    /// `\r` or `\n`.
    pub(crate) const NEWLINE: u8 = 2;
    /// White space other than `\r` and `\n`.
    pub(crate) const SPACE: u8 = 3;
    /// Anything else.
    #[allow(dead_code)] // the table's default; the reader treats every other value so
    pub(crate) const OTHER: u8 = 4;
}
