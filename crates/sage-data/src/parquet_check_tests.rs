//! Hostile Parquet files, built byte by byte with a Thrift compact encoder of the test's own, so
//! each one is exactly the lie it tests; and files real writers made, which must pass.

use super::*;

/// A Thrift value to encode.
enum T {
    I32(i64),
    I64(i64),
    Bin(&'static [u8]),
    List(u8, Vec<T>),
    Struct(Vec<(i16, T)>),
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(out: &mut Vec<u8>, v: i64) {
    varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn type_of(t: &T) -> u8 {
    match t {
        T::I32(_) => 5,
        T::I64(_) => 6,
        T::Bin(_) => 8,
        T::List(..) => 9,
        T::Struct(_) => 12,
    }
}

fn encode(out: &mut Vec<u8>, t: &T) {
    match t {
        T::I32(v) | T::I64(v) => zigzag(out, *v),
        T::Bin(b) => {
            varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        T::List(element, items) => {
            if items.len() < 15 {
                out.push(((items.len() as u8) << 4) | element);
            } else {
                out.push(0xf0 | element);
                varint(out, items.len() as u64);
            }
            for item in items {
                encode(out, item);
            }
        }
        T::Struct(fields) => {
            let mut last = 0;
            for (id, value) in fields {
                let delta = id - last;
                if (1..=15).contains(&delta) {
                    out.push(((delta as u8) << 4) | type_of(value));
                } else {
                    out.push(type_of(value));
                    zigzag(out, i64::from(*id));
                }
                last = *id;
                encode(out, value);
            }
            out.push(0);
        }
    }
}

fn bytes_of(t: &T) -> Vec<u8> {
    let mut out = Vec::new();
    encode(&mut out, t);
    out
}

/// A data page header: `uncompressed` and `compressed` bytes, `values` values.
fn page_header(uncompressed: i64, compressed: i64, values: i64) -> Vec<u8> {
    bytes_of(&T::Struct(vec![
        (1, T::I32(0)),
        (2, T::I32(uncompressed)),
        (3, T::I32(compressed)),
        (
            5,
            T::Struct(vec![
                (1, T::I32(values)),
                (2, T::I32(0)),
                (3, T::I32(3)),
                (4, T::I32(3)),
            ]),
        ),
    ]))
}

/// A schema of one required byte-array column under the root.
fn flat_schema() -> T {
    T::List(
        12,
        vec![
            T::Struct(vec![(4, T::Bin(b"schema")), (5, T::I32(1))]),
            T::Struct(vec![(1, T::I32(6)), (3, T::I32(0)), (4, T::Bin(b"text"))]),
        ],
    )
}

/// A file: magic, `pages`, then a footer of one row group whose one column chunk says it holds
/// `values` values in `chunk_size` bytes from `chunk_start`, under `schema`, with `rows` rows in
/// the footer and `group_rows` in the row group.
struct Lie {
    schema: T,
    rows: i64,
    group_rows: i64,
    values: i64,
    chunk_start: i64,
    chunk_size: Option<i64>,
    pages: Vec<u8>,
}

impl Default for Lie {
    fn default() -> Self {
        // one honest page of 3 values; its body is bytes nobody decodes here
        let mut pages = page_header(30, 30, 3);
        pages.extend_from_slice(&[7u8; 30]);
        Lie {
            schema: flat_schema(),
            rows: 3,
            group_rows: 3,
            values: 3,
            chunk_start: 4,
            chunk_size: None,
            pages,
        }
    }
}

impl Lie {
    fn write(self, dir: &Path) -> std::path::PathBuf {
        let chunk_size = self.chunk_size.unwrap_or(self.pages.len() as i64);
        let footer = bytes_of(&T::Struct(vec![
            (1, T::I32(1)),
            (2, self.schema),
            (3, T::I64(self.rows)),
            (
                4,
                T::List(
                    12,
                    vec![T::Struct(vec![
                        (
                            1,
                            T::List(
                                12,
                                vec![T::Struct(vec![
                                    (2, T::I64(self.chunk_start)),
                                    (
                                        3,
                                        T::Struct(vec![
                                            (1, T::I32(6)),
                                            (2, T::List(5, vec![T::I32(0)])),
                                            (3, T::List(8, vec![T::Bin(b"text")])),
                                            (4, T::I32(0)),
                                            (5, T::I64(self.values)),
                                            (6, T::I64(chunk_size)),
                                            (7, T::I64(chunk_size)),
                                            (9, T::I64(self.chunk_start)),
                                        ]),
                                    ),
                                ])],
                            ),
                        ),
                        (2, T::I64(chunk_size)),
                        (3, T::I64(self.group_rows)),
                    ])],
                ),
            ),
        ]));
        let mut file = b"PAR1".to_vec();
        file.extend_from_slice(&self.pages);
        file.extend_from_slice(&footer);
        file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        let path = dir.join("hostile.parquet");
        std::fs::write(&path, file).unwrap();
        path
    }
}

fn refused(lie: Lie) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = lie.write(dir.path());
    match check(&path) {
        Ok(_) => panic!("the file was accepted"),
        Err(e) => {
            let text = e.to_string();
            assert!(text.starts_with(&path.display().to_string()), "{text}");
            text
        }
    }
}

#[test]
fn an_honest_hand_built_file_passes() {
    // without this, every refusal below could be the encoder's fault rather than the lie's
    let dir = tempfile::tempdir().unwrap();
    let path = Lie::default().write(dir.path());
    check(&path).unwrap();
}

#[test]
fn a_chunk_past_the_end_is_refused() {
    // polars panicked here: "range end index 1000000000374 out of range for slice of length 703"
    let e = refused(Lie {
        chunk_start: 1_000_000_000_000,
        ..Lie::default()
    });
    assert!(e.contains("claims bytes 1000000000000.."), "{e}");
}

#[test]
fn a_chunk_over_the_footer_is_refused() {
    let e = refused(Lie {
        chunk_size: Some(10_000),
        ..Lie::default()
    });
    assert!(e.contains("whose data ends at"), "{e}");
}

#[test]
fn a_footer_claiming_more_rows_than_its_row_groups_is_refused() {
    // polars followed the claim of 10^12 rows for a file of 3
    let e = refused(Lie {
        rows: 1_000_000_000_000,
        ..Lie::default()
    });
    assert!(
        e.contains("claims 1000000000000 rows and its row groups hold 3"),
        "{e}"
    );
}

#[test]
fn a_row_group_claiming_more_rows_than_values_is_refused() {
    let e = refused(Lie {
        rows: 1_000_000_000_000,
        group_rows: 1_000_000_000_000,
        ..Lie::default()
    });
    assert!(e.contains("holds 3 values for 1000000000000 rows"), "{e}");
}

#[test]
fn a_schema_50000_deep_is_refused_without_recursion() {
    // polars overflowed its stack building this tree (exit 134)
    let depth = 50_000;
    let mut elements: Vec<T> = (0..depth)
        .map(|_| T::Struct(vec![(4, T::Bin(b"g")), (5, T::I32(1))]))
        .collect();
    elements.push(T::Struct(vec![(1, T::I32(6)), (4, T::Bin(b"leaf"))]));
    let e = refused(Lie {
        schema: T::List(12, elements),
        ..Lie::default()
    });
    assert!(e.contains("nests deeper than 64 levels"), "{e}");
}

#[test]
fn thrift_nested_past_the_limit_is_refused_without_recursion() {
    // a struct in a struct 100,000 deep, in a field nobody reads
    let depth = 100_000;
    // field 1, a struct, opened `depth` times, then every one closed
    let mut footer = vec![0x1c; depth];
    footer.extend(std::iter::repeat_n(0u8, depth + 1));
    let e = Compact::new(&footer).structure(0).unwrap_err();
    assert!(e.contains("nested deeper than 64"), "{e}");
}

#[test]
fn a_list_longer_than_its_bytes_is_refused_before_allocating() {
    // field 2, a list of structs claiming 2^62 items
    let mut footer = vec![0x29, 0xfc];
    varint(&mut footer, 1 << 62);
    let e = Compact::new(&footer).structure(0).unwrap_err();
    assert!(e.contains("more items than the bytes left"), "{e}");
}

#[test]
fn a_schema_that_leaves_children_out_is_refused() {
    let e = refused(Lie {
        schema: T::List(
            12,
            vec![
                T::Struct(vec![(4, T::Bin(b"schema")), (5, T::I32(2))]),
                T::Struct(vec![(1, T::I32(6)), (4, T::Bin(b"text"))]),
            ],
        ),
        ..Lie::default()
    });
    assert!(e.contains("children it does not have"), "{e}");
}

#[test]
fn pages_claiming_too_much_are_refused() {
    for (header, said) in [
        (page_header(1 << 31, 30, 3), "2147483648 bytes uncompressed"),
        (page_header(30, 30, 1 << 30), "1073741824 values"),
    ] {
        let mut pages = header;
        pages.extend_from_slice(&[7u8; 30]);
        let e = refused(Lie {
            pages,
            ..Lie::default()
        });
        assert!(e.contains(said), "{e}");
    }
}

#[test]
fn pages_that_overrun_their_chunk_are_refused() {
    let mut pages = page_header(30, 300, 3);
    pages.extend_from_slice(&[7u8; 30]);
    let e = refused(Lie {
        pages,
        ..Lie::default()
    });
    assert!(e.contains("past the file's data"), "{e}");
}

/// A liar that sets the footer's rows, the row group's and the chunk's values all to 10^12 is
/// caught by the pages, which hold 3.
#[test]
fn a_footer_whose_pages_hold_fewer_values_is_refused() {
    let e = refused(Lie {
        rows: 1_000_000_000_000,
        group_rows: 1_000_000_000_000,
        values: 1_000_000_000_000,
        ..Lie::default()
    });
    assert!(
        e.contains("its pages hold 3 values and its footer claims 1000000000000"),
        "{e}"
    );
}

/// A list of ten million booleans costs ten megabytes in a footer; decoded into a tree it would
/// cost gigabytes. Lists of anything but structures are read and dropped.
#[test]
fn a_footer_of_scalars_is_read_without_being_kept() {
    let n = 10_000_000u64;
    // field 12 (a field no check reads), a list of booleans
    let mut footer = vec![0xc9, 0xf1];
    varint(&mut footer, n);
    footer.extend(std::iter::repeat_n(1u8, n as usize));
    // field 1 repeated a million times through the long form (type i32, id 1 by zigzag): kept once
    for _ in 0..1_000_000 {
        footer.extend_from_slice(&[0x05, 0x02, 0x00]);
    }
    footer.push(0);
    match Compact::new(&footer).structure(0).unwrap() {
        Thrift::Struct(fields) => assert_eq!(fields.len(), 1, "{fields:?}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn not_parquet_at_all_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bytes) in [
        ("short.parquet", &b"PAR1PAR1"[..]),
        ("magic.parquet", &b"PAR1 not really a parquet file PAR2"[..]),
        ("footer.parquet", &b"PAR1\x00\x00\xff\xffPAR1"[..]),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).unwrap();
        let e = check(&path).unwrap_err().to_string();
        assert!(
            e.contains("not a Parquet file sage can trust"),
            "{name}: {e}"
        );
    }
}

#[cfg(feature = "parquet")]
#[test]
fn files_polars_writes_pass() {
    use polars::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let n = 50_000;
    let texts: Vec<String> = (0..n).map(|i| format!("text number {i}")).collect();
    let labels: Vec<Option<i64>> = (0..n)
        .map(|i| (i % 7 != 0).then_some(i64::from(i % 3)))
        .collect();
    let mut frame = DataFrame::new(
        n as usize,
        vec![
            Column::new("text".into(), texts),
            Column::new("label".into(), labels),
        ],
    )
    .unwrap();
    for (name, compression, group) in [
        ("plain.parquet", ParquetCompression::Uncompressed, None),
        ("zstd.parquet", ParquetCompression::Zstd(None), Some(7_000)),
        ("snappy.parquet", ParquetCompression::Snappy, Some(1_000)),
    ] {
        let path = dir.path().join(name);
        let file = std::fs::File::create(&path).unwrap();
        ParquetWriter::new(file)
            .with_compression(compression)
            .with_row_group_size(group)
            .finish(&mut frame)
            .unwrap();
        check(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// The files `data/fixtures/parquet/make.py` writes with pyarrow (what HF datasets stores its
/// splits with) in each of its modes: every one passes.
#[test]
fn files_pyarrow_writes_pass() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/fixtures/parquet");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "parquet") {
            check(&path).unwrap_or_else(|e| panic!("{e}"));
            checked += 1;
        }
    }
    assert_eq!(checked, 7, "make.py writes seven files");
}
