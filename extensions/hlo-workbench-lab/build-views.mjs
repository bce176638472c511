// Builds the one set of view components (src/components) for the hosts that are not this extension: the
// offline report and the panel load workbench/assets/views.js (an ES module exporting `mount`) and
// views.css (the components' style with the diff viewer's). This extension imports src/components itself.
//   node build-views.mjs            minified, as the wheel ships it
//   node build-views.mjs --dev      readable, with inline source maps
import { build } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const assets = resolve(here, '../../workbench/assets');
const dev = process.argv.includes('--dev');
const common = {
  bundle: true,
  minify: !dev,
  sourcemap: dev ? 'inline' : false,
  logLevel: 'warning',
  legalComments: 'none'
};

for (const [entry, out] of [
  ['index.ts', 'views.js'],
  ['editor-entry.ts', 'editor.js']
]) {
  // editor.js: the panel's stage editor with CodeMirror, apart (~300 kB the other hosts do not need)
  await build({
    ...common,
    entryPoints: [join(here, 'src/components', entry)],
    outfile: join(assets, out),
    format: 'esm',
    platform: 'browser',
    target: 'es2020',
    tsconfig: join(here, 'tsconfig.json')
  });
}
await build({ ...common, entryPoints: [join(here, 'src/components/views.css')], outfile: join(assets, 'views.css') });
