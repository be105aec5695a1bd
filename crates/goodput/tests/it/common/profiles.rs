//! The profiles the sweep tests run: simulators on the `fixed` preset (steady
//! and fast), so that a whole sweep takes seconds.

/// A profile `name` of one `fixed` simulator per name in `engines`, with prompts
/// of 16 tokens and outputs of `output_tokens`; `sections` is the TOML of its
/// `[slo]` and `[load]` (each line ending in a newline).
pub fn fixed_sims(name: &str, sections: &str, output_tokens: u32, engines: &[&str]) -> String {
    let mut p = format!(
        "\nname = \"{name}\"\n{sections}[workload]\ninput_tokens = 16\noutput_tokens = {output_tokens}\n"
    );
    for e in engines {
        p.push_str(&format!(
            "[engines.{e}]\nkind = \"sim\"\npreset = \"fixed\"\n"
        ));
    }
    p
}
