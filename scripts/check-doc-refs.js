'use strict';
// Checks that every reference to the project's documents resolves inside the repository:
//
//   * a document named as `docs/<name>.md`, or as a bare `<name>.md`, exists (in docs/, or
//     at the root for README.md and CONTRIBUTING.md);
//   * every section reference (the section sign followed by a number, such as
//     `docs/sqlcipher4-format.md` followed by a section sign and 7, or a range like 5.1–5.6)
//     names a heading or a numbered table row of the document it refers to;
//   * nothing points at the old reference documents outside the repository (the shared
//     docs folder, the upper-case design and style files, the old better-sqlite3 API file).
//
// Which document a section reference belongs to: one named on the same line (the closest
// before it, else the closest after it); otherwise, in docs/ and CONTRIBUTING.md, the file
// itself; otherwise the closest document named earlier in the file. A reference with no
// document to belong to is an error: name the document once, e.g. in the module doc line.
// Section references to RFCs ("RFC 8018" before the sign) are not ours and are skipped.
//
//   node scripts/check-doc-refs.js [--root DIR] [--verbose]
//
// Exit code 0: everything resolves; 1: problems (listed as file:line: message); 2: bad usage.

const fs = require('fs');
const path = require('path');

/** Where references are looked for (relative to the root): folders, then single files. */
const SCAN_DIRS = [
  'crates',
  'lib',
  '__test__',
  'benchmark',
  'scripts',
  'testdata',
  'npm',
  'docs',
  '.ci',
  '.github',
  '.cargo',
];
const SCAN_FILES = [
  'README.md',
  'CONTRIBUTING.md',
  'index.js',
  'index.d.ts',
  'relay.js',
  'relay.d.ts',
  'Cargo.toml',
  'package.json',
  '.editorconfig',
];
/** Never scanned: dependencies, build output, caches, and benchmark reports (generated records). */
const SKIP_DIRS = new Set(['node_modules', 'target', '.git', '.cache', '.venv-build', '.venv-interop']);
const SKIP_PATHS = new Set(['benchmark/results']);
const TEXT_EXTENSIONS = new Set([
  '.rs',
  '.js',
  '.ts',
  '.md',
  '.sh',
  '.toml',
  '.yml',
  '.yaml',
  '.json',
  '.py',
  '.c',
  '',
]);
/** Documents that live at the root rather than in docs/. */
const ROOT_DOCS = new Set(['README.md', 'CONTRIBUTING.md']);

/** References that leave the repository, with what to write instead. */
const OUTSIDE = [
  { re: /(?:\.\.\/|\/work\/)shared\b/g, fix: "the repository's own docs/ or testdata/" },
  { re: /(?<![\w.-])shared\/(?:docs|testdata)\b/g, fix: "the repository's own docs/ or testdata/" },
  { re: /(?<![\w.-])DESIGN\.md\b/g, fix: 'docs/design.md' },
  { re: /(?<![\w.-])STYLE\.md\b/g, fix: 'CONTRIBUTING.md' },
  { re: /(?<![\w.-])better-sqlite3-api\.md\b/g, fix: 'docs/better-sqlite3-behaviour.md' },
];

/**
 * `docs/<name>.md` (not part of a longer path), or a bare `<name>.md`; not a file name built
 * in a template string (`${date}-storage.md`). Group 1: the docs/ prefix; group 2: the name.
 */
const DOC_NAME = /(?<![\w./}-])(docs\/)?(\w[\w-]*\.md)\b/g;
/** A section reference: number (4, 4d, 5.11, 8.1.10), optionally a range to a second one. */
const SECTION_REF = /\u00a7\s?(\d+[a-z]?(?:\.\d+)*)(?:\s?[\u2013-]\s?(\d+[a-z]?(?:\.\d+)*))?/g;
/** Headings `## 7. Journals`, `### 4a. SQLCipher layout`, `### 8.1 V1: …`. */
const HEADING_ID = /^#{1,6}\s+(\d+[a-z]?(?:\.\d+)*)\.?(?=\s|$)/;
/** Numbered table rows `| 5.11 | bind(...) | …`. */
const ROW_ID = /^\|\s*(\d+(?:\.\d+)+)\s*\|/;

function listFiles(root) {
  const files = [];
  const walk = (rel) => {
    const abs = path.join(root, rel);
    for (const entry of fs.readdirSync(abs, { withFileTypes: true })) {
      const child = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!SKIP_DIRS.has(entry.name) && !SKIP_PATHS.has(child)) walk(child);
      } else if (entry.isFile() && TEXT_EXTENSIONS.has(path.extname(entry.name))) {
        files.push(child);
      }
    }
  };
  for (const dir of SCAN_DIRS) if (fs.existsSync(path.join(root, dir))) walk(dir);
  for (const file of SCAN_FILES) if (fs.existsSync(path.join(root, file))) files.push(file);
  return files;
}

