//! Flags of peers' tools that goodput spells differently: an unknown flag that is a
//! known peer spelling names goodput's equivalent, instead of clap's nearest
//! spelling (which for `--request-rate` was `--requests`, a count).

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Parser;

use super::Cli;

/// Peer spellings goodput does not accept under that name: (flag, tool, what to
/// write instead). vLLM's spellings that goodput does accept are flags of their own
/// (see [`super::PeerArgs`]).
const PEER_FLAGS: &[(&str, &str, &str)] = &[
    ("--backend", "vLLM", "goodput talks to any OpenAI-compatible server: --api completions|chat"),
    ("--endpoint-type", "AIPerf/vLLM", "--api completions|chat"),
    ("--save-detailed", "vLLM", "goodput keeps every request anyway (REPORT.requests.jsonl); --save-result writes vLLM's file with the per-request arrays"),
    ("--disable-tqdm", "vLLM", "--quiet"),
    ("--served-model-name", "vLLM", "--model"),
    ("--sharegpt-output-len", "vLLM", "--random-output-len"),
    ("--prefix-repetition-prefix-len", "vLLM", "--random-prefix-len (with --dataset-name prefix_repetition)"),
    ("--prefix-repetition-suffix-len", "vLLM", "--random-input-len (with --dataset-name prefix_repetition)"),
    ("--prefix-repetition-output-len", "vLLM", "--random-output-len"),
    ("--prefix-repetition-num-prefixes", "vLLM", "`groups` in the profile's [workload]"),
    ("--top-p", "vLLM", "nothing: goodput samples greedily (temperature 0)"),
    ("--top-k", "vLLM", "nothing: goodput samples greedily (temperature 0)"),
    ("--target", "GuideLLM", "--url"),
    ("--rate-type", "GuideLLM", "--concurrency N (closed loop) or --rate R (Poisson); `goodput search` for a sweep"),
    ("--profile", "GuideLLM", "--concurrency N or --rate R (the profile TOML is goodput's positional argument)"),
    ("--max-requests", "GuideLLM", "--requests (or --num-prompts)"),
    ("--max-seconds", "GuideLLM", "`trial_timeout_s` in the profile's [load]"),
    ("--data", "GuideLLM", "--random-input-len/--random-output-len, or --dataset-name with --dataset-path"),
    ("--processor", "GuideLLM", "--tokenizer"),
    ("--output-path", "GuideLLM", "--output"),
    ("--warmup-percent", "GuideLLM", "--num-warmups"),
    ("--request-count", "AIPerf", "--requests (or --num-prompts)"),
    ("--synthetic-input-tokens-mean", "AIPerf", "--random-input-len"),
    ("--synthetic-input-tokens-stddev", "AIPerf", "--random-range-ratio"),
    ("--output-tokens-mean", "AIPerf", "--random-output-len"),
    ("--warmup-request-count", "AIPerf", "--num-warmups"),
    ("--streaming", "AIPerf", "nothing: goodput always streams"),
    ("--artifact-dir", "AIPerf", "--output"),
    ("--input-file", "AIPerf", "--dataset-path (with --dataset-name custom)"),
    ("--random-seed", "AIPerf", "--seed"),
    ("--benchmark-duration", "AIPerf", "`trial_timeout_s` in the profile's [load]"),
];

/// What goodput calls `flag` (as typed, `--flag` or `--flag=value`), when it is a
/// peer's spelling.
pub fn peer_hint(flag: &str) -> Option<String> {
    let name = flag.split('=').next().unwrap_or(flag);
    PEER_FLAGS
        .iter()
        .find(|(f, _, _)| *f == name)
        .map(|(f, tool, instead)| format!("`{f}` is {tool}'s spelling; in goodput: {instead}"))
}

/// Parses the command line; an unknown flag that is a peer's spelling is reported
/// with goodput's equivalent (exit 2), any other error as clap reports it.
pub fn parse_or_exit() -> Cli {
    match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            if let Some(message) = peer_message(&e) {
                eprintln!("{message}");
                std::process::exit(2);
            }
            e.exit()
        }
    }
}

/// The message for a clap error caused by a peer's spelling.
fn peer_message(e: &clap::Error) -> Option<String> {
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let hint = peer_hint(arg)?;
    Some(format!(
        "error: unexpected argument '{arg}'\n\n  {hint}\n\nFor more information, try '--help'."
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_peer_spelling_names_goodputs_flag_and_not_clap_s_guess() {
        let e = Cli::try_parse_from(["goodput", "run", "--request-count", "5"]).unwrap_err();
        let m = peer_message(&e).expect("a peer hint");
        assert!(m.contains("AIPerf's spelling"), "{m}");
        assert!(m.contains("--requests"), "{m}");
        assert!(!m.contains("similar argument"), "{m}");
    }

    #[test]
    fn an_unknown_flag_that_no_peer_spells_is_left_to_clap() {
        let e = Cli::try_parse_from(["goodput", "run", "--bogus-flag"]).unwrap_err();
        assert!(peer_message(&e).is_none());
    }

    #[test]
    fn vllm_spellings_parse() {
        let cli = Cli::try_parse_from([
            "goodput",
            "run",
            "--base-url",
            "http://127.0.0.1:1",
            "--request-rate",
            "inf",
            "--goodput",
            "ttft:1000",
            "tpot:100",
            "--num-prompts",
            "3",
        ])
        .expect("vLLM's flags parse");
        let super::super::Command::Run(a) = cli.command else {
            panic!("not run")
        };
        assert_eq!(a.common.peer.url.as_deref(), Some("http://127.0.0.1:1"));
        assert_eq!(a.common.peer.vllm.goodput, ["ttft:1000", "tpot:100"]);
    }
}
