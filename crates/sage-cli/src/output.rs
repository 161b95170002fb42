//! Output to stdout or, atomically, to a file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};

/// Stdout, or a temporary file next to the target that is renamed into place by `finish`, so an
/// interrupted or failed run never leaves a truncated output file (the temporary file is removed
/// when the output is dropped unfinished).
pub struct Output {
    sink: Sink,
    /// (temporary file, target) while a file output is unfinished.
    pending: Option<(PathBuf, PathBuf)>,
}

enum Sink {
    Stdout(BufWriter<io::Stdout>),
    File(BufWriter<File>),
}

impl Output {
    pub fn create(target: Option<PathBuf>) -> Result<Self> {
        let Some(target) = target else {
            return Ok(Output {
                sink: Sink::Stdout(BufWriter::new(io::stdout())),
                pending: None,
            });
        };
        // a results folder named for this run need not exist yet: checked before any work
        if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("{}: cannot create folder", parent.display()))?;
        }
        let mut tmp = target.clone().into_os_string();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let file =
            File::create(&tmp).with_context(|| format!("{}: cannot create", tmp.display()))?;
        Ok(Output {
            sink: Sink::File(BufWriter::new(file)),
            pending: Some((tmp, target)),
        })
    }

    pub fn finish(mut self) -> Result<()> {
        self.flush().context("writing output")?;
        if let (Sink::File(writer), Some((tmp, target))) = (&self.sink, &self.pending) {
            writer
                .get_ref()
                .sync_all()
                .with_context(|| format!("{}: cannot write", tmp.display()))?;
            std::fs::rename(tmp, target)
                .with_context(|| format!("{}: cannot move into place", target.display()))?;
        }
        self.pending = None;
        Ok(())
    }
}

impl Drop for Output {
    fn drop(&mut self) {
        if let Some((tmp, _)) = self.pending.take() {
            let _ = std::fs::remove_file(tmp);
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Stdout(w) => w.write(buf),
            Sink::File(w) => w.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Stdout(w) => w.flush(),
            Sink::File(w) => w.flush(),
        }
    }
}
