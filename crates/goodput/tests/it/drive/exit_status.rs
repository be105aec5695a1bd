//! Exit statuses (#37 item 26): a bad input file is exit 2 in every command that
//! reads one, as the README's list says: missing, a device, a FIFO, not a report.

use crate::common;

use std::time::Duration;

use common::cli::{goodput, Scratch};

#[test]
fn a_bad_input_file_exits_2_in_every_command_that_reads_one() {
    let dir = Scratch::new();
    let fifo = dir.path("fifo.json");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let garbage = dir.write("garbage.json", "this is not a report\n");
    let missing = dir.path("missing.json");
    let out = dir.arg("out.html");
    for file in [
        "/dev/zero".to_string(),
        fifo.display().to_string(),
        garbage.display().to_string(),
        missing.display().to_string(),
    ] {
        let f = file.as_str();
        let commands: [Vec<&str>; 5] = [
            vec!["show", f],
            vec!["compare", f],
            vec!["gate", f, f],
            vec!["report", f, "-o", &out],
            vec!["fit", f, "-o", &out],
        ];
        for args in commands {
            let o = goodput()
                .args(&args)
                .timeout(Duration::from_secs(30))
                .output()
                .unwrap();
            let e = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
            assert!(e.contains(f), "{args:?} names the file: {e}");
        }
    }
}

#[test]
fn the_simulator_exits_2_for_a_bad_preset_or_config_file() {
    let dir = Scratch::new();
    let bad = dir.write("bad.toml", "no_such_key = 1\n");
    let missing = dir.arg("missing.toml");
    for args in [
        vec!["sim", "--preset", "nope"],
        vec!["sim", "--config", "/dev/zero"],
        vec!["sim", "--config", &missing],
        vec!["sim", "--config", bad.to_str().unwrap()],
    ] {
        let o = goodput()
            .args(&args)
            .args(["--port", "0"])
            .timeout(Duration::from_secs(30))
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(args[2]), "{args:?} names it: {e}");
    }
}
