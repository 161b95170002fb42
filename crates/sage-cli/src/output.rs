//! Output to stdout or, atomically, to a file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

/// Stdout, or a temporary file next to the target that is renamed into place on `finish`, so an
/// interrupted run never leaves a truncated output file.
pub enum Output {
    Stdout(BufWriter<io::Stdout>),
    File {
        writer: BufWriter<File>,
        tmp: PathBuf,
        target: PathBuf,
    },
}

impl Output {
    pub fn create(target: Option<PathBuf>) -> Result<Self> {
        let Some(target) = target else {
            return Ok(Output::Stdout(BufWriter::new(io::stdout())));
        };
        let mut tmp = target.clone().into_os_string();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let file =
            File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
        Ok(Output::File {
            writer: BufWriter::new(file),
            tmp,
            target,
        })
    }

    pub fn finish(self) -> Result<()> {
        match self {
            Output::Stdout(mut w) => w.flush().context("writing to stdout"),
            Output::File {
                writer,
                tmp,
                target,
            } => {
                let file = writer
                    .into_inner()
                    .map_err(|e| e.into_error())
                    .with_context(|| format!("{}: cannot write", tmp.display()))?;
                file.sync_all()
                    .with_context(|| format!("{}: cannot write", tmp.display()))?;
                std::fs::rename(&tmp, &target)
                    .with_context(|| format!("{}: cannot move into place", target.display()))
            }
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Output::Stdout(w) => w.write(buf),
            Output::File { writer, .. } => writer.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Output::Stdout(w) => w.flush(),
            Output::File { writer, .. } => writer.flush(),
        }
    }
}
