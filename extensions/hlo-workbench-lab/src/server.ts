// What the kernel-free views ask the workbench's Jupyter server extension (workbench/views/labserver.py),
// which reads .hlox files and compares them in Python: the view model of a file, the structural diff of two
// stages, the comparison of two files. The extension computes none of these itself.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IDiffEntry, IViewModel } from './components';
import type { IComparisonModel } from './components/compare';

/** The server extension's routes, under the server's base URL. */
export const BASE = 'hlo-workbench';

/** The JSON `endpoint` answers to `query` (empty values left out); an Error with the server's sentence
 * (a file that cannot be read, a stage it lacks) where it refuses. */
export async function ask<T>(
  endpoint: 'view' | 'diff' | 'compare',
  query: Record<string, string | undefined>,
  settings: ServerConnection.ISettings = ServerConnection.makeSettings()
): Promise<T> {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v) params.set(k, v);
  const url = URLExt.join(settings.baseUrl, BASE, endpoint) + '?' + params.toString();
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch (err) {
    throw new Error(`the Jupyter server did not answer: ${(err as Error).message}`);
  }
  const text = await response.text();
  let body: any = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!response.ok) {
    const said =
      typeof body?.message === 'string' && body.message
        ? body.message
        : response.status === 404 && !body
          ? 'the hlo-workbench server extension is not enabled on this Jupyter ' +
            'server (jupyter server extension enable workbench.views.labserver)'
          : `${response.status} ${response.statusText}`;
    throw new Error(said);
  }
  if (body === null) throw new Error('the Jupyter server sent no JSON');
  return body as T;
}

/** The view model of the saved exploration at `path`, with `left` and `right` shown (default: the pair the
 * panel shows first). */
export function viewOf(path: string, left?: string, right?: string): Promise<IViewModel> {
  return ask<IViewModel>('view', { path, left, right });
}

/** Python's structural diff of stages `left` and `right` of the file at `path`. */
export function diffOf(path: string, left: string, right: string): Promise<IDiffEntry> {
  return ask<IDiffEntry>('diff', { path, left, right });
}

/** Python's structural diff of stage `left` of file `a` and stage `right` of file `b`. */
export function diffAcross(a: string, left: string, b: string, right: string): Promise<IDiffEntry> {
  return ask<IDiffEntry>('diff', { a, left, b, right });
}

/** The comparison of the saved explorations at `a` and `b`, with each file's view model. */
export function compareOf(a: string, b: string): Promise<IComparisonModel> {
  return ask<IComparisonModel>('compare', { a, b });
}

/** A sentence saying why something cannot be shown, as text. */
export function errorNode(message: string): HTMLElement {
  const e = document.createElement('div');
  e.className = 'hwb-error';
  e.textContent = message;
  return e;
}
