//! **Define** what runs: the profile as written ([`profile`]), validated into a
//! plan ([`plan`]), what each request says ([`requests`]; the tools it offers, [`tools`]), and what a command was
//! asked, typed ([`options`]; `cli` fills it). Imports nothing of the later stages.

pub mod options;
pub mod plan;
pub mod profile;
pub mod requests;
pub mod tools;
