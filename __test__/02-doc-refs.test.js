'use strict';
// Every reference from code, tests, scripts and README to the project's documents resolves to
// an existing docs/ file and section (scripts/check-doc-refs.js), and nothing points outside
// the repository; plus the checker's own behaviour on a small tree of broken references.
// The fixture strings below are assembled from pieces (SECTION, md()) so that this file does
// not itself contain the references it feeds the checker.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { tempDir, removeDir } = require('./_helpers');
const { check } = require('../scripts/check-doc-refs');

const ROOT = path.join(__dirname, '..');
const SCRIPT = path.join(ROOT, 'scripts', 'check-doc-refs.js');
const SECTION = '\u00a7';
const md = (name) => `${name}.md`;

function writeTree(root, files) {
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, name)), { recursive: true });
    fs.writeFileSync(path.join(root, name), text);
  }
}

describe('02 document references', () => {
  it('02.1 every document and section cited in the repository exists', () => {
    const { problems, files, refs, docs } = check(ROOT);
    assert.deepEqual(
      problems.map((p) => `${p.file}:${p.line}: ${p.message}`),
      [],
    );
    // The scan really saw the tree: the code cites the specifications well over 100 times.
    assert.ok(files > 100, `only ${files} files scanned`);
    assert.ok(refs > 100, `only ${refs} section references found`);
    assert.ok(docs > 50, `only ${docs} document mentions found`);
  });

  it('02.2 the command exits 0 and says so', () => {
    const res = spawnSync(process.execPath, [SCRIPT, '--verbose'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(res.status, 0, res.stdout + res.stderr);
    assert.match(res.stdout, /^check-doc-refs: \d+ files, \d+ document mentions, \d+ section references, 0 problems$/m);
  });

  it('02.3 broken references are reported with file, line and what is wrong', () => {
    const root = tempDir();
    try {
      writeTree(root, {
        [`docs/${md('spec')}`]: [
          '# Spec',
          '## 1. One',
          '### 1.2 Two',
          '## 4a. Layout',
          '| # | x |',
          '|---|---|',
          '| 3.4 | row |',
          `See ${SECTION}1.2 and ${SECTION}9 of this page.`,
          '',
        ].join('\n'),
        'src/good.rs': [
          `//! The format: docs/${md('spec')} ${SECTION}1.`,
          `// ${SECTION}1.2, ${SECTION}4a, ${SECTION}3.4 and ${SECTION}1\u20131.2`,
          `// PBKDF2 (RFC 8018 ${SECTION}5.2)`,
          '',
        ].join('\n'),
        'crates/bad/src/bad.rs': [
          `// ${SECTION}7 before any document`,
          `// docs/${md('spec')} ${SECTION}5 and ${SECTION}1.3`,
          `// ${md('spec')} ${SECTION}1\u20132.1`,
          `// docs/${md('missing')} ${SECTION}1`,
          `// see ${md('nowhere')}`,
          `// ${['DESIGN', 'md'].join('.')}, ${['STYLE', 'md'].join('.')}, ${['better-sqlite3-api', 'md'].join('.')}`,
          `// ${'..'}/${'shared'}/docs/x and /work/${'shared'}/testdata`,
          '',
        ].join('\n'),
        [`benchmark/results/${md('old')}`]: `${SECTION}8 is not checked in generated reports\n`,
      });
      const { problems } = check(root);
      assert.deepEqual(
        problems.map((p) => `${p.file}:${p.line}: ${p.message}`).sort(),
        [
          `docs/${md('spec')}:8: "${SECTION}9": docs/${md('spec')} has no section 9`,
          `crates/bad/src/bad.rs:1: "${SECTION}7" names no document: write "docs/<name>.md ${SECTION}7", or name the document earlier in the file`,
          `crates/bad/src/bad.rs:2: "${SECTION}1.3": docs/${md('spec')} has no section 1.3`,
          `crates/bad/src/bad.rs:2: "${SECTION}5": docs/${md('spec')} has no section 5`,
          `crates/bad/src/bad.rs:3: "${SECTION}1\u20132.1": docs/${md('spec')} has no section 2.1`,
          `crates/bad/src/bad.rs:4: "docs/${md('missing')}" does not exist`,
          `crates/bad/src/bad.rs:5: "${md('nowhere')}" is not a document in docs/ (write the path if it is another project's file)`,
          `crates/bad/src/bad.rs:6: "${['better-sqlite3-api', 'md'].join('.')}" points outside the repository: use docs/${md('better-sqlite3-behaviour')}`,
          `crates/bad/src/bad.rs:6: "${['DESIGN', 'md'].join('.')}" points outside the repository: use docs/${md('design')}`,
          `crates/bad/src/bad.rs:6: "${['STYLE', 'md'].join('.')}" points outside the repository: use ${md('CONTRIBUTING')}`,
          `crates/bad/src/bad.rs:7: "${'..'}/shared" points outside the repository: use the repository's own docs/ or testdata/`,
          `crates/bad/src/bad.rs:7: "/work/${'shared'}" points outside the repository: use the repository's own docs/ or testdata/`,
          `crates/bad/src/bad.rs:7: "${'shared'}/docs" points outside the repository: use the repository's own docs/ or testdata/`,
          `crates/bad/src/bad.rs:7: "${'shared'}/testdata" points outside the repository: use the repository's own docs/ or testdata/`,
        ].sort(),
      );

      const res = spawnSync(process.execPath, [SCRIPT, '--root', root], { encoding: 'utf8' });
      assert.equal(res.status, 1);
      assert.match(res.stdout, /^crates\/bad\/src\/bad\.rs:4: "docs\/missing\.md" does not exist$/m);
      assert.match(res.stdout, /, 14 problems$/m);
    } finally {
      removeDir(root);
    }
  });

  it('02.4 bad usage exits 2', () => {
    const res = spawnSync(process.execPath, [SCRIPT, '--no-such-option'], { encoding: 'utf8' });
    assert.equal(res.status, 2);
    assert.match(res.stderr, /^usage: node scripts\/check-doc-refs\.js/);
  });
});
