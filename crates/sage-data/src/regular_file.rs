//! The one way a dataset file is opened: only a regular file, so that a FIFO, a device or a
//! socket given as a dataset is refused at once instead of blocking the run or never ending.

use std::fs::File;
use std::path::Path;

use crate::error::{DataError, Result};

/// `path` opened for reading. Only a regular file is opened: a FIFO, a device or a socket would
/// block or never end, and none of them is a dataset.
pub(crate) fn open(path: &Path) -> Result<File> {
    let fail = |e: std::io::Error| DataError::Io {
        path: path.to_owned(),
        message: format!("cannot read: {e}"),
    };
    let meta = std::fs::metadata(path).map_err(fail)?;
    if !meta.is_file() {
        return Err(DataError::Io {
            path: path.to_owned(),
            message: "not a regular file (a folder, FIFO, device or socket is not read)".into(),
        });
    }
    File::open(path).map_err(fail)
}
