//! Lays out cl100k_base's lookup tables and the pattern's character classes at compile time
//! (`src/tables.rs` says why), as arrays of the target's native integers in `OUT_DIR`, which
//! the crate embeds and reads in place.

use std::path::{Path, PathBuf};

#[allow(dead_code)]
#[path = "src/tables.rs"]
mod tables;

use tables::{
    class, filter_bits, first_slot, packed, slot_count, table_starts, table_token, FILTER_BITS,
    ORDINARY,
};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/tables.rs");
    println!("cargo:rerun-if-changed=assets/cl100k_base.ranks");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let big_endian = std::env::var("CARGO_CFG_TARGET_ENDIAN").as_deref() == Ok("big");
    let write = |name: &str, values: &dyn TargetBytes| {
        std::fs::write(out.join(name), values.target_bytes(big_endian))
            .expect("OUT_DIR is writable");
    };

    let table = std::fs::read(Path::new("assets/cl100k_base.ranks"))
        .expect("assets/cl100k_base.ranks is part of the crate");
    let starts = table_starts(&table);
    assert_eq!(
        starts.len(),
        ORDINARY as usize,
        "assets/cl100k_base.ranks is cut short"
    );
    let mut slots = vec![0u32; slot_count(starts.len())];
    let mut keys = vec![0u128; slots.len()];
    let mut single_bytes = vec![u32::MAX; 256];
    let mut filter = vec![0u64; FILTER_BITS / 64];
    let mut long = Vec::new();
    let mut pairs = vec![u32::MAX; 1 << 16];
    for (rank, &start) in (0u32..).zip(&starts) {
        let bytes = table_token(&table, start);
        match packed(bytes) {
            Some(key) => {
                let mut at = first_slot(key, slots.len());
                while slots[at] != 0 {
                    at = (at + 1) & (slots.len() - 1);
                }
                slots[at] = rank + 1;
                keys[at] = key;
                for bit in filter_bits(key) {
                    filter[bit / 64] |= 1 << (bit % 64);
                }
            }
            None => long.push(rank),
        }
        if let [byte] = bytes[..] {
            single_bytes[usize::from(byte)] = rank;
        }
        if let [first, second] = bytes[..] {
            pairs[usize::from(first) << 8 | usize::from(second)] = rank;
        }
    }
    assert!(
        !single_bytes.contains(&u32::MAX),
        "every byte is a cl100k token (byte-pair merging starts from them)"
    );
    write("starts.bin", &starts);
    write("single_bytes.bin", &single_bytes);
    write("filter.bin", &filter);
    write("slots.bin", &slots);
    write("pairs.bin", &pairs);
    write("long.bin", &long);
    write("keys.bin", &keys);

    // The class of every code point below U+10000, and the classes other than OTHER above it
    // as sorted (first, last, class) ranges; later assignments win (letters, numbers and white
    // space are disjoint in Unicode anyway). The classes are regex-syntax's Unicode tables, the
    // ones tiktoken-rs's fancy-regex uses.
    let mut basic = vec![class::OTHER; 0x1_0000];
    let mut astral: Vec<[u32; 3]> = Vec::new();
    for (pattern, value) in [
        (r"\s", class::SPACE),
        (r"\p{N}", class::NUMBER),
        (r"\p{L}", class::LETTER),
    ] {
        for (first, last) in ranges(pattern) {
            for c in first..=last.min(0xFFFF) {
                basic[c as usize] = value;
            }
            if last > 0xFFFF {
                astral.push([first.max(0x1_0000), last, u32::from(value)]);
            }
        }
    }
    basic[usize::from(b'\r')] = class::NEWLINE;
    basic[usize::from(b'\n')] = class::NEWLINE;
    astral.sort_unstable();
    std::fs::write(out.join("classes_basic.bin"), &basic).expect("OUT_DIR is writable");
    let flat: Vec<u32> = astral.concat();
    write("classes_astral.bin", &flat);
}

/// Integers as the target stores them (build.rs runs on the host, whose byte order may differ).
trait TargetBytes {
    fn target_bytes(&self, big_endian: bool) -> Vec<u8>;
}

macro_rules! target_bytes {
    ($($int:ty),*) => {$(
        impl TargetBytes for Vec<$int> {
            fn target_bytes(&self, big_endian: bool) -> Vec<u8> {
                self.iter()
                    .flat_map(|v| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() })
                    .collect()
            }
        }
    )*};
}

target_bytes!(u32, u64, u128);

/// The code point ranges of a Unicode class pattern.
fn ranges(pattern: &str) -> Vec<(u32, u32)> {
    let hir = regex_syntax::ParserBuilder::new()
        .build()
        .parse(pattern)
        .expect("a Unicode class pattern");
    match hir.kind() {
        regex_syntax::hir::HirKind::Class(regex_syntax::hir::Class::Unicode(class)) => class
            .ranges()
            .iter()
            .map(|r| (u32::from(r.start()), u32::from(r.end())))
            .collect(),
        other => unreachable!("{pattern} parses to a class, not {other:?}"),
    }
}
