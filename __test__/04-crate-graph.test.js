'use strict';
// The layer table of CONTRIBUTING.md is the crate graph: each crate depends on exactly the
// workspace crates its row lists, each of them in a row below it; napi is in one crate; and
// inside each crate no Rust file imports another in a circle.

const { test, describe } = require('node:test');
const assert = require('node:assert');
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.join(__dirname, '..');

/** The table's rows that name a crate, top to bottom: { crate, folder, mayUse: [crate] }. */
function layerTable() {
  const text = fs.readFileSync(path.join(ROOT, 'CONTRIBUTING.md'), 'utf8');
  const section = text.slice(text.indexOf('## The layers'), text.indexOf('## Where each concern lives'));
  const rows = [];
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    // | layer | crate | folder | it is | may use |
    if (cells.length !== 7) continue;
    const crate = /^`(cipherlite-[a-z]+)`$/.exec(cells[2]);
    if (!crate) continue;
    const mayUse = [...cells[5].matchAll(/`(cipherlite-[a-z]+)`/g)].map((m) => m[1]);
    rows.push({ crate: crate[1], folder: cells[3].replace(/`/g, ''), mayUse });
  }
  return rows;
}

/** `cargo metadata` of the workspace. */
function metadata() {
  const out = execFileSync('cargo', ['metadata', '--format-version', '1', '--offline'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  return JSON.parse(out);
}

/** The `use`/path edges of one crate's files: Map(file → Set(file)), code only. */
function fileImports(srcDir) {
  const files = [];
  const walk = (dir) => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.rs')) files.push(p);
    }
  };
  walk(srcDir);
  // A module's file: src/a.rs or src/a/mod.rs for module path [a]; the crate root is lib.rs.
  const moduleFile = (segments) => {
    const base = path.join(srcDir, ...segments);
    if (fs.existsSync(`${base}.rs`)) return `${base}.rs`;
    if (fs.existsSync(path.join(base, 'mod.rs'))) return path.join(base, 'mod.rs');
    return null;
  };
  const modulePath = (file) => {
    const rel = path.relative(srcDir, file).replace(/\.rs$/, '').split(path.sep);
    if (rel[rel.length - 1] === 'mod' || rel[rel.length - 1] === 'lib') rel.pop();
    return rel;
  };
  const edges = new Map();
  for (const file of files) {
    const name = path.basename(file);
    // Test modules import whatever they test; a module's root file only declares and
    // re-exports its children.
    if (name === 'tests.rs' || name === 'test_support.rs' || name === 'lib.rs' || name === 'mod.rs') continue;
    let code = fs.readFileSync(file, 'utf8');
    const testsAt = code.search(/#\[cfg\(test\)\]\s*mod tests\b/);
    if (testsAt >= 0) code = code.slice(0, testsAt);
    code = code.replace(/\/\/.*$/gm, '');
    const here = modulePath(file);
    const parent = here.slice(0, -1);
    const targets = new Set();
    const add = (segments) => {
      // The longest prefix that is a module file (a::b::Item → a/b.rs, else a.rs).
      for (let n = segments.length; n > 0; n--) {
        const f = moduleFile(segments.slice(0, n));
        if (f) {
          if (f !== file && !/(^|\/)(lib|mod)\.rs$/.test(f)) targets.add(f);
          return;
        }
      }
    };
    const expand = (prefix, body) => {
      // `{a, b::{c, d}, self}` one level deep is what the tree uses.
      for (const part of body.split(',')) {
        const first = part
          .trim()
          .split('::')[0]
          .replace(/[{}\s]/g, '');
        if (first && first !== 'self' && first !== '*') add([...prefix, first]);
      }
    };
    for (const m of code.matchAll(/\b(super|crate)((?:::[a-z_][a-z0-9_]*)*)::\{([^;]*?)\}\s*;/gs)) {
      const base = m[1] === 'super' ? parent : [];
      const mid = m[2].split('::').filter(Boolean);
      expand([...base, ...mid], m[3]);
    }
    for (const m of code.matchAll(/\b(super|crate)((?:::[a-z_][a-z0-9_]*)+)/g)) {
      const base = m[1] === 'super' ? parent : [];
      add([...base, ...m[2].split('::').filter(Boolean)]);
    }
    edges.set(file, targets);
  }
  return edges;
}

/** Strongly connected components with more than one file (Tarjan). */
function circles(edges) {
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const found = [];
  const visit = (v) => {
    idx.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v) || []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v), low.get(w)));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const scc = [];
      let w;
      do {
        w = stack.pop();
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1) found.push(scc.map((f) => path.relative(ROOT, f)).sort());
    }
  };
  for (const v of edges.keys()) if (!idx.has(v)) visit(v);
  return found;
}

describe('04 crate graph', () => {
  const rows = layerTable();
  const meta = metadata();
  const members = new Map(meta.packages.filter((p) => meta.workspace_members.includes(p.id)).map((p) => [p.name, p]));
  // Dependencies that ship (normal and build), as the graph a layer may rely on.
  const shipped = (pkg) => pkg.dependencies.filter((d) => d.kind !== 'dev');

  test('04.1 the table names every crate of the workspace but the integration tests, once', () => {
    assert.ok(rows.length >= 7, `layer rows found: ${rows.map((r) => r.crate)}`);
    const named = rows.map((r) => r.crate);
    assert.deepStrictEqual([...new Set(named)], named, 'a crate appears in two rows');
    const expected = [...members.keys()].filter((n) => n !== 'cipherlite-tests').sort();
    assert.deepStrictEqual([...named].sort(), expected);
    for (const r of rows) {
      const manifest = path.relative(ROOT, path.dirname(members.get(r.crate).manifest_path));
      assert.strictEqual(`${manifest}/`, r.folder, `${r.crate}'s folder`);
    }
  });

  test('04.2 each crate depends on exactly the crates its row lists, all in rows below it', () => {
    const rank = new Map(rows.map((r, i) => [r.crate, i]));
    for (const r of rows) {
      const uses = shipped(members.get(r.crate))
        .map((d) => d.name)
        .filter((n) => members.has(n))
        .sort();
      assert.deepStrictEqual(uses, [...r.mayUse].sort(), `${r.crate}'s workspace dependencies`);
      for (const u of uses) assert.ok(rank.get(u) > rank.get(r.crate), `${r.crate} → ${u} points up`);
    }
  });

  test('04.3 napi is a dependency of the bridge crate only, and only it is a cdylib', () => {
    for (const [name, pkg] of members) {
      const napi = shipped(pkg).filter((d) => d.name.startsWith('napi'));
      if (name === 'cipherlite-node') assert.ok(napi.length > 0, 'the bridge uses napi');
      else assert.deepStrictEqual(napi, [], `${name} depends on napi`);
      const cdylib = pkg.targets.some((t) => t.crate_types.includes('cdylib'));
      assert.strictEqual(cdylib, name === 'cipherlite-node', `${name}'s crate types`);
    }
  });

  test('04.4 no Rust file imports another in a circle', () => {
    for (const r of rows) {
      const found = circles(fileImports(path.join(ROOT, r.folder, 'src')));
      assert.deepStrictEqual(found, [], `${r.crate} has files importing each other`);
    }
  });

  test('04.5 the circle check finds a circle', () => {
    const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'cipherlite-04-'));
    try {
      fs.writeFileSync(path.join(dir, 'lib.rs'), 'mod a;\nmod b;\nmod c;\n');
      fs.writeFileSync(path.join(dir, 'a.rs'), 'use super::b::B;\npub struct A;\n');
      fs.writeFileSync(path.join(dir, 'b.rs'), 'use super::{c::C, a};\npub struct B;\n');
      fs.writeFileSync(path.join(dir, 'c.rs'), 'pub struct C;\n// use super::a;\n');
      const found = circles(fileImports(dir));
      assert.strictEqual(found.length, 1);
      assert.deepStrictEqual(
        found[0].map((f) => path.basename(f)),
        ['a.rs', 'b.rs'],
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
