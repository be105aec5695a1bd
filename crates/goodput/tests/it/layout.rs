//! The map stays true: goodput's modules, read from their own `crate::` paths
//! (outside tests and comments), stack in the pipeline's families in order. A
//! family imports only the families before it and the helpers beside every stage;
//! the helpers import no family; nothing but the door imports the command line
//! (`cli`); and no two modules import each other, directly or in a circle.
//!
//! A module is a family's folder's child (`drive/record`), or a file or folder at
//! the top of `src/` (`stats`, `cli`). `super::` paths stay inside a module and are
//! not read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The pipeline's families, in order: each may import the ones before it.
const FAMILIES: [&str; 10] = [
    "define",
    "drive",
    "measure",
    "import",
    "judge",
    "sweep",
    "model",
    "distribute",
    "export",
    "store",
];
/// Beside every stage: they import no family.
const HELPERS: [&str; 6] = ["stats", "files", "bounded", "redact", "stop", "term"];
/// The door: it may import everything; only it knows clap.
const DOOR: &str = "cli";

/// Where one module imports another.
#[derive(Debug, Clone)]
struct Edge {
    from: String,
    to: String,
    at: String,
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The module a file belongs to, or `None` for the crate root (lib.rs, main.rs)
/// and for test files.
fn module_of(rel: &Path) -> Option<String> {
    let parts: Vec<&str> = rel.iter().map(|c| c.to_str().unwrap_or("")).collect();
    let file = *parts.last()?;
    if file == "tests.rs" || file.ends_with("_tests.rs") || parts.contains(&"tests") {
        return None;
    }
    let stem = |s: &str| s.trim_end_matches(".rs").to_string();
    match parts.as_slice() {
        ["lib.rs"] | ["main.rs"] => None,
        [family, "mod.rs"] if FAMILIES.contains(family) => Some(family.to_string()),
        [family, module, ..] if FAMILIES.contains(family) => {
            Some(format!("{family}/{}", stem(module)))
        }
        [top, ..] => Some(stem(top)),
        [] => None,
    }
}

fn family_of(module: &str) -> &str {
    module.split('/').next().unwrap_or(module)
}

fn ident(s: &[u8], i: &mut usize) -> Option<String> {
    let start = *i;
    while *i < s.len() && (s[*i].is_ascii_alphanumeric() || s[*i] == b'_') {
        *i += 1;
    }
    (*i > start).then(|| String::from_utf8_lossy(&s[start..*i]).into_owned())
}

fn skip_ws(s: &[u8], i: &mut usize) {
    while *i < s.len() && s[*i].is_ascii_whitespace() {
        *i += 1;
    }
}

/// The first items of a `{a::b, c, d::{e}}` group starting at `s[*i] == b'{'`,
/// each with what follows it when the first is a family.
fn group(s: &[u8], i: &mut usize, family: Option<&str>, out: &mut Vec<String>) {
    *i += 1;
    loop {
        skip_ws(s, i);
        if *i >= s.len() || s[*i] == b'}' {
            *i += 1;
            return;
        }
        path(s, i, family, out);
        // Skip the rest of this item (`::X`, `as Y`, nested groups) to the next
        // comma at this depth.
        let mut depth = 0;
        while *i < s.len() {
            match s[*i] {
                b'{' => depth += 1,
                b'}' if depth == 0 => break,
                b'}' => depth -= 1,
                b',' if depth == 0 => {
                    *i += 1;
                    break;
                }
                _ => {}
            }
            *i += 1;
        }
    }
}

/// The modules a path after `crate::` names.
fn path(s: &[u8], i: &mut usize, family: Option<&str>, out: &mut Vec<String>) {
    skip_ws(s, i);
    if *i < s.len() && s[*i] == b'{' {
        group(s, i, family, out);
        return;
    }
    let Some(first) = ident(s, i) else {
        return;
    };
    match family {
        Some(f) => out.push(format!("{f}/{first}")),
        None if FAMILIES.contains(&first.as_str()) => {
            if s[*i..].starts_with(b"::") {
                *i += 2;
                let f = first.clone();
                path(s, i, Some(&f), out);
            } else {
                out.push(first);
            }
        }
        None => out.push(first),
    }
}

/// Every module the code (not its comments or tests) of `text` names by a
/// `crate::` path, with the line.
fn references(text: &str) -> Vec<(String, usize)> {
    let code = text.split("#[cfg(test)]").next().unwrap_or("");
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("//") {
            continue;
        }
        let s = line.as_bytes();
        let mut from = 0;
        while let Some(k) = line[from..].find("crate::") {
            let before = line[..from + k].chars().next_back();
            let mut i = from + k + "crate::".len();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                let mut names = Vec::new();
                path(s, &mut i, None, &mut names);
                out.extend(names.into_iter().map(|m| (m, n + 1)));
            }
            from = i.max(from + k + 1);
        }
    }
    out
}

fn edges() -> (BTreeSet<String>, Vec<Edge>) {
    let root = src();
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut modules = BTreeSet::new();
    let mut edges = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&root).expect("under src");
        let Some(from) = module_of(rel) else {
            continue;
        };
        modules.insert(from.clone());
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        for (to, line) in references(&text) {
            if to != from {
                edges.push(Edge {
                    from: from.clone(),
                    to,
                    at: format!("{}:{line}", rel.display()),
                });
            }
        }
    }
    // Only edges to modules of this crate (not `crate::UsageError`, re-exports).
    let known = modules.clone();
    edges.retain(|e| known.contains(&e.to));
    (modules, edges)
}

