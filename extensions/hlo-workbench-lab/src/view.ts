// What the plugins draw with: the view components (src/components) mounted in a Lumino widget, and the
// sentence shown where they cannot draw.
import { Widget } from '@lumino/widgets';

/** A widget whose node `draw` fills with view components; what they mounted goes with the widget. */
export class ComponentView extends Widget {
  private readonly mounted: { dispose(): void };

  constructor(className: string, draw: (node: HTMLElement) => { dispose(): void }) {
    super();
    this.addClass(className);
    this.mounted = draw(this.node);
  }

  dispose(): void {
    if (!this.isDisposed) this.mounted.dispose();
    super.dispose();
  }
}

/** A sentence saying why something cannot be shown, as text. */
export function errorNode(message: string): HTMLElement {
  const e = document.createElement('div');
  e.className = 'hwb-error';
  e.textContent = message;
  return e;
}
