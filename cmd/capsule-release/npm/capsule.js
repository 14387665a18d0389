#!/usr/bin/env node
// capsule's launcher: runs the prebuilt capsule binary for this platform
// with this process's arguments (`serve` when there are none), standard
// input, output and error, forwards the signals a client sends to stop it,
// and exits as the binary did. It downloads nothing and writes nothing.
'use strict';

const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');

// process.platform-process.arch → the package directory with that binary
// (filled in by the release tool from the binaries it packs).
const binaries = __BINARIES__;

const key = `${process.platform}-${process.arch}`;
if (!Object.hasOwn(binaries, key)) {
  process.stderr.write(
    `capsule: no prebuilt binary for ${key}; this package has ${Object.keys(binaries).join(' and ')}.\n` +
      'capsule needs Linux (its workers are locked down with Linux namespaces, seccomp and Landlock).\n' +
      'On another Linux architecture build it from source: __SOURCE_URL__\n');
  process.exit(1);
}

const binary = path.join(__dirname, '..', binaries[key], 'capsule');
const args = process.argv.slice(2);
const child = spawn(binary, args.length > 0 ? args : ['serve'], { stdio: 'inherit' });

// SIGKILL and SIGSTOP cannot be caught; SIGUSR1 starts node's inspector.
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'];
const forward = (signal) => child.kill(signal);
for (const signal of forwarded) process.on(signal, forward);

child.on('error', (err) => {
  process.stderr.write(`capsule: cannot run ${binary}: ${err.message}\n`);
  process.exit(1);
});

child.on('exit', (code, signal) => {
  if (signal === null) process.exit(code);
  // Die of the same signal, so the caller sees what the binary did.
  for (const s of forwarded) process.off(s, forward);
  process.kill(process.pid, signal);
  process.exit(128 + (os.constants.signals[signal] || 0));
});
