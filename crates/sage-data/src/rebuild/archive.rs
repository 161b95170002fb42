//! Members of the archives the sources ship: gzip, tar (npm's `.tgz`, GitHub's tarballs), zip
//! and ar (a Debian `.deb`). Small readers of our own: each reads only what the pinned sources
//! use, and every size it is told by an archive is checked against the bytes it has, so a hostile
//! header cannot make it allocate or read past the artifact (whose size is pinned).

use std::io::Read;

/// What went wrong inside an archive.
pub type ArchiveResult<T> = std::result::Result<T, String>;

/// Decompresses gzip (every member), refusing output past `limit` bytes.
pub fn gunzip(bytes: &[u8], limit: u64) -> ArchiveResult<Vec<u8>> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("not valid gzip: {e}"))?;
    if out.len() as u64 > limit {
        return Err(format!("decompresses to more than {limit} bytes"));
    }
    Ok(out)
}

/// Decompresses xz, refusing output past `limit` bytes.
pub fn unxz(bytes: &[u8], limit: u64) -> ArchiveResult<Vec<u8>> {
    struct Bounded {
        out: Vec<u8>,
        limit: u64,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if (self.out.len() + buf.len()) as u64 > self.limit {
                return Err(std::io::Error::other("over the limit"));
            }
            self.out.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut out = Bounded {
        out: Vec::new(),
        limit,
    };
    lzma_rs::xz_decompress(&mut std::io::BufReader::new(bytes), &mut out).map_err(|e| match e {
        lzma_rs::error::Error::IoError(io) if io.to_string() == "over the limit" => {
            format!("decompresses to more than {limit} bytes")
        }
        e => format!("not valid xz: {e}"),
    })?;
    Ok(out.out)
}

/// A member of an archive, `spec` naming it: `PATH` in the archive, `PATH!INNER` for a member of
/// an archive inside it (npm's WordNet tarball holds Princeton's; a `.deb` holds `data.tar.xz`).
/// Each level is recognised by its bytes: gzip and xz are decompressed, then an ar, zip or tar
/// archive is opened. Every decompression stops at `limit` bytes.
pub fn extract(bytes: &[u8], spec: &str, limit: u64) -> ArchiveResult<Vec<u8>> {
    let mut current = bytes.to_vec();
    for member in spec.split('!') {
        if current.starts_with(&[0x1f, 0x8b]) {
            current = gunzip(&current, limit)?;
        } else if current.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            current = unxz(&current, limit)?;
        }
        current = if current.starts_with(b"!<arch>\n") {
            ar_member(&current, member)?.to_vec()
        } else if current.starts_with(b"PK\x03\x04") {
            zip_member(&current, member, limit)?
        } else {
            tar_member(&current, member)?.to_vec()
        };
    }
    Ok(current)
}

/// One member of a tar archive: its path and its bytes within the archive.
#[derive(Debug)]
pub struct TarMember<'a> {
    /// The member's path (GNU long names and pax `path` records applied).
    pub path: String,
    /// Its content.
    pub data: &'a [u8],
}

fn octal(field: &[u8]) -> ArchiveResult<u64> {
    let text = std::str::from_utf8(field).map_err(|_| "a tar size field is not ASCII")?;
    let text = text.trim_matches(|c: char| c == '\0' || c == ' ');
    if text.is_empty() {
        return Ok(0);
    }
    u64::from_str_radix(text, 8).map_err(|_| format!("a tar size field is not octal: {text:?}"))
}

fn cstr(field: &[u8]) -> String {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    String::from_utf8_lossy(&field[..end]).into_owned()
}

