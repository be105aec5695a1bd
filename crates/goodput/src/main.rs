//! `goodput`: parse, call the library, print the error chain, choose the exit code.

fn main() {
    let cli = goodput::cli::parse_or_exit();
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = cli.runtime_threads() {
        builder.worker_threads(n);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = match runtime.block_on(goodput::cli::main(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {}", goodput::term::safe(&format!("{e:#}")));
            if e.downcast_ref::<goodput::define::profile::ProfileError>()
                .is_some()
                || e.downcast_ref::<goodput::UsageError>().is_some()
            {
                2
            } else {
                1
            }
        }
    };
    drop(runtime);
    std::process::exit(code);
}
