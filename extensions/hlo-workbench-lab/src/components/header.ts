// The header: what was explored (title, pipeline, device), what the user switched (toggles), with which
// versions, and whether the exploration is whole (XLA still compiling, a stage failed: in the live panel with the
// whole diagnostic, the error's `full`).
import { clip } from './format';
import { h } from './dom';
import type { IViewModel } from './model';

const SOURCES: Record<IViewModel['source'], string> = {
  panel: '',
  saved: 'saved view (no kernel): run the cell for the live panel',
  hlox: 'saved exploration (.hlox), read without a kernel',
  report: 'offline report'
};

function toggleList(label: string, names: string[], cls: string): HTMLElement {
  const line = h('div', `hwbv-toggle ${cls}`);
  line.append(h('span', 'hwbv-label', label));
  for (const n of names) line.append(h('code', 'hwbv-chip', n));
  return line;
}

export function header(m: IViewModel): HTMLElement {
  const head = h('div', 'hwbv-header');
  head.dataset.hwb = 'header';
  const top = h('div', 'hwbv-titleline');
  top.append(
    h('span', 'hwbv-title', m.title),
    h('span', 'hwbv-device', m.device),
    h('span', 'hwbv-muted', `${m.stages.length.toLocaleString('en-US')} stages`)
  );
  const source = SOURCES[m.source] ?? m.source;
  if (source) top.append(h('span', 'hwbv-muted hwbv-source', source));
  head.append(top);
  const pipe = h('div', 'hwbv-pipeline');
  pipe.append(h('span', 'hwbv-label', 'pipeline'), h('code', 'hwbv-wrap', clip(m.pipeline, 600)));
  if (m.pipeline.length > 600) pipe.title = clip(m.pipeline, 4000);
  head.append(pipe);

  const t = m.toggles;
  const toggles = h('div', 'hwbv-toggles');
  toggles.dataset.hwb = 'toggles';
  toggles.dataset.patternsDisabled = t.patterns_disabled.join(',');
  toggles.dataset.patternsEnabled = t.patterns_enabled.join(',');
  toggles.dataset.xlaDisabled = t.xla_disabled.join(',');
  if (t.patterns_disabled.length) toggles.append(toggleList('patterns off', t.patterns_disabled, 'hwbv-off'));
  if (t.patterns_enabled.length) toggles.append(toggleList('patterns added', t.patterns_enabled, 'hwbv-on'));
  if (t.xla_disabled.length) toggles.append(toggleList('XLA passes off', t.xla_disabled, 'hwbv-off'));
  if (!toggles.childElementCount) toggles.append(h('span', 'hwbv-muted', 'no pattern or XLA pass switched'));
  head.append(toggles);

  if (!m.complete && m.source !== 'panel') {
    // the live panel's stage list and status line say it
    head.append(h('div', 'hwbv-warn', 'XLA was still compiling: its stages are not listed'));
  }
  if (m.error) {
    const e = h('div', 'hwbv-error');
    e.dataset.hwb = 'error';
    e.dataset.stage = m.error.stage;
    e.append(
      h('div', '', `${m.error.stage} failed (the stages before it are usable)`),
      h('pre', 'hwbv-pre', m.error.message)
    );
    if (m.error.full) {
      const full = h('details', 'hwbv-error-full');
      full.append(
        h('summary', '', 'the whole diagnostic, every frame (.error.full)'),
        h('pre', 'hwbv-pre', m.error.full)
      );
      e.append(full);
    }
    head.append(e);
  }
  const versions = Object.entries(m.versions)
    .map(([k, v]) => `${k} ${v}`)
    .join(' \u00b7 ');
  if (versions) head.append(h('div', 'hwbv-versions', versions));
  return head;
}
