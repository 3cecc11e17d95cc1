'use strict';
// Writing to a file descriptor synchronously and completely: standard output may be a pipe
// another process left non-blocking. A reader that went away (`| head`) ends the writing.

const fs = require('node:fs');

class ClosedOutput extends Error {}

function writeAll(fd, text) {
  const buf = Buffer.from(text, 'utf8');
  let off = 0;
  while (off < buf.length) {
    try {
      off += fs.writeSync(fd, buf, off, buf.length - off);
    } catch (err) {
      if (err.code === 'EAGAIN') {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
        continue;
      }
      if (err.code === 'EPIPE') throw new ClosedOutput('standard output closed');
      throw err;
    }
  }
}

module.exports = { writeAll, ClosedOutput };
