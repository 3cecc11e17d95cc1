'use strict';
// CI has one definition: .ci/run. The GitHub workflow runs one job per stage of it and
// nothing else of its own, so the two cannot drift apart; and the JS lint/format commands
// that its lint stage runs exist, with their tools pinned.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const CI_RUN = path.join(ROOT, '.ci', 'run');
const WORKFLOW = fs.readFileSync(path.join(ROOT, '.github', 'workflows', 'ci.yml'), 'utf8');
const PACKAGE = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));

// .ci/run is a bash script; release.yml also runs this suite in node:22-alpine, which has none.
const hasBash = spawnSync('bash', ['-c', 'true']).status === 0;
const needsBash = { skip: !hasBash && 'bash is not installed' };

function ciRun(...args) {
  return spawnSync('bash', [CI_RUN, ...args], { cwd: ROOT, encoding: 'utf8' });
}

/** The commands of the workflow's `run:` steps, in order. */
function workflowCommands() {
  return [...WORKFLOW.matchAll(/^[ \t]*(?:- )?run:[ \t]*(\S.*)$/gm)].map((m) => m[1].trim());
}

describe('03 CI definition', () => {
  it('03.1 the workflow runs exactly the stages of .ci/run, one job each', needsBash, () => {
    const r = ciRun('--stages');
    assert.equal(r.status, 0, r.stderr);
    const stages = r.stdout.trim().split('\n');
    assert.ok(stages.length >= 3, `stages: ${stages}`);
    const matrix = WORKFLOW.match(/^\s*stage:\s*\[([^\]]*)\]\s*$/m);
    assert.ok(matrix, 'ci.yml has a `stage: [...]` matrix');
    assert.deepEqual(
      matrix[1].split(',').map((s) => s.trim()),
      stages,
    );
  });

  it('03.2 the workflow has no steps of its own besides installing the toolchain', () => {
    // The matrix job, and the windows-latest job that runs the windows stage natively.
    assert.deepEqual(workflowCommands(), [
      'rustup toolchain install',
      'bash .ci/run ${{ matrix.stage }}',
      'rustup toolchain install',
      'bash .ci/run windows',
    ]);
    assert.match(WORKFLOW, /^ {2}windows-native:\n[\s\S]*^ {4}runs-on: windows-latest$/m);
  });

  it('03.3 .ci/run refuses an unknown stage before running anything', needsBash, () => {
    const r = ciRun('lint', 'no-such-stage');
    assert.equal(r.status, 2);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, /^\.ci\/run: unknown stage 'no-such-stage' \(stages: lint rust js windows\)\n$/);
  });

  it('03.4 the lint stage runs the JS linter and format check beside cargo fmt and clippy; the tools are pinned', () => {
    const script = fs.readFileSync(CI_RUN, 'utf8');
    const lint = script.match(/^stage_lint\(\) \{\n([\s\S]*?)^\}/m);
    assert.ok(lint, '.ci/run defines stage_lint');
    for (const command of ['cargo fmt --check', 'cargo clippy', 'npm run lint', 'npm run format:check']) {
      assert.ok(lint[1].includes(command), `stage_lint runs ${command}`);
    }
    assert.equal(PACKAGE.scripts.lint, 'eslint .');
    assert.match(PACKAGE.scripts.format, /^prettier --write /);
    assert.match(PACKAGE.scripts['format:check'], /^prettier --check /);
    for (const [name, version] of Object.entries(PACKAGE.devDependencies)) {
      assert.match(version, /^\d+\.\d+\.\d+$/, `devDependency ${name} is pinned to an exact version`);
    }
    for (const tool of ['eslint', 'prettier', '@eslint/js', 'globals']) {
      assert.ok(PACKAGE.devDependencies[tool], `${tool} is a devDependency`);
    }
  });
});
