#!/usr/bin/env node
// capsule's launcher: runs the prebuilt capsule binary for this platform,
// which npm installed as the matching optional dependency (one platform
// package per platform, each with one binary), with this process's
// arguments (`serve` when there are none), standard input, output and
// error, forwards the signals a client sends to stop it, and exits as the
// binary did. It downloads nothing and writes nothing.
'use strict';

const { spawn } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');

// process.platform-process.arch → the platform package with that binary,
// and the version both must have (filled in by the release tool).
const packages = __PACKAGES__;
const version = '__VERSION__';

const fail = (lines) => {
  process.stderr.write(lines.map((line) => `capsule: ${line}\n`).join(''));
  process.exit(1);
};

const key = `${process.platform}-${process.arch}`;
if (!Object.hasOwn(packages, key)) {
  fail([
    `no prebuilt binary for ${key}; there are binaries for ${Object.keys(packages).join(' and ')}.`,
    'capsule needs Linux (its workers are locked down with Linux namespaces, seccomp and Landlock).',
    'On another Linux architecture build it from source: __SOURCE_URL__',
  ]);
}

// The binary's path, found as node finds a package: in the node_modules
// npm installed this launcher's package into, or above it.
const pkg = packages[key];
let manifestPath;
try {
  manifestPath = require.resolve(`${pkg}/package.json`);
} catch (err) {
  if (err.code !== 'MODULE_NOT_FOUND') throw err;
  fail([
    `the package ${pkg}, which holds the binary for ${key}, is not installed.`,
    `npm installs it with __NPM_NAME__ as an optional dependency, so it is missing when optional`,
    `dependencies are left out (--omit=optional, --no-optional, or omit=optional in an npmrc: see`,
    `\`npm config get omit\`) or when the registry did not serve it. Install it beside this package:`,
    `  npm install ${pkg}@${version}`,
    `or run both with npx: npx -y --package=__NPM_NAME__@${version} --package=${pkg}@${version} capsule`,
  ]);
}
const manifest = require(manifestPath);
if (manifest.version !== version) {
  fail([
    `${pkg} is version ${manifest.version}, but this launcher (__NPM_NAME__) is ${version}.`,
    `Install the matching binary: npm install ${pkg}@${version}`,
  ]);
}
const binary = path.join(path.dirname(manifestPath), 'capsule');

const args = process.argv.slice(2);
const child = spawn(binary, args.length > 0 ? args : ['serve'], { stdio: 'inherit' });

// SIGKILL and SIGSTOP cannot be caught; SIGUSR1 starts node's inspector.
const forwarded = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR2'];
const forward = (signal) => child.kill(signal);
for (const signal of forwarded) process.on(signal, forward);

child.on('error', (err) => fail([`cannot run ${binary}: ${err.message}`]));

child.on('exit', (code, signal) => {
  if (signal === null) process.exit(code);
  // Die of the same signal, so the caller sees what the binary did.
  for (const s of forwarded) process.off(s, forward);
  process.kill(process.pid, signal);
  process.exit(128 + (os.constants.signals[signal] || 0));
});