/// Every regular file of a (decompressed) tar archive, in archive order.
pub fn tar_members(bytes: &[u8]) -> ArchiveResult<Vec<TarMember<'_>>> {
    let mut members = Vec::new();
    let mut at = 0usize;
    let mut long_name: Option<String> = None;
    while at + 512 <= bytes.len() {
        let header = &bytes[at..at + 512];
        if header.iter().all(|&b| b == 0) {
            break;
        }
        let size = octal(&header[124..136])?;
        let start = at + 512;
        let end = start
            .checked_add(usize::try_from(size).map_err(|_| "a tar member is too large")?)
            .filter(|&end| end <= bytes.len())
            .ok_or_else(|| format!("a tar member of {size} bytes runs past the archive's end"))?;
        let data = &bytes[start..end];
        let kind = header[156];
        match kind {
            b'L' => long_name = Some(cstr(data)),
            b'x' => {
                // pax extended header: "LEN path=VALUE\n" records
                for record in String::from_utf8_lossy(data).split('\n') {
                    if let Some((_, kv)) = record.split_once(' ') {
                        if let Some(path) = kv.strip_prefix("path=") {
                            long_name = Some(path.to_owned());
                        }
                    }
                }
            }
            b'0' | 0 => {
                let path = long_name.take().unwrap_or_else(|| {
                    let name = cstr(&header[0..100]);
                    // POSIX ustar only: old GNU tar keeps times where ustar keeps the prefix
                    let prefix = if &header[257..263] == b"ustar\0" {
                        cstr(&header[345..500])
                    } else {
                        String::new()
                    };
                    if prefix.is_empty() {
                        name
                    } else {
                        format!("{prefix}/{name}")
                    }
                });
                members.push(TarMember { path, data });
            }
            _ => long_name = None,
        }
        at = start + (size as usize).div_ceil(512) * 512;
    }
    Ok(members)
}

/// The member of a tar archive at `path`.
pub fn tar_member<'a>(bytes: &'a [u8], path: &str) -> ArchiveResult<&'a [u8]> {
    tar_members(bytes)?
        .into_iter()
        .find(|m| m.path == path)
        .map(|m| m.data)
        .ok_or_else(|| format!("no member {path:?} in the archive"))
}

fn u16_at(bytes: &[u8], at: usize) -> ArchiveResult<u16> {
    bytes
        .get(at..at + 2)
        .map(|b| u16::from_le_bytes([b[0], b[1]]))
        .ok_or_else(|| "a zip header runs past the archive's end".to_owned())
}

