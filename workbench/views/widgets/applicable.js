// The Analyze tab's applicable patterns: each pattern that changes the stage when applied alone, with a
// switch. A click asks Python to switch it in the panel's pipeline ({type: "toggle", names: [name], on}),
// the toggle the Passes tab makes; Python answers by setting "enabled" once the rebuild shows it.

const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

function render({ model, el }) {
  el.classList.add("wba");
  const draw = () => {
    const rows = model.get("rows"), on = new Set(model.get("enabled")), variable = esc(model.get("variable"));
    el.classList.toggle("wba-busy", model.get("busy"));
    el.innerHTML = rows.length === 0 ? "" :
      `<table class="wb-table"><thead><tr><th>pattern (click: switch it in ${variable}'s pipeline)</th>` +
      `<th>group</th><th>ms</th><th>in ${variable}'s pipeline</th></tr></thead><tbody>` +
      rows.map((r) => {
        const isOn = on.has(r.name);
        return `<tr class="wba-row${isOn ? "" : " wba-off"}" data-name="${esc(r.name)}"><td><label class="wba-switch" ` +
          `title="switch ${esc(r.name)} ${isOn ? "off" : "on"} in ${variable}'s pipeline"><input type="checkbox"` +
          `${isOn ? " checked" : ""}><code class="wba-name">${esc(r.name)}</code></label></td><td>${esc(r.group)}</td>` +
          `<td>${esc(r.ms)}</td><td>${isOn ? "on" : "<b>off</b>"}</td></tr>`;
      }).join("") + `</tbody></table>`;
  };
  el.addEventListener("change", (e) => {
    const row = e.target.closest(".wba-row");
    if (row && e.target.matches("input")) model.send({ type: "toggle", names: [row.dataset.name], on: e.target.checked });
  });
  for (const name of ["rows", "enabled", "busy", "variable"]) model.on("change:" + name, draw);
  draw();
}

export default { render };
