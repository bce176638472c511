// The hlo-workbench JupyterLab extension: one plugin per job, each in its own module.
import { JupyterFrontEndPlugin } from '@jupyterlab/application';

import { bundleRenderer } from './bundle';
import { commands } from './commands';
import { hloxCompare } from './comparecommand';
import { programText } from './filetypes';
import { hloxViewer } from './hlox';
import { mlirCells } from './mlircells';

const plugins: JupyterFrontEndPlugin<any>[] = [
  programText,
  hloxViewer,
  bundleRenderer,
  commands,
  mlirCells,
  hloxCompare
];
export default plugins;
