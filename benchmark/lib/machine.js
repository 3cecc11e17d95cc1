'use strict';
// What machine a run is on: CPU model and the instruction-set extensions that matter to a
// codec (AES, carry-less multiply, SHA, AVX), cores, memory, OS, kernel, the filesystem
// the database files are on, and the load average.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

// x86 /proc/cpuinfo "flags" and arm64 "Features" names worth reporting for AES-256-CBC
// and HMAC-SHA512 (sha512 on arm64; SHA-NI on x86 covers SHA-1/256 only, and
// SHA-512 there relies on AVX2 or the newer sha512 flag).
const INTERESTING_FLAGS = {
  x64: [
    'aes',
    'vaes',
    'pclmulqdq',
    'vpclmulqdq',
    'sha_ni',
    'sha512',
    'avx',
    'avx2',
    'avx512f',
    'avx512bw',
    'bmi2',
    'hypervisor',
  ],
  arm64: ['aes', 'pmull', 'sha1', 'sha2', 'sha3', 'sha512'],
};

function readText(file) {
  try {
    return fs.readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function cpuInfo() {
  const text = readText('/proc/cpuinfo');
  const field = (name) => {
    const m = text.match(new RegExp(`^${name}\\s*:\\s*(.*)$`, 'mi'));
    return m ? m[1].trim() : undefined;
  };
  const flags = new Set((field('flags') || field('Features') || '').split(/\s+/).filter(Boolean));
  const wanted = INTERESTING_FLAGS[process.arch] || INTERESTING_FLAGS.x64;
  return {
    model: field('model name') || os.cpus()[0]?.model || field('CPU part') || 'unknown',
    flagsPresent: wanted.filter((f) => flags.has(f)),
    flagsAbsent: wanted.filter((f) => !flags.has(f)),
    logicalCores: os.cpus().length,
    availableParallelism: typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length,
  };
}

function osName() {
  const m = readText('/etc/os-release').match(/^PRETTY_NAME="?([^"\n]*)"?$/m);
  return m ? m[1] : `${os.type()} ${os.release()}`;
}

/** The mount a directory is on (longest mount point that prefixes it), from /proc/mounts. */
function filesystemOf(dir) {
  let real;
  try {
    real = fs.realpathSync(dir);
  } catch {
    return undefined;
  }
  let best;
  for (const line of readText('/proc/mounts').split('\n')) {
    const [device, mount, type] = line.split(' ');
    if (!mount) continue;
    const m = mount.replace(/\\040/g, ' ');
    const inside = m === '/' || real === m || real.startsWith(m.endsWith('/') ? m : `${m}/`);
    if (inside && (!best || m.length > best.mount.length)) best = { device, mount: m, type };
  }
  return best;
}

function loadAverage() {
  return os.loadavg().map((x) => Math.round(x * 100) / 100);
}

function machineInfo(dbDir) {
  return {
    hostname: os.hostname(),
    cpu: cpuInfo(),
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: osName(),
    kernel: `${os.type()} ${os.release()} ${os.machine ? os.machine() : process.arch}`,
    dbDir: path.resolve(dbDir),
    dbFilesystem: filesystemOf(dbDir),
  };
}

module.exports = { machineInfo, loadAverage };
