// The MIME types of a %%hlo output: the view model Python made of the panel (what the saved view draws
// without a kernel; workbench/artifacts/viewmodel.py's MIME) and the live panel's widget view.
export const BUNDLE_MIME = 'application/vnd.hlo-workbench.exploration+json';
export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
