//! **Judge**: the one place a "meets", "better" or "capacity" is decided: the
//! capacity search's next step and the one trial rule ([`search`]), a search's
//! answer read off its probes ([`capacity`]), and the decisions of a comparison
//! between reports ([`compare`]), which the verdict and `gate` call too. How sure
//! each judgement is comes from [`crate::stats`].

pub mod capacity;
pub mod compare;
pub mod search;
