// The components in the panel: one anywidget entry (the default export of views.js) that draws the component
// its model names (`kind`) from the JSON Python made for it (`data`), and sends the user's actions back to
// Python as {action, payload} messages. Python's side is workbench/views/widgets/component.py.
//
// A component registers itself by kind (`register`); Python answers a component's request (`ask`) with a
// message {reply: id, value}. Nothing here computes a fact: every number and text comes in `data`.
//
// A long text (a stage's text, an SVG) comes once, in `blobs` (key -> text, sent before the data that refers to it),
// and `data` refers to it as {$blob: key}: `render` puts the texts back before the component sees its data.
import type { IMounted } from './model';

/** What a component gets from its host: `act` sends an action to Python; `ask` sends one and resolves with
 * Python's reply (a diff of a pair, a page of rows). */
export interface IWidgetHost {
  act(action: string, payload?: Record<string, unknown>): void;
  ask<T>(action: string, payload?: Record<string, unknown>): Promise<T>;
}

export type Factory = (el: HTMLElement, data: any, host: IWidgetHost) => IMounted;

const FACTORIES = new Map<string, Factory>();

/** Makes `kind` a component the panel can draw. */
export function register(kind: string, factory: Factory): void {
  FACTORIES.set(kind, factory);
}

/** The kinds registered, for the tests. */
export function kinds(): string[] {
  return [...FACTORIES.keys()].sort();
}

interface IAnyModel {
  get(name: string): any;
  on(event: string, f: (...args: any[]) => void): void;
  off(event?: string | null, f?: ((...args: any[]) => void) | null): void;
  send(content: any): void;
}

/** `data` with each {$blob: key} it holds replaced by the text `blobs` has under that key. */
export function resolve(data: any, blobs: Record<string, string>): any {
  if (Array.isArray(data)) return data.map(v => resolve(v, blobs));
  if (!data || typeof data !== 'object') return data;
  const keys = Object.keys(data);
  if (keys.length === 1 && keys[0] === '$blob') return blobs[data.$blob] ?? '';
  return Object.fromEntries(keys.map(k => [k, resolve(data[k], blobs)]));
}

/** anywidget's render: the component named by the model's `kind`, redrawn with each new `data`. */
export function render({ model, el }: { model: IAnyModel; el: HTMLElement }): () => void {
  const kind = String(model.get('kind'));
  const make = FACTORIES.get(kind);
  if (!make) {
    el.textContent = `hlo-workbench: no view component "${kind}" in this build (${kinds().join(', ')})`;
    return () => {};
  }
  let next = 0;
  const waiting = new Map<number, (value: any) => void>();
  const heard = (msg: any) => {
    if (msg && typeof msg.reply === 'number' && waiting.has(msg.reply)) {
      waiting.get(msg.reply)!(msg.value);
      waiting.delete(msg.reply);
    }
  };
  model.on('msg:custom', heard);
  const host: IWidgetHost = {
    act: (action, payload = {}) => model.send({ action, payload }),
    ask: <T>(action: string, payload: Record<string, unknown> = {}) =>
      new Promise<T>(resolve => {
        const id = ++next;
        waiting.set(id, resolve);
        model.send({ action, payload, ask: id });
      })
  };
  const data = () => resolve(model.get('data'), model.get('blobs') ?? {});
  const mounted = make(el, data(), host);
  const changed = () => mounted.update(data());
  model.on('change:data', changed);
  return () => {
    model.off('change:data', changed);
    model.off('msg:custom', heard);
    mounted.dispose();
  };
}
