// The interactive part of the offline report (workbench/artifacts/report.py): the panel's own diff
// viewer (diffview.js, imported from its source, which the report holds as a JSON string) driven by
// two stage pickers. Everything else in the report is static HTML and works with JavaScript off.
//
// #wb-config (JSON): the diff viewer's source, the stages (name, parent, failed), the pair shown first.
// #wb-data (base64 of gzip of JSON): the stage texts, normalized as the workbench's diff prints
// them, each distinct text once as runs [first, count] of consecutive indices into a pool of distinct
// lines; each stage's text id; and the structural diffs the workbench computed (each stage against
// its parent, and a few other pairs) as [before stage, after stage, before text id, after text id,
// row runs] (the after text named onto the before text's values, as ex.diff prints it), a row
// run being [before line, after line, kind, count] (lines count up along the run, -1 stays -1).
// Any other pair is diffed here, line by line (diffview.js's lineDiff, shared with the JupyterLab extension).

const $ = (s) => document.querySelector(s);

// ---- decoding ----------------------------------------------------------------------------------
async function readData(node) {
  const bin = Uint8Array.from(atob(node.textContent.trim()), (c) => c.charCodeAt(0));
  const stream = new Blob([bin]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

export function expandRows(runs) {
  let n = 0;
  for (let r = 3; r < runs.length; r += 4) n += runs[r];
  const out = new Int32Array(3 * n);
  let d = 0;
  for (let r = 0; r < runs.length; r += 4) {
    const [i, j, kind, count] = [runs[r], runs[r + 1], runs[r + 2], runs[r + 3]];
    for (let t = 0; t < count; t++) {
      out[d++] = i < 0 ? -1 : i + t;
      out[d++] = j < 0 ? -1 : j + t;
      out[d++] = kind;
    }
  }
  return out;
}

function sameRows(n) {
  const out = new Int32Array(3 * n);
  for (let k = 0; k < n; k++) out[3 * k] = out[3 * k + 1] = k;
  return out;
}

// ---- the page --------------------------------------------------------------------------------------
// The little of an anywidget model that diffview.js uses, held in the page.
function pageModel(values) {
  const handlers = {};
  return {
    get: (k) => values[k],
    set(k, v) {
      if (values[k] === v) return;
      values[k] = v;
      for (const f of handlers["change:" + k] || []) f();
    },
    on(event, f) {
      (handlers[event] ||= []).push(f);
    },
    off() {},
    save_changes() {},
  };
}

async function main() {
  const root = document.documentElement;
  const note = $("#wb-diff-note");
  const config = JSON.parse($("#wb-config").textContent);
  if (typeof DecompressionStream === "undefined") {
    note.textContent = "This browser cannot unpack the stage texts (no DecompressionStream): the diff viewer needs a browser from 2023 or later.";
    root.dataset.wbReady = "error";
    return;
  }
  const data = await readData($("#wb-data"));
  const viewer = await import(URL.createObjectURL(new Blob([config.diffview], { type: "text/javascript" })));
  const stages = config.stages;
  const index = new Map(stages.map((s, k) => [s.name, k]));
  const texts = new Map();
  const text = (id) => {
    if (id < 0) return "";
    let t = texts.get(id);
    if (t === undefined) {
      const runs = data.texts[id], lines = [];
      for (let r = 0; r < runs.length; r += 2) for (let c = 0; c < runs[r + 1]; c++) lines.push(data.pool[runs[r] + c]);
      texts.set(id, (t = lines.join("\n")));
    }
    return t;
  };
  // A diff computed for one pair serves every pair with the same two (normalized) texts.
  const pairKey = (a, b) => data.stage_text[a] + ":" + data.stage_text[b];
  const pairs = new Map(data.pairs.map((p) => [pairKey(p[0], p[1]), p]));
  const model = pageModel({ before: "", after: "", rows: new DataView(new ArrayBuffer(0)), before_name: "",
                            after_name: "", message: "", height: config.height, mode: "auto" });
  const host = $("#wb-diff");
  host.textContent = "";
  viewer.default.render({ model, el: host });
  const pickA = $("#wb-pick-a"), pickB = $("#wb-pick-b");

  function show(a, b) {
    const sa = stages[a], sb = stages[b];
    pickA.value = sa.name;
    pickB.value = sb.name;
    root.dataset.wbPair = sa.name + " \u2192 " + sb.name;
    const failed = [sb, sa].find((s) => s.failed);
    if (failed) {
      model.set("message", `stage ${failed.name} failed, so it has no text to compare:\n\n${failed.error}`);
      model.set("before", "");
      model.set("after", "");
      model.set("rows", new DataView(new ArrayBuffer(0)));
      note.textContent = "";
      return;
    }
    const pair = pairs.get(pairKey(a, b));
    let before = text(data.stage_text[a]), after, rows, how;
    if (pair) {
      before = text(pair[2]);
      after = text(pair[3]);
      rows = expandRows(pair[4]);
      how = "the workbench's structural diff (value renumbering and locations ignored; as ex.diff shows it)";
    } else if (data.stage_text[a] === data.stage_text[b]) {
      after = before;
      rows = sameRows(before ? before.split("\n").length : 0);
      how = "the same text";
    } else {
      after = text(data.stage_text[b]);
      rows = viewer.lineDiff(before.split("\n"), after.split("\n"));
      how = "a line diff computed in this page (lines aligned with value names blanked); the structural " +
        `diff of ex.diff is in the report for each stage against its parent, ${config.pairs_note}`;
    }
    model.set("message", "");
    model.set("before_name", sa.name);
    model.set("after_name", sb.name);
    model.set("before", before);
    model.set("after", after);
    model.set("rows", new DataView(rows.buffer));
    note.textContent = "Shown: " + how + ".";
  }

  const pick = () => show(index.get(pickA.value), index.get(pickB.value));
  for (const p of [pickA, pickB]) {
    p.disabled = false;
    p.addEventListener("change", pick);
  }
  const swap = $("#wb-swap");
  swap.disabled = false;
  swap.addEventListener("click", () => show(index.get(pickB.value), index.get(pickA.value)));
  // Each stage row of the table gets a button: this stage against its parent, in the diff viewer.
  for (const row of document.querySelectorAll("tr[data-stage]")) {
    const k = index.get(row.dataset.stage), parent = index.get(stages[k].parent);
    if (parent === undefined) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "wb-pick";
    button.textContent = "diff";
    button.title = `${stages[parent].name} \u2192 ${stages[k].name} in the diff viewer`;
    button.addEventListener("click", () => {
      show(parent, k);
      $("#diff").scrollIntoView();
    });
    row.querySelector(".wb-name").append(" ", button);
  }
  show(index.get(config.first[0]), index.get(config.first[1]));
  window.wbReport = { show: (a, b) => show(index.get(a), index.get(b)), lineDiff: viewer.lineDiff, expandRows };
  root.dataset.wbReady = "1";
}

main().catch((err) => {
  $("#wb-diff-note").textContent = "The diff viewer could not start: " + err;
  document.documentElement.dataset.wbReady = "error";
});
