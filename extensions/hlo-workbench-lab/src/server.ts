// What the kernel-free views ask the workbench's Jupyter server extension (workbench/views/labserver.py),
// which reads .hlox files and compares them in Python: the view model of a file, the structural diff of two
// stages, the comparison of two files. The extension computes none of these itself.
import { URLExt } from '@jupyterlab/coreutils';
import { ServerConnection } from '@jupyterlab/services';

import type { IDiffEntry, IViewModel } from './components';
import type { IComparisonModel } from './components/compare';

const NOT_ENABLED =
  'the hlo-workbench server extension is not enabled on this Jupyter server ' +
  '(jupyter server extension enable workbench.views.labserver)';

/** The JSON that route `endpoint` answers to `query` (empty values left out); an Error with the server's
 * sentence (a file that cannot be read, a stage it lacks) where it refuses. */
async function ask<T>(endpoint: 'view' | 'diff' | 'compare', query: Record<string, string | undefined>): Promise<T> {
  const settings = ServerConnection.makeSettings();
  const params = new URLSearchParams(Object.entries(query).filter((kv): kv is [string, string] => !!kv[1]));
  const url = URLExt.join(settings.baseUrl, 'hlo-workbench', endpoint) + '?' + params;
  let response: Response;
  try {
    response = await ServerConnection.makeRequest(url, {}, settings);
  } catch (err) {
    throw new Error(`the Jupyter server did not answer: ${(err as Error).message}`);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    const said = typeof body?.message === 'string' && body.message ? body.message : null;
    throw new Error(
      said ?? (response.status === 404 && !body ? NOT_ENABLED : `${response.status} ${response.statusText}`)
    );
  }
  if (body === null) throw new Error('the Jupyter server sent no JSON');
  return body as T;
}

/** The view model of the saved exploration at `path`, with `left` and `right` shown (default: the pair the
 * panel shows first). */
export const viewOf = (path: string, left?: string, right?: string) => ask<IViewModel>('view', { path, left, right });

/** Python's structural diff of stages `left` and `right` of the file at `path`. */
export const diffOf = (path: string, left: string, right: string) => ask<IDiffEntry>('diff', { path, left, right });

/** Python's structural diff of stage `left` of file `a` and stage `right` of file `b`. */
export const diffAcross = (a: string, left: string, b: string, right: string) =>
  ask<IDiffEntry>('diff', { a, left, b, right });

/** The comparison of the saved explorations at `a` and `b`, with each file's view model. */
export const compareOf = (a: string, b: string) => ask<IComparisonModel>('compare', { a, b });
