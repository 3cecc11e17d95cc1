'use strict';
// Checks that a release build is reproducible: copies the source tree (the files git
// tracks or would track, uncommitted changes included) to two different paths, builds each
// target in both with the flags of scripts/lib/targets.js (the second with its own
// CARGO_HOME), and fails unless the two `.node` files are byte-identical.
//   npm run check:reproducible                          the host's target
//   npm run check:reproducible -- --targets all         all eight
//   options: --same-cargo-home  build both copies with the one CARGO_HOME
//            --clean            start from empty target dirs (the copies live in target/repro/
//                               and keep their target dirs between runs, so dependencies stay built)
//            --against-packaged compare npm/<target>/cipherlite.<target>.node (npm run build:targets,
//                               built in this checkout) with one rebuild in the second copy
// Ends with a line "reproducible: N passed, N failed".

const fs = require('fs');
const path = require('path');
const {
  ROOT,
  targetsFromArgs,
  ensureBuildTools,
  ensureRustTargets,
  buildTarget,
  cargoHome,
  sha256,
  packagedBinary,
  log,
  output,
  run,
} = require('./lib/targets');
const { inspectBinary } = require('./lib/inspect-binary');

const REPRO = path.join(ROOT, 'target', 'repro');
// Two checkouts at paths of different lengths and depths.
const COPY_A = path.join(REPRO, 'a', 'cipherlite');
const COPY_B = path.join(REPRO, 'b', 'somewhere-else', 'cipherlite-copy');
const CARGO_HOME_B = path.join(REPRO, 'cargo-home-b');

/** The files of the working tree that git tracks or would track (not ignored). */
function sourceFiles() {
  const out = output('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    maxBuffer: 64 << 20,
  });
  return [...new Set(out.split('\0').filter(Boolean))].filter(
    (f) => fs.existsSync(path.join(ROOT, f)) && !fs.lstatSync(path.join(ROOT, f)).isDirectory(),
  );
}

/** Lays the source files out at `dest` afresh, keeping only its target/ dir. */
function copyTree(files, dest) {
  fs.mkdirSync(dest, { recursive: true });
  for (const entry of fs.readdirSync(dest)) {
    if (entry !== 'target') fs.rmSync(path.join(dest, entry), { recursive: true, force: true });
  }
  for (const f of files) {
    const to = path.join(dest, f);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(path.join(ROOT, f), to);
  }
}

/** A second CARGO_HOME, seeded with hard links to the first one's downloaded crates. */
function secondCargoHome() {
  if (fs.existsSync(CARGO_HOME_B)) return CARGO_HOME_B;
  fs.mkdirSync(CARGO_HOME_B, { recursive: true });
  for (const sub of ['registry/index', 'registry/cache']) {
    const src = path.join(cargoHome(), sub);
    if (!fs.existsSync(src)) continue;
    fs.mkdirSync(path.dirname(path.join(CARGO_HOME_B, sub)), { recursive: true });
    run('cp', ['-al', src, path.join(CARGO_HOME_B, sub)]);
  }
  return CARGO_HOME_B;
}

function firstDifference(a, b) {
  const x = fs.readFileSync(a);
  const y = fs.readFileSync(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] !== y[i]) return i;
  return x.length === y.length ? -1 : n;
}

function describe(file) {
  try {
    const info = inspectBinary(file);
    if (info.format === 'elf') return info.glibcFloor ? `glibc ${info.glibcFloor}` : 'no glibc symbols';
    return `macOS ${info.minOS}`;
  } catch (err) {
    return `(not inspected: ${err.message})`;
  }
}

function main(argv) {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(
      'usage: node scripts/check-reproducible.js [--targets host|all|a,b,...] [--same-cargo-home] [--clean] [--against-packaged]',
    );
    return 0;
  }
  const targets = targetsFromArgs(argv, 'host');
  if (argv.includes('--clean')) fs.rmSync(REPRO, { recursive: true, force: true });
  const toolsBin = ensureBuildTools();
  ensureRustTargets(targets);
  const againstPackaged = argv.includes('--against-packaged');
  const pathA = againstPackaged ? ROOT : COPY_A;
  if (againstPackaged) {
    for (const target of targets) {
      if (!fs.existsSync(packagedBinary(target))) {
        throw new Error(
          `--against-packaged: ${path.relative(ROOT, packagedBinary(target))} is missing (npm run build:targets)`,
        );
      }
    }
  }
  const files = sourceFiles();
  log(
    `copying ${files.length} files to ${againstPackaged ? '' : `${path.relative(ROOT, COPY_A)} and `}${path.relative(ROOT, COPY_B)}`,
  );
  if (!againstPackaged) copyTree(files, COPY_A);
  copyTree(files, COPY_B);
  const homeB = argv.includes('--same-cargo-home') ? cargoHome() : secondCargoHome();
  const results = [];
  for (const target of targets) {
    const started = Date.now();
    const a = againstPackaged
      ? packagedBinary(target)
      : buildTarget(target, { root: COPY_A, toolsBin, skipRustTargets: true });
    const b = buildTarget(target, { root: COPY_B, cargoHome: homeB, toolsBin, skipRustTargets: true });
    const [ha, hb] = [sha256(a), sha256(b)];
    results.push({
      target: target.name,
      size: fs.statSync(a).size,
      sizeB: fs.statSync(b).size,
      floor: describe(a),
      a: ha,
      b: hb,
      same: ha === hb,
      diffAt: ha === hb ? -1 : firstDifference(a, b),
      seconds: Math.round((Date.now() - started) / 1000),
    });
  }
  let passed = 0;
  for (const r of results) {
    if (r.same) passed++;
    console.log(
      `${r.same ? 'same' : 'DIFF'} ${r.target.padEnd(17)} ${String(r.size).padStart(9)} B  ${r.floor.padEnd(11)} ${r.seconds} s`,
    );
    console.log(`     a ${r.a}  ${path.relative(ROOT, pathA) || '.'}`);
    console.log(`     b ${r.b}  ${path.relative(ROOT, COPY_B)}`);
    if (!r.same) console.log(`     sizes ${r.size} / ${r.sizeB}, first differing byte at offset ${r.diffAt}`);
  }
  console.log(`reproducible: ${passed} passed, ${results.length - passed} failed`);
  return passed === results.length ? 0 : 1;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  console.error(`check-reproducible: ${err.message}`);
  process.exitCode = 1;
}