/** The section ids of a document: numbered headings and numbered table rows. */
function sectionIds(text) {
  const ids = new Set();
  for (const line of text.split('\n')) {
    const m = HEADING_ID.exec(line) || ROW_ID.exec(line);
    if (m) ids.add(m[1]);
  }
  return ids;
}

function lineStarts(text) {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text[i] === '\n') starts.push(i + 1);
  return starts;
}

function lineOf(starts, offset) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Checks the tree at `root`. Returns `{ problems: [{ file, line, message }], files, refs, docs }`
 * (`refs`: section references checked; `docs`: document mentions checked).
 */
function check(root) {
  const problems = [];
  const docsDir = path.join(root, 'docs');
  const docCache = new Map();
  /** The repository path of document `name` (as cited), or null if it does not exist. */
  const resolveDoc = (name, prefixed) => {
    if (!prefixed && ROOT_DOCS.has(name)) return fs.existsSync(path.join(root, name)) ? name : null;
    return fs.existsSync(path.join(docsDir, name)) ? `docs/${name}` : null;
  };
  const idsOf = (doc) => {
    if (!docCache.has(doc)) docCache.set(doc, sectionIds(fs.readFileSync(path.join(root, doc), 'utf8')));
    return docCache.get(doc);
  };

  let refs = 0;
  let docs = 0;
  const files = listFiles(root);
  for (const file of files) {
    const text = fs.readFileSync(path.join(root, file), 'utf8');
    if (text.includes('\0')) continue;
    const starts = lineStarts(text);
    const report = (offset, message) => problems.push({ file, line: lineOf(starts, offset) + 1, message });

    for (const { re, fix } of OUTSIDE) {
      for (const m of text.matchAll(re)) report(m.index, `"${m[0]}" points outside the repository: use ${fix}`);
    }

    // Every document mention, in order: { offset, line, doc (null if it does not resolve) }.
    const mentions = [];
    for (const m of text.matchAll(DOC_NAME)) {
      const [, prefix, name] = m;
      if (!prefix && !ROOT_DOCS.has(name) && !fs.existsSync(path.join(docsDir, name))) {
        // A bare name that is not one of ours: an outside name is reported above; other
        // projects' files (Evolu's README.md paths, say) are written with their folder.
        if (OUTSIDE.some(({ re }) => new RegExp(re.source).test(m[0]))) continue;
        report(m.index, `"${m[0]}" is not a document in docs/ (write the path if it is another project's file)`);
        mentions.push({ offset: m.index, line: lineOf(starts, m.index), doc: null });
        continue;
      }
      docs++;
      const doc = resolveDoc(name, Boolean(prefix));
      if (!doc) report(m.index, `"${m[0]}" does not exist`);
      mentions.push({ offset: m.index, line: lineOf(starts, m.index), doc });
    }

    const self = file.startsWith('docs/') || file === 'CONTRIBUTING.md' ? file : null;
    for (const m of text.matchAll(SECTION_REF)) {
      const before = text.slice(starts[lineOf(starts, m.index)], m.index);
      if (/\bRFC\s?\d+\s*$/.test(before)) continue;
      refs++;
      const line = lineOf(starts, m.index);
      const sameLine = mentions.filter((x) => x.line === line);
      const target =
        sameLine.filter((x) => x.offset < m.index).pop() ||
        sameLine.find((x) => x.offset > m.index) ||
        (self ? { doc: self } : mentions.filter((x) => x.offset < m.index).pop());
      if (!target) {
        report(
          m.index,
          `"${m[0]}" names no document: write "docs/<name>.md ${m[0]}", or name the document earlier in the file`,
        );
        continue;
      }
      if (!target.doc) continue; // the missing document is reported already
      const ids = idsOf(target.doc);
      for (const id of [m[1], m[2]].filter(Boolean)) {
        if (!ids.has(id)) report(m.index, `"${m[0]}": ${target.doc} has no section ${id}`);
      }
    }
  }
  return { problems, files: files.length, refs, docs };
}

function main(argv) {
  let root = path.join(__dirname, '..');
  let verbose = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--root' && argv[i + 1]) root = path.resolve(argv[++i]);
    else if (argv[i] === '--verbose') verbose = true;
    else {
      console.error('usage: node scripts/check-doc-refs.js [--root DIR] [--verbose]');
      return 2;
    }
  }
  const { problems, files, refs, docs } = check(root);
  for (const p of problems) console.log(`${p.file}:${p.line}: ${p.message}`);
  const summary = `check-doc-refs: ${files} files, ${docs} document mentions, ${refs} section references, ${problems.length} problems`;
  if (problems.length || verbose) console.log(summary);
  return problems.length ? 1 : 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));

module.exports = { check, sectionIds };
