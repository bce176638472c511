// Named switches in groups (the ~580 Enzyme-JaX patterns, XLA's passes), with search in the browser.
// Clicks go to Python as {type: "toggle", names, on}, {type: "group", group} or {type: "reset"}; Python
// decides (a group click follows the tri-state convention), sets `enabled`, and may set `confirm`, a
// question shown inline whose yes/no goes back as {type: "yes"} / {type: "no"}.

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

function render({ model, el }) {
  el.classList.add("wbt");
  el.innerHTML = `
    <div class="wb-bar wbt-bar">
      <input type="search" class="wbt-search" spellcheck="false">
      <label><input type="checkbox" class="wbt-only"> changed only</label>
      <button class="wbt-reset" title="every switch back to its default">reset</button>
    </div>
    <div class="wbt-count"></div>
    <div class="wbt-confirm wb-buttons"><span class="wbt-question"></span>
      <button class="wbt-yes">yes</button><button class="wbt-no">no</button></div>
    <div class="wbt-list"></div>`;
  const search = el.querySelector(".wbt-search");
  const only = el.querySelector(".wbt-only");
  const list = el.querySelector(".wbt-list");
  const open = new Set();
  let groups = new Map(); // group -> [[name, default], ...]

  function index() {
    groups = new Map();
    for (const [name, group, def] of model.get("items")) {
      if (!groups.has(group)) groups.set(group, []);
      groups.get(group).push([name, !!def]);
    }
    const n = model.get("items").length;
    search.placeholder = `search ${n} ${n === 1 ? model.get("noun") : model.get("nouns")}`;
  }

  function draw() {
    const on = new Set(model.get("enabled"));
    const q = search.value.trim().toLowerCase();
    const filtering = q !== "" || only.checked;
    let html = "";
    let nOn = 0, nChanged = 0, nShown = 0;
    for (const [group, items] of groups) {
      const inGroup = items.filter(([n]) => on.has(n)).length;
      const changed = items.filter(([n, d]) => on.has(n) !== d).length;
      nOn += inGroup;
      nChanged += changed;
      const shown = items.filter(([n, d]) => (!q || n.toLowerCase().includes(q)) && (!only.checked || on.has(n) !== d));
      if (filtering && !shown.length) continue;
      const isOpen = filtering || open.has(group) || groups.size === 1;
      const state = inGroup === 0 ? "none" : inGroup === items.length ? "all" : "some";
      html += `<div class="wbt-group${changed ? " wbt-changed" : ""}" data-group="${esc(group)}">
        <span class="wbt-caret">${isOpen ? "&#9662;" : "&#9656;"}</span>
        <input type="checkbox" class="wbt-gcheck" data-state="${state}"${state === "all" ? " checked" : ""} title="switch the whole group">
        <span class="wbt-gname">${esc(group)}</span>
        <span class="wbt-gcount">${inGroup}/${items.length} on${changed ? ` &middot; ${changed} changed` : ""}</span></div>`;
      if (!isOpen) continue;
      html += `<div class="wbt-items">`;
      for (const [name, def] of shown) {
        const isOn = on.has(name);
        nShown++;
        const note = isOn !== def ? (isOn ? "on (default off)" : "off (default on)") : def ? "" : "off by default";
        html += `<label class="wbt-item${isOn !== def ? " wbt-changed" : ""}" data-name="${esc(name)}">
          <input type="checkbox"${isOn ? " checked" : ""}><span class="wbt-name" title="${esc(name)}">${esc(name)}</span>
          <span class="wbt-note">${note}</span></label>`;
      }
      html += `</div>`;
    }
    const total = model.get("items").length;
    const msg = model.get("message");
    el.querySelector(".wbt-count").innerHTML = msg
      ? `<span class="wbt-msg">${esc(msg)}</span>`
      : `${nOn}/${total} on &middot; <b>${nChanged}</b> changed from default` + (filtering ? ` &middot; ${nShown} shown` : "");
    const scroll = list.scrollTop;
    list.innerHTML = html;
    list.scrollTop = scroll;
    for (const box of list.querySelectorAll(".wbt-gcheck")) box.indeterminate = box.dataset.state === "some";
    el.classList.toggle("wbt-busy", model.get("busy"));
    const question = model.get("confirm");
    el.querySelector(".wbt-question").textContent = question;
    el.classList.toggle("wbt-asking", question !== "");
  }

  list.addEventListener("change", (e) => {
    const box = e.target;
    if (box.classList.contains("wbt-gcheck")) {
      model.send({ type: "group", group: box.closest(".wbt-group").dataset.group });
      draw(); // the box shows the model's state until Python answers
    } else {
      const item = box.closest(".wbt-item");
      if (item) model.send({ type: "toggle", names: [item.dataset.name], on: box.checked });
    }
  });
  list.addEventListener("click", (e) => {
    const head = e.target.closest(".wbt-group");
    if (!head || e.target.tagName === "INPUT" || search.value.trim() || only.checked) return;
    const g = head.dataset.group;
    if (open.has(g)) open.delete(g);
    else open.add(g);
    draw();
  });
  el.querySelector(".wbt-reset").addEventListener("click", () => model.send({ type: "reset" }));
  el.querySelector(".wbt-yes").addEventListener("click", () => model.send({ type: "yes" }));
  el.querySelector(".wbt-no").addEventListener("click", () => model.send({ type: "no" }));
  search.addEventListener("input", draw);
  only.addEventListener("change", draw);
  model.on("change:items", () => {
    index();
    draw();
  });
  for (const name of ["enabled", "busy", "message", "confirm"]) model.on("change:" + name, draw);
  index();
  draw();
}

export default { render };
