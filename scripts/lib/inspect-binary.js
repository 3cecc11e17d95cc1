'use strict';
// Reads what the packaging checks need from a built `.node`, without running it:
//  - ELF (Linux): machine, and through `objdump -T` the versioned libc symbols it imports
//    (its glibc floor) and the symbols it exports;
//  - Mach-O (macOS): a small parser for the header, LC_BUILD_VERSION / LC_VERSION_MIN_MACOSX
//    (minimum OS), LC_ID_DYLIB (install name), LC_UUID, LC_CODE_SIGNATURE and the exported
//    symbols (export trie, and the external symbols of LC_SYMTAB/LC_DYSYMTAB);
//  - PE (Windows): a small parser for the COFF header (machine, DLL flag, timestamp), the
//    optional header (PE32+) and its export and import directories: the names exported,
//    and the DLLs imported with their functions.

const { spawnSync } = require('child_process');
const fs = require('fs');

const ELF_MACHINES = { 0x3e: 'x64', 0xb7: 'arm64' };
const MACHO_CPUS = { 0x01000007: 'x64', 0x0100000c: 'arm64' };
const PE_MACHINES = { 0x8664: 'x64', 0xaa64: 'arm64' };

function compareVersions(a, b) {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] || 0) - (pb[i] || 0);
    if (d) return d;
  }
  return 0;
}

function format(bytes) {
  if (bytes.readUInt32BE(0) === 0x7f454c46) return 'elf';
  if (bytes.readUInt32LE(0) === 0xfeedfacf) return 'macho';
  if (bytes.readUInt16LE(0) === 0x5a4d) return 'pe'; // "MZ"
  return 'unknown';
}