/// What is wrong with one edge, if anything.
fn wrong(e: &Edge) -> Option<String> {
    let (a, b) = (family_of(&e.from), family_of(&e.to));
    let rank = |f: &str| FAMILIES.iter().position(|x| *x == f);
    if b == DOOR && a != DOOR {
        return Some(format!(
            "{} imports the command line ({}) at {}",
            e.from, e.to, e.at
        ));
    }
    if HELPERS.contains(&a) && rank(b).is_some() {
        return Some(format!(
            "helper {} imports the family module {} at {}",
            e.from, e.to, e.at
        ));
    }
    if let (Some(ra), Some(rb)) = (rank(a), rank(b)) {
        if rb > ra {
            return Some(format!(
                "{} ({a}) imports {} of a later family ({b}) at {}",
                e.from, e.to, e.at
            ));
        }
    }
    None
}

/// Strongly connected components of more than one module (Tarjan).
fn circles(modules: &BTreeSet<String>, edges: &[Edge]) -> Vec<Vec<String>> {
    let names: Vec<&String> = modules.iter().collect();
    let index: BTreeMap<&String, usize> = names.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut next = vec![BTreeSet::new(); names.len()];
    for e in edges {
        next[index[&e.from]].insert(index[&e.to]);
    }
    struct T {
        next: Vec<BTreeSet<usize>>,
        idx: Vec<Option<usize>>,
        low: Vec<usize>,
        on: Vec<bool>,
        stack: Vec<usize>,
        count: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(t: &mut T, v: usize) {
        t.idx[v] = Some(t.count);
        t.low[v] = t.count;
        t.count += 1;
        t.stack.push(v);
        t.on[v] = true;
        for w in t.next[v].clone() {
            match t.idx[w] {
                None => {
                    visit(t, w);
                    t.low[v] = t.low[v].min(t.low[w]);
                }
                Some(iw) if t.on[w] => t.low[v] = t.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(t.low[v]) == t.idx[v] {
            let mut c = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on[w] = false;
                c.push(w);
                if w == v {
                    break;
                }
            }
            if c.len() > 1 {
                t.out.push(c);
            }
        }
    }
    let n = names.len();
    let mut t = T {
        next,
        idx: vec![None; n],
        low: vec![0; n],
        on: vec![false; n],
        stack: Vec::new(),
        count: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if t.idx[v].is_none() {
            visit(&mut t, v);
        }
    }
    t.out
        .into_iter()
        .map(|c| {
            let mut c: Vec<String> = c.into_iter().map(|i| names[i].clone()).collect();
            c.sort();
            c
        })
        .collect()
}

#[test]
fn families_import_only_earlier_families_and_no_module_is_in_a_circle() {
    let (modules, edges) = edges();
    // The reader finds what it must: a sanity floor, so that a broken reader
    // cannot pass by finding nothing.
    assert!(modules.len() >= 30, "only {} modules found", modules.len());
    assert!(
        edges
            .iter()
            .any(|e| e.from == "sweep/http" && e.to == "drive/record"),
        "the reader missed sweep/http -> drive/record"
    );
    for f in FAMILIES {
        assert!(
            modules.iter().any(|m| m.starts_with(&format!("{f}/"))),
            "family folder src/{f}/ is empty or missing"
        );
    }
    let mut problems: Vec<String> = edges.iter().filter_map(wrong).collect();
    problems.sort();
    problems.dedup();
    for c in circles(&modules, &edges) {
        problems.push(format!("these modules import each other: {}", c.join(", ")));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_reader_sees_grouped_nested_and_family_paths() {
    let text = "use crate::{drive::{record::R, load}, stats::median};\n\
                // use crate::cli::Args;\n\
                fn f() { crate::sweep::http::go(); let _ = my_crate::x; }\n\
                #[cfg(test)]\nmod tests { use crate::cli::Args; }\n";
    let got: Vec<(String, usize)> = references(text);
    let names: Vec<&str> = got.iter().map(|(m, _)| m.as_str()).collect();
    assert_eq!(
        names,
        ["drive/record", "drive/load", "stats", "sweep/http"],
        "{got:?}"
    );
    let back = Edge {
        from: "define/plan".into(),
        to: "judge/search".into(),
        at: "x.rs:1".into(),
    };
    assert!(wrong(&back).is_some());
    let door = Edge {
        from: "model/fit".into(),
        to: "cli".into(),
        at: "x.rs:1".into(),
    };
    assert!(wrong(&door).is_some());
    let helper = Edge {
        from: "stats".into(),
        to: "measure/metrics".into(),
        at: "x.rs:1".into(),
    };
    assert!(wrong(&helper).is_some());
    let down = Edge {
        from: "sweep/http".into(),
        to: "drive/record".into(),
        at: "x.rs:1".into(),
    };
    assert!(wrong(&down).is_none());
    let m: BTreeSet<String> = ["a", "b", "c"].into_iter().map(String::from).collect();
    let e = |a: &str, b: &str| Edge {
        from: a.into(),
        to: b.into(),
        at: String::new(),
    };
    assert_eq!(
        circles(&m, &[e("a", "b"), e("b", "c"), e("c", "a")]),
        [vec!["a".to_string(), "b".into(), "c".into()]]
    );
    assert!(circles(&m, &[e("a", "b"), e("b", "c")]).is_empty());
}