fn u32_at(bytes: &[u8], at: usize) -> ArchiveResult<u32> {
    bytes
        .get(at..at + 4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .ok_or_else(|| "a zip header runs past the archive's end".to_owned())
}

/// The `path` that asks [`zip_member`] for the archive's only file (directories aside); an
/// archive of more than one file is refused, naming them.
pub const SOLE_MEMBER: &str = "*";

/// Checks that the zip archive whose end record is at `eocd` holds exactly one file.
fn sole_file(bytes: &[u8], eocd: usize) -> ArchiveResult<()> {
    let entries = u16_at(bytes, eocd + 10)?;
    let mut at = u32_at(bytes, eocd + 16)? as usize;
    let mut files = Vec::new();
    for _ in 0..entries {
        if u32_at(bytes, at)? != 0x0201_4b50 {
            return Err("a zip central directory entry has a bad signature".into());
        }
        let name_len = u16_at(bytes, at + 28)? as usize;
        let rest = u16_at(bytes, at + 30)? as usize + u16_at(bytes, at + 32)? as usize;
        let name = bytes
            .get(at + 46..at + 46 + name_len)
            .ok_or("a zip entry name runs past the archive's end")?;
        if !name.ends_with(b"/") {
            files.push(String::from_utf8_lossy(name).into_owned());
        }
        at += 46 + name_len + rest;
    }
    match files.len() {
        1 => Ok(()),
        0 => Err("the zip archive holds no file".into()),
        _ => Err(format!(
            "the zip archive holds {} files ({}), not one",
            files.len(),
            files.join(", ")
        )),
    }
}

/// The member of a zip archive at `path` ([`SOLE_MEMBER`]: its only file), decompressed (stored
/// or deflated), refusing output past `limit` bytes or other than the size the central
/// directory states.
pub fn zip_member(bytes: &[u8], path: &str, limit: u64) -> ArchiveResult<Vec<u8>> {
    // the end-of-central-directory record: in the last 64 KiB + 22 bytes
    let search_from = bytes.len().saturating_sub(22 + 65_535);
    let eocd = (search_from..bytes.len().saturating_sub(21))
        .rev()
        .find(|&i| bytes[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or("not a zip archive (no end of central directory)")?;
    if path == SOLE_MEMBER {
        // the archive's one file, whatever it is called: a hub upload of one zipped file
        // (ai-forever's `test.jsonl.zip`) names its member nowhere else
        sole_file(bytes, eocd)?;
    }
    let entries = u16_at(bytes, eocd + 10)?;
    let mut at = u32_at(bytes, eocd + 16)? as usize;
    for _ in 0..entries {
        if u32_at(bytes, at)? != 0x0201_4b50 {
            return Err("a zip central directory entry has a bad signature".into());
        }
        let method = u16_at(bytes, at + 10)?;
        let mut compressed = u32_at(bytes, at + 20)? as u64;
        let mut size = u32_at(bytes, at + 24)? as u64;
        let name_len = u16_at(bytes, at + 28)? as usize;
        let extra_len = u16_at(bytes, at + 30)? as usize;
        let comment_len = u16_at(bytes, at + 32)? as usize;
        let mut local = u32_at(bytes, at + 42)? as u64;
        let name = bytes
            .get(at + 46..at + 46 + name_len)
            .ok_or("a zip entry name runs past the archive's end")?;
        // Zip64: a field of 0xFFFFFFFF is in the extra field 0x0001, in the order uncompressed
        // size, compressed size, local header offset (Python's zipfile writes them so for large
        // or streamed members)
        let mut extra = at + 46 + name_len;
        let extra_end = extra + extra_len;
        while extra + 4 <= extra_end {
            let id = u16_at(bytes, extra)?;
            let len = u16_at(bytes, extra + 2)? as usize;
            if id == 1 {
                let mut field = extra + 4;
                let mut next = || -> ArchiveResult<u64> {
                    let v = bytes
                        .get(field..field + 8)
                        .ok_or("a zip64 field runs past the archive's end")?;
                    field += 8;
                    Ok(u64::from_le_bytes(v.try_into().expect("8 bytes")))
                };
                if size == 0xFFFF_FFFF {
                    size = next()?;
                }
                if compressed == 0xFFFF_FFFF {
                    compressed = next()?;
                }
                if local == 0xFFFF_FFFF {
                    local = next()?;
                }
            }
            extra += 4 + len;
        }
        let compressed = usize::try_from(compressed).map_err(|_| "a zip member is too large")?;
        let local = usize::try_from(local).map_err(|_| "a zip offset is too large")?;
        at += 46 + name_len + extra_len + comment_len;
        let wanted = if path == SOLE_MEMBER {
            !name.ends_with(b"/")
        } else {
            name == path.as_bytes()
        };
        if !wanted {
            continue;
        }
        if size > limit {
            return Err(format!("zip member {path:?} is {size} bytes, over {limit}"));
        }
        if u32_at(bytes, local)? != 0x0403_4b50 {
            return Err(format!("zip member {path:?}: bad local header"));
        }
        let data_start =
            local + 30 + u16_at(bytes, local + 26)? as usize + u16_at(bytes, local + 28)? as usize;
        let data = bytes
            .get(data_start..data_start + compressed)
            .ok_or_else(|| format!("zip member {path:?} runs past the archive's end"))?;
        let out = match method {
            0 => data.to_vec(),
            8 => {
                let mut out = Vec::new();
                flate2::read::DeflateDecoder::new(data)
                    .take(size + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| format!("zip member {path:?}: not valid deflate: {e}"))?;
                out
            }
            other => {
                return Err(format!(
                    "zip member {path:?}: compression method {other} is not supported"
                ))
            }
        };
        if out.len() as u64 != size {
            return Err(format!(
                "zip member {path:?}: {} bytes, the directory says {size}",
                out.len()
            ));
        }
        return Ok(out);
    }
    Err(format!("no member {path:?} in the zip archive"))
}

/// The member of an ar archive (a Debian `.deb`) named `name`.
pub fn ar_member<'a>(bytes: &'a [u8], name: &str) -> ArchiveResult<&'a [u8]> {
    if !bytes.starts_with(b"!<arch>\n") {
        return Err("not an ar archive".into());
    }
    let mut at = 8;
    while at + 60 <= bytes.len() {
        let header = &bytes[at..at + 60];
        let member = String::from_utf8_lossy(&header[0..16])
            .trim_end()
            .trim_end_matches('/')
            .to_owned();
        let size: usize = String::from_utf8_lossy(&header[48..58])
            .trim()
            .parse()
            .map_err(|_| "an ar size field is not a number")?;
        let start = at + 60;
        let data = bytes
            .get(start..start + size)
            .ok_or("an ar member runs past the archive's end")?;
        if member == name {
            return Ok(data);
        }
        at = start + size + (size % 2);
    }
    Err(format!("no member {name:?} in the ar archive"))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::io::Write;

    /// A ustar archive of `files`, as `tar --format=ustar` lays it out.
    pub(crate) fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        for (path, data) in files {
            let mut header = [0u8; 512];
            header[..path.len()].copy_from_slice(path.as_bytes());
            header[100..107].copy_from_slice(b"0000644");
            header[124..135].copy_from_slice(format!("{:011o}", data.len()).as_bytes());
            header[156] = b'0';
            header[257..263].copy_from_slice(b"ustar\0");
            header[148..156].copy_from_slice(b"        ");
            let sum: u32 = header.iter().map(|&b| b as u32).sum();
            header[148..155].copy_from_slice(format!("{sum:06o}\0").as_bytes());
            out.extend_from_slice(&header);
            out.extend_from_slice(data);
            out.resize(out.len().div_ceil(512) * 512, 0);
        }
        out.resize(out.len() + 1024, 0);
        out
    }

    pub(crate) fn gzip_of(bytes: &[u8]) -> Vec<u8> {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        gz.write_all(bytes).unwrap();
        gz.finish().unwrap()
    }

    /// A zip archive with one deflated member (the layout of Python's zipfile, ZIP_DEFLATED).
    pub(crate) fn zip_of(name: &str, data: &[u8]) -> Vec<u8> {
        zips_of(&[(name, data)])
    }

    /// A zip archive of deflated members, in order.
    pub(crate) fn zips_of(members: &[(&str, &[u8])]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut directory_entries = Vec::new();
        let sig = |out: &mut Vec<u8>, sig: u32| out.extend_from_slice(&sig.to_le_bytes());
        for (name, data) in members {
            let mut deflate =
                flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::default());
            deflate.write_all(data).unwrap();
            let compressed = deflate.finish().unwrap();
            let mut crc = flate2::Crc::new();
            crc.update(data);
            let offset = out.len() as u32;
            let sizes = |out: &mut Vec<u8>| {
                out.extend_from_slice(&crc.sum().to_le_bytes());
                out.extend_from_slice(&(compressed.len() as u32).to_le_bytes());
                out.extend_from_slice(&(data.len() as u32).to_le_bytes());
                out.extend_from_slice(&(name.len() as u16).to_le_bytes());
            };
            sig(&mut out, 0x0403_4b50);
            out.extend_from_slice(&[20, 0, 0, 0, 8, 0, 0, 0, 0, 0]);
            sizes(&mut out);
            out.extend_from_slice(&0u16.to_le_bytes());
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(&compressed);
            let mut entry = Vec::new();
            sig(&mut entry, 0x0201_4b50);
            entry.extend_from_slice(&[20, 0, 20, 0, 0, 0, 8, 0, 0, 0, 0, 0]);
            sizes(&mut entry);
            entry.extend_from_slice(&[0; 12]);
            entry.extend_from_slice(&offset.to_le_bytes());
            entry.extend_from_slice(name.as_bytes());
            directory_entries.push(entry);
        }
        let directory = out.len();
        for entry in &directory_entries {
            out.extend_from_slice(entry);
        }
        let directory_len = out.len() - directory;
        sig(&mut out, 0x0605_4b50);
        let count = (members.len() as u16).to_le_bytes();
        out.extend_from_slice(&[0, 0, 0, 0]);
        out.extend_from_slice(&count);
        out.extend_from_slice(&count);
        out.extend_from_slice(&(directory_len as u32).to_le_bytes());
        out.extend_from_slice(&(directory as u32).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out
    }

    #[test]
    fn a_zip_of_one_file_gives_it_whatever_its_name() {
        let zip = zips_of(&[("folder/", b""), ("test.jsonl", b"{\"a\": 1}\n")]);
        assert_eq!(
            zip_member(&zip, SOLE_MEMBER, 1 << 20).unwrap(),
            b"{\"a\": 1}\n"
        );
        let two = zips_of(&[("a.jsonl", b"1"), ("b.jsonl", b"2")]);
        assert_eq!(zip_member(&two, "b.jsonl", 1 << 20).unwrap(), b"2");
        let e = zip_member(&two, SOLE_MEMBER, 1 << 20).unwrap_err();
        assert!(e.contains("2 files (a.jsonl, b.jsonl)"), "{e}");
    }

    #[test]
    fn tgz_members_by_path() {
        let tgz = gzip_of(&tar_of(&[
            ("package/a.txt", b"alpha\n"),
            ("package/dict/b", b""),
        ]));
        let tar = gunzip(&tgz, 1 << 20).unwrap();
        assert_eq!(tar_member(&tar, "package/a.txt").unwrap(), b"alpha\n");
        assert_eq!(tar_member(&tar, "package/dict/b").unwrap(), b"");
        assert!(tar_member(&tar, "package/c")
            .unwrap_err()
            .contains("no member"));
    }

    #[test]
    fn nested_members() {
        let inner = gzip_of(&tar_of(&[("dict/data.adj", b"  1 adj\n")]));
        let outer = gzip_of(&tar_of(&[
            ("package/LICENSE", b"WordNet"),
            ("package/WNdb-3.0.tar.gz", &inner),
        ]));
        assert_eq!(
            extract(&outer, "package/WNdb-3.0.tar.gz!dict/data.adj", 1 << 20).unwrap(),
            b"  1 adj\n"
        );
        assert_eq!(
            extract(&outer, "package/LICENSE", 1 << 20).unwrap(),
            b"WordNet"
        );
        let mut xz = Vec::new();
        lzma_rs::xz_compress(
            &mut &tar_of(&[("./usr/share/wordnet/sents.vrb", b"1 x\n")])[..],
            &mut xz,
        )
        .unwrap();
        assert_eq!(
            extract(&xz, "./usr/share/wordnet/sents.vrb", 1 << 20).unwrap(),
            b"1 x\n"
        );
        assert!(unxz(&xz, 10).unwrap_err().contains("more than 10"));
    }

    #[test]
    fn gzip_bomb_refused() {
        let big = gzip_of(&vec![b'a'; 1 << 20]);
        assert!(gunzip(&big, 1000).unwrap_err().contains("more than 1000"));
    }

    #[test]
    fn tar_member_past_the_end_refused() {
        let mut tar = tar_of(&[("x", b"abc")]);
        tar.truncate(514);
        assert!(tar_members(&tar)
            .unwrap_err()
            .contains("past the archive's end"));
    }

    #[test]
    fn zip_deflated_member() {
        let zip = zip_of("data/corpus.csv", b"id,text\n1,hello\n");
        assert_eq!(
            zip_member(&zip, "data/corpus.csv", 1 << 20).unwrap(),
            b"id,text\n1,hello\n"
        );
        assert!(zip_member(&zip, "data/corpus.csv", 4)
            .unwrap_err()
            .contains("over 4"));
        assert!(zip_member(&zip, "other", 1 << 20)
            .unwrap_err()
            .contains("no member"));
    }

    #[test]
    fn ar_members() {
        let mut deb = b"!<arch>\n".to_vec();
        for (name, data) in [("debian-binary", &b"2.0\n"[..]), ("data.tar.gz", b"xyz")] {
            deb.extend_from_slice(
                format!(
                    "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                    0,
                    0,
                    0,
                    100644,
                    data.len()
                )
                .as_bytes(),
            );
            deb.extend_from_slice(data);
            if data.len() % 2 == 1 {
                deb.push(b'\n');
            }
        }
        assert_eq!(ar_member(&deb, "data.tar.gz").unwrap(), b"xyz");
        assert_eq!(ar_member(&deb, "debian-binary").unwrap(), b"2.0\n");
    }
}
