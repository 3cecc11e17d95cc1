'use strict';
// Debian packages of another release than the host's, for tools the host's own release lacks
// (scripts/test-targets.js: musl 1.2.5, qemu-user, the arm64 cross libc; scripts/lib/wine.js:
// Wine 10 with its own libc). They are downloaded through apt with a private configuration
// (its own sources list, package lists, state and cache: the system's apt configuration and
// package state are left alone) and unpacked with dpkg -x into a folder of the caller's.
//   env: CIPHERLITE_DEBIAN_MIRROR (instead of the Debian mirror in this machine's apt sources)

const fs = require('fs');
const path = require('path');
const { run, log } = require('./targets');

const DEBIAN_CODENAMES = [
  'buster',
  'bullseye',
  'bookworm',
  'trixie',
  'forky',
  'duke',
  'sid',
  'oldstable',
  'stable',
  'testing',
  'unstable',
];

/**
 * The Debian mirror this machine's apt uses (CIPHERLITE_DEBIAN_MIRROR overrides): read from
 * /etc/apt/sources.list and sources.list.d (one-line and deb822 formats), never written.
 */
function debianMirror() {
  if (process.env.CIPHERLITE_DEBIAN_MIRROR) return process.env.CIPHERLITE_DEBIAN_MIRROR.replace(/\/+$/, '');
  const files = ['/etc/apt/sources.list'];
  try {
    for (const f of fs.readdirSync('/etc/apt/sources.list.d').sort()) {
      if (f.endsWith('.list') || f.endsWith('.sources')) files.push(path.join('/etc/apt/sources.list.d', f));
    }
  } catch {
    /* no sources.list.d */
  }
  const isDebianSuite = (s) => DEBIAN_CODENAMES.includes(s.replace(/-(updates|backports)$/, ''));
  for (const file of files) {
    let text;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    if (file.endsWith('.sources')) {
      for (const para of text.split(/\n\s*\n/)) {
        const field = (name) => {
          const m = new RegExp(`^${name}:[ \\t]*(.*)$`, 'mi').exec(para);
          return m ? m[1].trim().split(/\s+/) : [];
        };
        if (/^Enabled:\s*no/im.test(para) || !field('Types').includes('deb')) continue;
        const uri = field('URIs').find((u) => /^https?:\/\//.test(u) && !/security/.test(u));
        if (uri && field('Suites').some(isDebianSuite)) return uri.replace(/\/+$/, '');
      }
    } else {
      for (const line of text.split('\n')) {
        const m = /^\s*deb\s+(?:\[[^\]]*\]\s+)?(https?:\/\/\S+)\s+(\S+)/.exec(line);
        if (m && !/security/.test(m[1]) && isDebianSuite(m[2])) return m[1].replace(/\/+$/, '');
      }
    }
  }
  throw new Error('no Debian mirror found in /etc/apt; set CIPHERLITE_DEBIAN_MIRROR to one');
}

/** apt-get's options for a private configuration under `aptDir`, for `architectures` (the first is the native one). */
function aptOptions(aptDir, architectures) {
  return [
    `Dir::Etc::SourceList=${path.join(aptDir, 'sources.list')}`,
    `Dir::Etc::SourceParts=${path.join(aptDir, 'sources.list.d')}`,
    `Dir::State::Lists=${path.join(aptDir, 'lists')}`,
    `Dir::State::Status=${path.join(aptDir, 'status')}`,
    `Dir::Cache=${path.join(aptDir, 'cache')}`,
    `APT::Architecture=${architectures[0]}`,
    ...architectures.map((a) => `APT::Architectures::=${a}`),
    'APT::Sandbox::User=root',
    'Acquire::Languages=none',
    'Acquire::IndexTargets::deb::DEP-11::DefaultEnabled=false',
    'Acquire::IndexTargets::deb::DEP-11-icons::DefaultEnabled=false',
    'Acquire::IndexTargets::deb::DEP-11-icons-small::DefaultEnabled=false',
    'Acquire::IndexTargets::deb::CNF::DefaultEnabled=false',
  ].flatMap((o) => ['-o', o]);
}

/**
 * Downloads the packages of Debian `suite` named by `keys` and unpacks them into `sysroot`,
 * each once (a marker per key in `sysroot`/.done/ records the .deb it came from). `debs` maps
 * a key to `{ pkg, keep }`: `pkg` is the package (`name` or `name:arch`), `keep` the paths to
 * copy into the sysroot (all of the package if absent). `aptDir` holds the private apt
 * configuration while it is needed and is removed after (the package lists are tens of MB).
 * Returns the keys it unpacked.
 */
function ensureDebs({ sysroot, aptDir, suite, architectures = ['amd64'], debs, keys }) {
  const marker = (key) => path.join(sysroot, '.done', key);
  const missing = [...new Set(keys)].filter((k) => !fs.existsSync(marker(k)));
  if (!missing.length) return [];
  if (process.getuid && process.getuid() !== 0) {
    log('note: apt-get download as a non-root user may fail; run as root or unpack the packages by hand');
  }
  for (const d of ['lists/partial', 'cache/archives/partial', 'sources.list.d', 'debs']) {
    fs.mkdirSync(path.join(aptDir, d), { recursive: true });
  }
  fs.writeFileSync(path.join(aptDir, 'status'), '');
  fs.writeFileSync(
    path.join(aptDir, 'sources.list'),
    `deb [arch=${architectures.join(',')} signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${debianMirror()} ${suite} main\n`,
  );
  const opts = aptOptions(aptDir, architectures);
  log(`apt-get update (private configuration in ${aptDir}/, Debian ${suite})`);
  run('apt-get', [...opts, '-q', 'update'], { stdio: ['ignore', 'ignore', 'inherit'] });
  for (const key of missing) {
    const { pkg, keep } = debs[key];
    const dlDir = path.join(aptDir, 'debs', key);
    fs.rmSync(dlDir, { recursive: true, force: true });
    fs.mkdirSync(dlDir, { recursive: true });
    log(`apt-get download ${pkg}`);
    run('apt-get', [...opts, '-q', 'download', pkg], { cwd: dlDir, stdio: ['ignore', 'ignore', 'inherit'] });
    const deb = fs.readdirSync(dlDir).find((f) => f.endsWith('.deb'));
    if (!deb) throw new Error(`apt-get download ${pkg} gave no .deb`);
    if (keep) {
      const unpacked = path.join(dlDir, 'unpacked');
      run('dpkg', ['-x', path.join(dlDir, deb), unpacked]);
      for (const rel of keep) {
        fs.mkdirSync(path.dirname(path.join(sysroot, rel)), { recursive: true });
        fs.copyFileSync(path.join(unpacked, rel), path.join(sysroot, rel));
        fs.chmodSync(path.join(sysroot, rel), 0o755);
      }
    } else {
      run('dpkg', ['-x', path.join(dlDir, deb), sysroot]);
    }
    fs.rmSync(dlDir, { recursive: true, force: true });
    fs.mkdirSync(path.dirname(marker(key)), { recursive: true });
    fs.writeFileSync(marker(key), `${deb}\n`);
  }
  fs.rmSync(aptDir, { recursive: true, force: true });
  return missing;
}

module.exports = { debianMirror, aptOptions, ensureDebs };
