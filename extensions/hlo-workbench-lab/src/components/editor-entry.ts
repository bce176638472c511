// The stage editor's own module (workbench/assets/editor.js): CodeMirror is ~300 kB, which only the panel's editor
// needs, so views.js (every other component, the report, the saved view) does not carry it. Its registry and
// render are those of widget.ts, bundled again here: the panel loads this module for the "editor" kind only.
import './editor';
import { render } from './widget';

export { render };
export default { render };
