// What the commands send to the kernel and how they read a cell: plain functions of text, no JupyterLab,
// so vitest checks them (test/commands.test.ts).

/** The first line of `source` when it is a cell magic line (`%%name ...`), else null. */
export function cellMagic(source: string): { name: string; line: string } | null {
  const first = source.replace(/^\s*\n/, '').split('\n', 1)[0];
  const m = /^%%([A-Za-z_][\w.]*)(.*)$/.exec(first.trimEnd());
  return m ? { name: m[1], line: m[2].trim() } : null;
}

/** Whether a cell holds MLIR text for `%%mlir` (the editor highlights it as MLIR). */
export function isMlirCell(source: string): boolean {
  return cellMagic(source)?.name === 'mlir';
}

/** Python that loads the workbench's magics in the kernel unless they are there (quietly: `%load_ext`
 * of a loaded extension would print). */
const LOAD =
  '_ip = get_ipython()\n' +
  "if 'hlo' not in _ip.magics_manager.magics['cell']:\n" +
  "    _ip.run_line_magic('load_ext', 'workbench')\n" +
  'del _ip\n';

/** A Python string literal of `s` (JSON's escapes are Python's too, for every character). */
const py = (s: string) => JSON.stringify(s);

/**
 * The code "Explore this cell with hlo-workbench" runs for a cell of `source`: the cell under `%%hlo`
 * (as IPython runs a `%%hlo` cell: run_cell_magic), the cell's own text left as it is. A cell that is
 * already `%%hlo` or `%%mlir` runs with its own options. Another cell magic cannot be put under
 * `%%hlo`: an Error says so.
 */
export function exploreCode(source: string): string {
  if (!source.trim())
    throw new Error('the cell is empty: write a function and, on the last line, the call to explore, e.g. f(x)');
  const magic = cellMagic(source);
  if (magic && magic.name !== 'hlo' && magic.name !== 'mlir') {
    throw new Error(
      `the cell starts with %%${magic.name}: hlo-workbench explores a cell of Python code ` +
        '(its last line the call, e.g. f(x)), or a %%hlo or %%mlir cell'
    );
  }
  const body = magic ? source.replace(/^\s*\n/, '').replace(/^.*\n?/, '') : source; // the magic's line left out
  const args = [magic?.name ?? 'hlo', magic?.line ?? '', body].map(py);
  return LOAD + `get_ipython().run_cell_magic(${args.join(', ')})\n`;
}

/** The code "Save exploration…" runs: `variable`'s Exploration saved to `path` (relative to the kernel's
 * folder, the notebook's); it prints the absolute path written. */
export function saveCode(variable: string, path: string): string {
  if (!/^[A-Za-z_]\w*$/.test(variable)) throw new Error(`${JSON.stringify(variable)} is not a Python name`);
  return (
    'import workbench as _wb\n' +
    `_x = globals().get(${py(variable)})\n` +
    'if not isinstance(_x, _wb.Exploration):\n' +
    `    raise NameError(${py(`the kernel holds no Exploration named ${variable}: run the cell first`)})\n` +
    `print(_x.save(${py(path)}))\n` +
    'del _x, _wb\n'
  );
}

/** A file name for a saved exploration, in the notebook's folder: the notebook's name and the
 * exploration's title. */
export function hloxName(notebookPath: string, title: string): string {
  const base = notebookPath.slice(notebookPath.lastIndexOf('/') + 1).replace(/\.ipynb$/, '');
  const what = title.replace(/[^\w.-]+/g, '_').replace(/^_+|_+$/g, '') || 'exploration';
  return `${base}-${what}.hlox`;
}
