//! The shared line reader: any bytes split into numbered lines (or one UTF-8 error naming a line
//! that exists), and any line that parses as a JSON object survives a round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sage_data::lines::{json_object, numbered_lines};

fuzz_target!(|bytes: &[u8]| {
    match numbered_lines(bytes) {
        Ok(lines) => {
            for (i, (number, line)) in lines.iter().enumerate() {
                assert_eq!(*number, i + 1, "lines are numbered 1, 2, 3, ...");
                assert!(!line.contains('\n'), "a line holds no newline");
                if let Ok(object) = json_object(line) {
                    let again = serde_json::to_string(&object).unwrap();
                    assert_eq!(json_object(&again).unwrap(), object, "{line:?}");
                }
            }
        }
        Err(e) => {
            let count = bytes.iter().filter(|&&b| b == b'\n').count() + 1;
            assert!((1..=count).contains(&e.line), "line {} of {count}", e.line);
        }
    }
});
