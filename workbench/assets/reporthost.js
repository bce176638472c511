// The offline report's host (workbench/artifacts/report.py): the view model (#wb-model, JSON; or a
// comparison model, artifacts/comparison_page.py, drawn by mountComparison) drawn by
// the one set of components (views.js: its source is #wb-views, a JSON string, imported from a blob)
// into #wb-view. The components' host.diff(left, right) answers from the
// diffs the report carries (#wb-diffs: base64 of gzip of JSON, artifacts/report_texts.py): the stages
// listed, a pool of distinct lines, each distinct text as runs [first, count] into it, each stage's
// text (-1: failed), and the pairs precomputed [before stage, after stage, before text, after text,
// Diff.runs()]; a precomputed pair serves every pair of the same two texts. The page computes no fact:
// a pair not precomputed says so, and names the Python that makes it.

const $ = s => document.querySelector(s);
const parsed = s => JSON.parse($(s).textContent);

async function unpack(node) {
  const bin = Uint8Array.from(atob(node.textContent.trim()), c => c.charCodeAt(0));
  const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream('gzip'));
  return JSON.parse(await new Response(stream).text());
}

function diffs(data, model) {
  const index = new Map(data.stages.map((name, k) => [name, k]));
  const rows = new Map(model.stages.map(row => [row.stage, row]));
  const text = id => {
    const runs = data.texts[id],
      lines = [];
    for (let r = 0; r < runs.length; r += 2) for (let c = 0; c < runs[r + 1]; c++) lines.push(data.pool[runs[r] + c]);
    return lines.join('\n');
  };
  const key = (a, b) => data.stage_text[a] + ':' + data.stage_text[b];
  const pairs = new Map(data.pairs.map(p => [key(p[0], p[1]), p]));
  return async (left, right) => {
    const failed = [left, right].map(n => rows.get(n)).find(row => row && row.error);
    if (failed)
      return { left, right, note: `stage ${failed.stage} failed, so it has no text to compare: ${failed.error}` };
    const missing = [left, right].find(n => !index.has(n));
    if (missing !== undefined)
      return { left, right, note: `${missing} is not listed in this report (ReportLimits.stages)` };
    const p = pairs.get(key(index.get(left), index.get(right)));
    if (p) return { left, right, before: text(p[2]), after: text(p[3]), runs: p[4] };
    return {
      left,
      right,
      note:
        `this report carries the structural diff of each stage against its parent ${data.note}, ` +
        `not of ${left} \u2192 ${right}: ex.diff(${JSON.stringify(left)}, ${JSON.stringify(right)}) makes it in Python`
    };
  };
}

async function main() {
  const model = parsed('#wb-model');
  const source = parsed('#wb-views');
  if (!source) throw new Error('this copy of hlo-workbench has no built components (workbench/assets/views.js)');
  if (typeof DecompressionStream === 'undefined')
    throw new Error('no DecompressionStream: a browser from 2023 or later');
  const views = await import(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })));
  const el = $('#wb-view');
  if (model.schema === 'hlo-workbench/comparison') {
    // a comparison page: the model carries its diffs
    el.textContent = '';
    views.mountComparison(el, model);
  } else {
    const data = await unpack($('#wb-diffs'));
    el.textContent = '';
    views.mount(el, model, { diff: diffs(data, model) });
  }
  document.documentElement.dataset.wbReady = '1';
}

main().catch(err => {
  $('#wb-view-note').textContent = 'The view could not start: ' + err;
  document.documentElement.dataset.wbReady = 'error';
});
