//! No file of `src/` imports another that imports it back, directly or around a circle
//! (CONTRIBUTING.md's rule). An edge is a path `super::…` or `crate::…` (in a `use` or in
//! code) that names a module file other than the file itself, `lib.rs` or a `mod.rs`: those
//! two only declare modules and re-export. `#[cfg(test)] mod tests` blocks, which may reach
//! anywhere, and comments are left out. `cargo test --test file_imports -- --nocapture`
//! prints the graph.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Module path of every `.rs` file under `src` (`lib.rs` is `[]`, `x/mod.rs` is `["x"]`).
fn module_files(src: &Path) -> BTreeMap<Vec<String>, PathBuf> {
    let mut files = BTreeMap::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable src dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(src).expect("under src");
            let mut module: Vec<String> = relative
                .iter()
                .map(|part| part.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            if matches!(module.last().map(String::as_str), Some("lib" | "mod")) {
                module.pop();
            }
            files.insert(module, path);
        }
    }
    files
}

/// The code of a file without comments and without its `#[cfg(test)] mod tests` block.
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).expect("readable source");
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => &text[..],
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path in `code` that starts with `super` or `crate`, braces of `use` trees
/// expanded (`use super::{a::B, c}` gives `super::a::B` and `super::c`).
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let tokens: Vec<String> = {
        let mut tokens = Vec::new();
        let mut word = String::new();
        let mut chars = code.chars().peekable();
        while let Some(c) = chars.next() {
            if c.is_alphanumeric() || c == '_' {
                word.push(c);
                continue;
            }
            if !word.is_empty() {
                tokens.push(std::mem::take(&mut word));
            }
            if c == ':' && chars.peek() == Some(&':') {
                chars.next();
                tokens.push("::".into());
            } else if "{},;".contains(c) {
                tokens.push(c.to_string());
            } else if !c.is_whitespace() {
                tokens.push(" ".into());
            }
        }
        tokens
    };
    let mut paths = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        if tokens[i] == "super" || tokens[i] == "crate" {
            let starts_path = i == 0 || tokens[i - 1] != "::";
            if starts_path {
                i = read_tree(&tokens, i, Vec::new(), &mut paths);
                continue;
            }
        }
        i += 1;
    }
    paths
}

/// Reads the path (or `use` tree) starting at `tokens[i]` under `prefix`; returns the index
/// after it.
fn read_tree(
    tokens: &[String],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match tokens.get(i).map(String::as_str) {
            Some("{") => {
                i += 1;
                loop {
                    match tokens.get(i).map(String::as_str) {
                        Some("}") => return i + 1,
                        Some(",") => i += 1,
                        None => return i,
                        _ => i = read_tree(tokens, i, prefix.clone(), out),
                    }
                }
            }
            Some(word) if word.chars().all(|c| c.is_alphanumeric() || c == '_') => {
                prefix.push(word.to_string());
                i += 1;
                if tokens.get(i).map(String::as_str) == Some("::") {
                    i += 1;
                    continue;
                }
                out.push(prefix);
                return i;
            }
            _ => {
                out.push(prefix);
                return i;
            }
        }
    }
}

/// The module file a path from module `from` names, if any: the longest prefix of the
/// resolved path that is a module file.
fn target(
    from: &[String],
    path: &[String],
    files: &BTreeMap<Vec<String>, PathBuf>,
) -> Option<Vec<String>> {
    let mut base: Vec<String> = from.to_vec();
    let mut rest = path;
    if rest.first().map(String::as_str) == Some("crate") {
        base.clear();
        rest = &rest[1..];
    } else {
        while rest.first().map(String::as_str) == Some("super") {
            base.pop()?;
            rest = &rest[1..];
        }
    }
    let mut found = None;
    let mut module = base;
    for segment in rest {
        module.push(segment.clone());
        if files.contains_key(&module) {
            found = Some(module.clone());
        } else {
            break;
        }
    }
    found
}

fn is_reexport_file(path: &Path) -> bool {
    matches!(
        path.file_name().and_then(|name| name.to_str()),
        Some("lib.rs" | "mod.rs")
    )
}

#[test]
fn no_file_imports_another_in_a_circle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = module_files(&src);
    let name = |module: &Vec<String>| {
        files[module]
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/")
    };
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (module, path) in &files {
        if is_reexport_file(path) {
            continue;
        }
        let mut edges: Vec<String> = paths_in(&code_of(path))
            .iter()
            .filter_map(|p| target(module, p, &files))
            .filter(|to| to != module && !is_reexport_file(&files[to]))
            .map(|to| name(&to))
            .collect();
        edges.sort();
        edges.dedup();
        graph.insert(name(module), edges);
    }
    for (file, edges) in &graph {
        println!("{file} -> {}", edges.join(", "));
    }

    // Depth-first search; a grey node met again closes a circle.
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        White,
        Grey,
        Black,
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, Vec<String>>,
        marks: &mut BTreeMap<String, Mark>,
        stack: &mut Vec<String>,
    ) {
        marks.insert(node.to_string(), Mark::Grey);
        stack.push(node.to_string());
        for next in &graph[node] {
            match marks[next] {
                Mark::Grey => {
                    let from = stack.iter().position(|n| n == next).expect("on the stack");
                    panic!("import circle: {} -> {next}", stack[from..].join(" -> "));
                }
                Mark::White => visit(next, graph, marks, stack),
                Mark::Black => {}
            }
        }
        stack.pop();
        marks.insert(node.to_string(), Mark::Black);
    }
    let mut marks: BTreeMap<String, Mark> =
        graph.keys().map(|k| (k.clone(), Mark::White)).collect();
    for node in graph.keys() {
        if marks[node] == Mark::White {
            visit(node, &graph, &mut marks, &mut Vec::new());
        }
    }
}
