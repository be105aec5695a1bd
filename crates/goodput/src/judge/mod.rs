//! **Judge**: the capacity search's next step and the one trial rule ([`search`]);
//! the sweep that runs engines x points x trials and judges each point, writing the
//! report after every trial ([`run`]); and the decisions of a comparison between
//! reports ([`compare`]). How sure each judgement is comes from [`crate::stats`].

pub mod compare;
pub mod run;
pub mod search;
