// Builds the prebuilt extension with @jupyterlab/builder's own command, against the JupyterLab that
// will serve it: its core package (jupyterlab/staging in the Python package) says which packages are
// shared singletons and at which versions. Found through $JUPYTERLAB_CORE_PATH, else the Python of
// the repository's .venv (or $PYTHON, or python3). Extra arguments go to build-labextension.
// Also puts install.json into the built folder.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

function corePath() {
  if (process.env.JUPYTERLAB_CORE_PATH) return process.env.JUPYTERLAB_CORE_PATH;
  const venv = resolve(here, '../../.venv/bin/python');
  const python = process.env.PYTHON || (existsSync(venv) ? venv : 'python3');
  const probe = 'import jupyterlab, pathlib; print(pathlib.Path(jupyterlab.__file__).parent / "staging")';
  try {
    return execFileSync(python, ['-c', probe], { encoding: 'utf8' }).trim();
  } catch (err) {
    console.error(
      `hlo-workbench-lab: cannot find JupyterLab's core package with ${python}: ${err.message}\n` +
        'Run scripts/setup.sh first, or set JUPYTERLAB_CORE_PATH to jupyterlab/staging.'
    );
    process.exit(1);
  }
}

const core = corePath();
if (!existsSync(join(core, 'package.json'))) {
  console.error(`hlo-workbench-lab: ${core} has no package.json: not JupyterLab's core package`);
  process.exit(1);
}
const bin = join(here, 'node_modules', '.bin', 'build-labextension');
execFileSync(bin, ['--core-path', core, ...process.argv.slice(2), here], { stdio: 'inherit' });
// install.json tells `jupyter labextension list` which Python package installed the extension
const out = JSON.parse(readFileSync(join(here, 'package.json'), 'utf8')).jupyterlab.outputDir;
copyFileSync(join(here, 'install.json'), join(here, out, 'install.json'));
