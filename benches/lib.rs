//! Cross-crate benchmarks of sage-rs (`cargo bench -p sage-benches`): the code is in
//! `suites.rs`; a crate's own benchmarks stay in its `benches/` folder.
#![deny(missing_docs)]
