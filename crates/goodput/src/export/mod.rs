//! **Export**: goodput's runs written in other tools' formats, one writer per
//! format: `vllm bench serve --save-result`'s JSON ([`vllm`]), so a vLLM
//! dashboard or script reads a goodput run. (Reading other tools' files is
//! [`crate::import`].)

pub mod vllm;
