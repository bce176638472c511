// What the workbench's views share: the diff view (diffview.js) imports it from here. The JupyterLab
// extension's bundler follows the import; the panel's widgets and the offline report load each view with this
// file's text in place of its import line (workbench/artifacts/assets.py).

// `fn`, run once for all the calls made before it runs: a model update that sets several traits fires
// one change event per trait, and the view handles them in one go, in a microtask queued by the first.
// The returned function's `queued` says whether that run is still to come.
export function coalesced(fn) {
  const run = () => {
    if (run.queued) return;
    run.queued = true;
    queueMicrotask(() => {
      run.queued = false;
      fn();
    });
  };
  run.queued = false;
  return run;
}