/** ELF facts: `{ format, cpu, glibcFloor, glibcVersions, exports, needed }`. */
function inspectElf(file) {
  const bytes = fs.readFileSync(file);
  if (format(bytes) !== 'elf') throw new Error(`${file} is not an ELF file`);
  if (bytes[4] !== 2 || bytes[5] !== 1) throw new Error(`${file} is not a 64-bit little-endian ELF file`);
  const type = bytes.readUInt16LE(16);
  const machine = bytes.readUInt16LE(18);
  const res = spawnSync('objdump', ['-T', '-p', file], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (res.error || res.status !== 0) {
    throw new Error(`objdump -T -p ${file} failed (binutils needed): ${res.error ? res.error.message : res.stderr}`);
  }
  const glibcVersions = [...new Set(res.stdout.match(/GLIBC_[0-9.]+/g) || [])]
    .map((v) => v.slice('GLIBC_'.length))
    .sort(compareVersions);
  const exports = [];
  const lines = res.stdout.split('\n');
  for (const line of lines) {
    // "0000000000088e80 g    DF .text	0000000000003f2b  Base        napi_register_module_v1"
    const m = /^[0-9a-f]+ (.{7}) (\S+)\s+[0-9a-f]+\s+(?:\S+\s+)?(\S+)$/.exec(line);
    if (m && m[1][0] === 'g' && m[2] !== '*UND*') exports.push(m[3]);
  }
  const needed = lines
    .map((l) => /^\s*NEEDED\s+(\S+)/.exec(l))
    .filter(Boolean)
    .map((m) => m[1]);
  return {
    format: 'elf',
    sharedObject: type === 3,
    cpu: ELF_MACHINES[machine] || `machine 0x${machine.toString(16)}`,
    glibcVersions,
    glibcFloor: glibcVersions.length ? glibcVersions[glibcVersions.length - 1] : null,
    exports: exports.sort(),
    needed,
  };
}

function macosVersion(packed) {
  return `${packed >>> 16}.${(packed >> 8) & 0xff}` + (packed & 0xff ? `.${packed & 0xff}` : '');
}

function uleb(bytes, pos) {
  let value = 0;
  let shift = 0;
  for (;;) {
    if (pos >= bytes.length) throw new Error('truncated ULEB128 in export trie');
    const b = bytes[pos++];
    value += (b & 0x7f) * 2 ** shift;
    shift += 7;
    if (!(b & 0x80)) return [value, pos];
  }
}

/** Names in a Mach-O export trie (dyld's format: terminal size, info, children). */
function exportTrie(trie) {
  const names = [];
  const seen = new Set();
  const walk = (offset, prefix) => {
    if (seen.has(offset) || offset >= trie.length) throw new Error('malformed export trie');
    seen.add(offset);
    let [terminalSize, pos] = uleb(trie, offset);
    if (terminalSize) names.push(prefix);
    pos += terminalSize;
    const children = trie[pos++];
    for (let i = 0; i < children; i++) {
      const end = trie.indexOf(0, pos);
      const edge = trie.toString('latin1', pos, end);
      let child;
      [child, pos] = uleb(trie, end + 1);
      walk(child, prefix + edge);
    }
  };
  if (trie.length) walk(0, '');
  return names.sort();
}

/** Mach-O facts: `{ format, cpu, fileType, minOS, sdk, installName, uuid, signed, exports, externalSymbols }`. */
function inspectMachO(file) {
  const b = fs.readFileSync(file);
  if (format(b) !== 'macho') throw new Error(`${file} is not a 64-bit little-endian Mach-O file`);
  const cputype = b.readUInt32LE(4);
  const fileType = b.readUInt32LE(12);
  const ncmds = b.readUInt32LE(16);
  const info = {
    format: 'macho',
    cpu: MACHO_CPUS[cputype] || `cputype 0x${cputype.toString(16)}`,
    fileType: fileType === 6 ? 'dylib' : fileType === 8 ? 'bundle' : `type ${fileType}`,
    minOS: null,
    sdk: null,
    installName: null,
    uuid: null,
    signed: false,
    exports: [],
    externalSymbols: [],
    dylibs: [],
  };
  let symtab = null;
  let dysymtab = null;
  let trie = null;
  let off = 32;
  for (let i = 0; i < ncmds; i++) {
    const cmd = b.readUInt32LE(off);
    const size = b.readUInt32LE(off + 4);
    switch (cmd) {
      case 0x32: // LC_BUILD_VERSION
        info.minOS = macosVersion(b.readUInt32LE(off + 12));
        info.sdk = macosVersion(b.readUInt32LE(off + 16));
        break;
      case 0x24: // LC_VERSION_MIN_MACOSX
        info.minOS = macosVersion(b.readUInt32LE(off + 8));
        info.sdk = macosVersion(b.readUInt32LE(off + 12));
        break;
      case 0x0d: // LC_ID_DYLIB
      case 0x0c: {
        // LC_LOAD_DYLIB
        const nameOff = off + b.readUInt32LE(off + 8);
        const name = b.toString('latin1', nameOff, b.indexOf(0, nameOff));
        if (cmd === 0x0d) info.installName = name;
        else info.dylibs.push(name);
        break;
      }
      case 0x1b: // LC_UUID
        info.uuid = b.toString('hex', off + 8, off + 24);
        break;
      case 0x1d: // LC_CODE_SIGNATURE
        info.signed = true;
        break;
      case 0x02: // LC_SYMTAB
        symtab = { symoff: b.readUInt32LE(off + 8), nsyms: b.readUInt32LE(off + 12), stroff: b.readUInt32LE(off + 16) };
        break;
      case 0x0b: // LC_DYSYMTAB
        dysymtab = { iextdefsym: b.readUInt32LE(off + 16), nextdefsym: b.readUInt32LE(off + 20) };
        break;
      case 0x80000033: // LC_DYLD_EXPORTS_TRIE
        trie = b.subarray(b.readUInt32LE(off + 8), b.readUInt32LE(off + 8) + b.readUInt32LE(off + 12));
        break;
      case 0x22:
      case 0x80000022: {
        // LC_DYLD_INFO(_ONLY): export_off, export_size at +40
        const exportOff = b.readUInt32LE(off + 40);
        trie = b.subarray(exportOff, exportOff + b.readUInt32LE(off + 44));
        break;
      }
      default:
        break;
    }
    off += size;
  }
  if (trie) info.exports = exportTrie(trie);
  if (symtab && dysymtab) {
    for (let i = dysymtab.iextdefsym; i < dysymtab.iextdefsym + dysymtab.nextdefsym; i++) {
      const entry = symtab.symoff + i * 16;
      const strx = b.readUInt32LE(entry);
      const start = symtab.stroff + strx;
      info.externalSymbols.push(b.toString('latin1', start, b.indexOf(0, start)));
    }
    info.externalSymbols.sort();
  }
  return info;
}

/**
 * PE facts: `{ format, cpu, dll, timestamp, exports, imports }`; `imports` maps each DLL's
 * name to the functions imported from it (by name; `#<ordinal>` for ordinals).
 */
function inspectPe(file) {
  const bytes = fs.readFileSync(file);
  if (format(bytes) !== 'pe') throw new Error(`${file} is not a PE file`);
  const pe = bytes.readUInt32LE(0x3c);
  if (bytes.readUInt32LE(pe) !== 0x4550) throw new Error(`${file}: no PE signature`);
  const coff = pe + 4;
  const machine = bytes.readUInt16LE(coff);
  const sectionCount = bytes.readUInt16LE(coff + 2);
  const timestamp = bytes.readUInt32LE(coff + 4);
  const optionalSize = bytes.readUInt16LE(coff + 16);
  const characteristics = bytes.readUInt16LE(coff + 18);
  const opt = coff + 20;
  if (bytes.readUInt16LE(opt) !== 0x20b) throw new Error(`${file} is not PE32+ (64-bit)`);
  const dirs = opt + 112; // PE32+: the data directories follow 112 bytes of fields
  const dir = (i) => ({ rva: bytes.readUInt32LE(dirs + 8 * i), size: bytes.readUInt32LE(dirs + 8 * i + 4) });
  const sections = [];
  for (let i = 0, s = opt + optionalSize; i < sectionCount; i++, s += 40) {
    sections.push({
      name: bytes.toString('latin1', s, s + 8).replace(/\0+$/, ''),
      size: Math.max(bytes.readUInt32LE(s + 8), bytes.readUInt32LE(s + 16)),
      rva: bytes.readUInt32LE(s + 12),
      raw: bytes.readUInt32LE(s + 20),
    });
  }
  const offset = (rva) => {
    const sec = sections.find((x) => rva >= x.rva && rva < x.rva + x.size);
    if (!sec) throw new Error(`${file}: RVA 0x${rva.toString(16)} is in no section`);
    return rva - sec.rva + sec.raw;
  };
  const cstring = (rva) => {
    const start = offset(rva);
    return bytes.toString('latin1', start, bytes.indexOf(0, start));
  };
  const exports = [];
  const exp = dir(0);
  if (exp.rva) {
    const e = offset(exp.rva);
    const count = bytes.readUInt32LE(e + 24);
    const names = offset(bytes.readUInt32LE(e + 32));
    for (let i = 0; i < count; i++) exports.push(cstring(bytes.readUInt32LE(names + 4 * i)));
  }
  const imports = {};
  const imp = dir(1);
  if (imp.rva) {
    for (let d = offset(imp.rva); ; d += 20) {
      const lookup = bytes.readUInt32LE(d) || bytes.readUInt32LE(d + 16);
      const nameRva = bytes.readUInt32LE(d + 12);
      if (!lookup && !nameRva) break;
      const fns = [];
      for (let t = offset(lookup); ; t += 8) {
        const thunk = bytes.readBigUInt64LE(t);
        if (thunk === 0n) break;
        if (thunk >> 63n) fns.push(`#${Number(thunk & 0xffffn)}`);
        else fns.push(cstring(Number(thunk & 0x7fffffffn) + 2));
      }
      imports[cstring(nameRva)] = fns;
    }
  }
  return {
    format: 'pe',
    cpu: PE_MACHINES[machine] || `machine 0x${machine.toString(16)}`,
    dll: (characteristics & 0x2000) !== 0,
    timestamp,
    exports: exports.sort(),
    imports,
  };
}

function inspectBinary(file) {
  const head = Buffer.alloc(4);
  const fd = fs.openSync(file, 'r');
  try {
    fs.readSync(fd, head, 0, 4, 0);
  } finally {
    fs.closeSync(fd);
  }
  const kind = format(head);
  if (kind === 'elf') return inspectElf(file);
  if (kind === 'macho') return inspectMachO(file);
  if (kind === 'pe') return inspectPe(file);
  throw new Error(`${file} is neither ELF, 64-bit Mach-O nor PE`);
}

module.exports = { inspectBinary, inspectElf, inspectMachO, inspectPe, compareVersions };
