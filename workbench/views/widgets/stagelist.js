// The stage list: one row per stage (group, state, time, lines), A/B markers for the diff's sides.
// Clicks are sent to Python as {type: "pick", name, side}; Python sets left/right.
// "pending" names a group on its way (XLA compiling in the background): drawn as its group marker
// with a spinner and the "loading" text, where its rows will be.
// The list folds to a narrow strip (the diff gets the width): by its button, or by itself ("fold":
// "auto") while the panel it sits in is narrower than FOLD_BELOW px, measured on the panel itself.
// Open in a panel narrower than COMPACT_BELOW px (a laptop's notebook with the file browser open), it is
// compact: names only, each row's lines and time in its title, so the diff keeps most of the width.

const FOLD_BELOW = 760;
const COMPACT_BELOW = 1000;

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

function render({ model, el }) {
  el.classList.add("wbs");
  el.innerHTML = `
    <button class="wbs-unfold" title="show the stage list">&raquo;<span class="wbs-strip-label">stages</span></button>
    <div class="wbs-head">
      <button class="wbs-foldbtn" title="fold the stage list to a strip (the diff gets the width)">&laquo;</button>
      <label><input type="checkbox" class="wbs-hide"> hide unchanged</label>
      <span class="wbs-count"></span>
    </div>
    <div class="wbs-list"></div>
    <div class="wbs-hint">click: diff with its parent &middot; shift-click: left side</div>`;
  const list = el.querySelector(".wbs-list");
  const hide = el.querySelector(".wbs-hide");
  const count = el.querySelector(".wbs-count");

  // While a group is on its way, the list keeps the height it had (its rows come back with it): the panel
  // around it does not shrink and grow again on each toggle.
  function reserve(pending) {
    if (!pending) list.style.minHeight = "";
    else if (!list.style.minHeight && list.offsetHeight) list.style.minHeight = `${list.offsetHeight}px`;
  }

  function draw() {
    reserve(model.get("pending"));
    const stages = model.get("stages");
    const left = model.get("left"), right = model.get("right");
    hide.checked = model.get("hide_unchanged");
    const shown = stages.filter((s) => !hide.checked || s.state !== "unchanged" || s.name === left || s.name === right);
    const changed = stages.filter((s) => s.state !== "unchanged").length;
    count.textContent = stages.length ? `${changed} of ${stages.length} changed` : "";
    let html = "";
    let group = null;
    for (const s of shown) {
      if (s.group !== group) {
        group = s.group;
        html += `<div class="wbs-group g-${esc(group)}">${esc(group)}</div>`;
      }
      const side = s.name === left && s.name === right ? "AB" : s.name === left ? "A" : s.name === right ? "B" : "";
      const ms = s.time || ""; // written in Python; "(cached)": the time of the step's first run, not measured now
      const edited = { text: "edited by hand", inserted: "pass inserted by hand",
        "after-removed": "the pass before it was left out by hand" }[s.edit] || "";
      const title = s.state === "error" ? s.error
        : `${s.name}: ${s.state}, ${s.lines} lines${ms ? ", " + ms : ""}${edited ? " (" + edited + ")" : ""}`;
      html += `<div class="wbs-row g-${esc(s.group)} s-${s.state}${side ? " picked" : ""}" data-name="${esc(s.name)}" title="${esc(title)}">
        <span class="wbs-side">${side}</span><span class="wbs-dot"></span>
        <span class="wbs-name">${esc(s.name)}</span>${edited ? `<span class="wbs-edit" title="${edited}">✎</span>` : ""}
        <span class="wbs-lines">${s.state === "error" ? "failed" : s.lines}</span>
        <span class="wbs-ms${s.cached ? " wbs-cached" : ""}">${ms}</span></div>`;
    }
    const loading = model.get("loading"), pending = model.get("pending");
    if (pending) html += `<div class="wbs-group g-${esc(pending)} wbs-pending">${esc(pending)}</div>`;
    const row = pending ? "wbs-loading wbs-pending-row" : "wbs-loading";
    if (loading) html += `<div class="${row}"><span class="wbs-spin"></span>${esc(loading)}</div>`;
    list.innerHTML = html;
  }

  list.addEventListener("click", (e) => {
    const row = e.target.closest(".wbs-row");
    if (row) model.send({ type: "pick", name: row.dataset.name, side: e.shiftKey ? "left" : "right" });
  });
  hide.addEventListener("change", () => {
    model.set("hide_unchanged", hide.checked);
    model.save_changes();
  });
  for (const name of ["stages", "left", "right", "hide_unchanged", "loading", "pending"]) {
    model.on("change:" + name, draw);
  }
  draw();

  // Folding: the width of the panel (or of whatever holds the list) decides in "auto".
  let room = 0;
  const applyFold = () => {
    const fold = model.get("fold");
    const folded = fold === "folded" || (fold === "auto" && room > 0 && room < FOLD_BELOW);
    const compact = !folded && room > 0 && room < COMPACT_BELOW;
    el.classList.toggle("wbs-folded", folded);
    el.classList.toggle("wbs-compact", compact);
    el.dataset.folded = folded ? "1" : "0";
    el.dataset.compact = compact ? "1" : "0";
  };
  const setFold = (folded) => {
    model.set("fold", folded ? "folded" : "open");
    model.save_changes();
  };
  el.querySelector(".wbs-foldbtn").addEventListener("click", () => setFold(true));
  el.querySelector(".wbs-unfold").addEventListener("click", () => setFold(false));
  model.on("change:fold", applyFold);
  let host = null;
  const sizes = new ResizeObserver(() => {
    const outer = el.closest(".wb-panel") || el.parentElement;
    if (outer && outer !== host) {
      host = outer;
      sizes.observe(host); // the list is in the page now: watch what holds it
    }
    room = host ? host.clientWidth : 0;
    applyFold();
  });
  sizes.observe(el);
  applyFold();
  return () => sizes.disconnect();
}

export default { render };
