//! The prompt salt (`[workload] salt = true`, `--prompt-salt[=SALT]`): a short
//! random string, drawn from the OS once per run, that starts every prompt of the
//! run. An engine's prefix cache names a prompt's blocks by their tokens from the
//! first one on, so a salted run shares no cached block with any other run (an
//! earlier run with the same `--seed` leaves its prompts in the cache, and a second
//! run on that engine process would otherwise be served from it), while prompts
//! that share a prefix within the run (a `prefix` workload, a conversation's
//! history) still share it. The salt is shorter than one KV block (vLLM's 16
//! tokens), so it adds no shared block of its own.
//!
//! The report records the salt (`run.prompt_salt`): a resumed run uses it again,
//! and the shards of one sweep are given one salt on their command lines
//! (`goodput slurm` and `goodput k8s` draw it), so the whole run sent one set of
//! prompts. It is not part of the plan's fingerprint (whether prompts are salted
//! is: `salt = true` in the workload's description).

use rand::RngCore;

/// Characters a drawn salt is made of.
const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
/// Characters of a drawn salt (36^12, about 4.7e18 salts).
pub const DRAWN_LEN: usize = 12;

pub use crate::define::profile::{parse_prompt_salt as parse, PromptSalt};

/// A salt drawn from the operating system's random source.
pub fn draw() -> String {
    let mut bytes = [0u8; DRAWN_LEN];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes
        .iter()
        .map(|b| char::from(ALPHABET[usize::from(*b) % ALPHABET.len()]))
        .collect()
}

/// The salt a run uses: none when its plan salts nothing; a resumed run's own
/// (`previous`, from its report); the given one; or a fresh draw. A given salt that
/// is not the resumed run's is refused: the run's trials would not share prompts.
pub fn resolve(
    plan: Option<&PromptSalt>,
    previous: Option<String>,
) -> Result<Option<String>, String> {
    match (plan, previous) {
        (None, _) => Ok(None),
        (Some(PromptSalt::Given(g)), Some(p)) if *g != p => Err(format!(
            "the run at the output salted its prompts with {p:?}, not {g:?}: resume it with \
             --prompt-salt={p}, or start over with --fresh"
        )),
        (Some(_), Some(p)) => Ok(Some(p)),
        (Some(PromptSalt::Given(g)), None) => Ok(Some(g.clone())),
        (Some(PromptSalt::Draw), None) => Ok(Some(draw())),
    }
}

/// The salt every shard of a sweep is given (drawn here when the plan draws one),
/// for the cluster writers' command lines.
pub fn for_shards(plan: Option<&PromptSalt>) -> Option<PromptSalt> {
    plan.map(|s| match s {
        PromptSalt::Draw => PromptSalt::Given(draw()),
        given => given.clone(),
    })
}

/// `prompt` with the run's salt in front.
pub fn salted(salt: Option<&str>, prompt: &str) -> String {
    match salt {
        Some(s) => format!("{s} {prompt}"),
        None => prompt.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drawn_salts_are_short_fresh_and_parse_back() {
        let (a, b) = (draw(), draw());
        assert_eq!(a.len(), DRAWN_LEN);
        assert_ne!(a, b, "two runs draw two salts");
        assert_eq!(parse(&a), Ok(PromptSalt::Given(a.clone())));
        assert_eq!(parse(""), Ok(PromptSalt::Draw));
        assert!(parse("a b").is_err());
        assert!(parse(&"x".repeat(65)).is_err());
    }

    #[test]
    fn a_resumed_run_keeps_its_salt_and_refuses_another() {
        let given = PromptSalt::Given("s1".into());
        assert_eq!(resolve(None, Some("old".into())), Ok(None));
        assert_eq!(
            resolve(Some(&PromptSalt::Draw), Some("old".into())),
            Ok(Some("old".into()))
        );
        assert_eq!(resolve(Some(&given), None), Ok(Some("s1".into())));
        assert_eq!(
            resolve(Some(&given), Some("s1".into())),
            Ok(Some("s1".into()))
        );
        let e = resolve(Some(&given), Some("old".into())).unwrap_err();
        assert!(e.contains("--prompt-salt=old"), "{e}");
        let fresh = resolve(Some(&PromptSalt::Draw), None).unwrap();
        assert_eq!(fresh.map(|s| s.len()), Some(DRAWN_LEN));
        // Shards share one salt, drawn once.
        let Some(PromptSalt::Given(s)) = for_shards(Some(&PromptSalt::Draw)) else {
            panic!("a drawn salt for the shards");
        };
        assert_eq!(s.len(), DRAWN_LEN);
        assert_eq!(for_shards(Some(&given)), Some(given));
        assert_eq!(salted(Some("k3"), "hello"), "k3 hello");
        assert_eq!(salted(None, "hello"), "hello");
    }
}
