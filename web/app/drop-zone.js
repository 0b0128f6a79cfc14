// @ts-check
// A file drop zone: a focusable area that takes a dropped file, opens the file picker when
// pressed (Enter, Space, click), and the hidden file input with its label. The snapshot
// comparison and the traced model use it.
import { h } from './dom.js';

/**
 * @param {{ id: string, inputId: string, accept: string, text: string, label: string,
 *   describedBy: string }} o
 * @param {(file: File | undefined) => void} take
 * @returns {HTMLElement[]} the zone, the input's label, the input
 */
export function dropZone(o, take) {
  const input = h('input', {
    type: 'file',
    id: o.inputId,
    accept: o.accept,
    onchange: (e) => take(/** @type {HTMLInputElement} */ (e.target).files?.[0]),
  });
  const zone = h(
    'div',
    {
      class: 'snap-drop',
      id: o.id,
      tabindex: '0',
      role: 'button',
      'aria-describedby': o.describedBy,
      onclick: () => input.click(),
      onkeydown: (e) => {
        if (e.key === 'Enter' || e.key === ' ') {
          e.preventDefault();
          input.click();
        }
      },
      /** @param {DragEvent} e */
      ondragover: (e) => {
        e.preventDefault();
        zone.classList.add('over');
      },
      ondragleave: () => zone.classList.remove('over'),
      /** @param {DragEvent} e */
      ondrop: (e) => {
        e.preventDefault();
        zone.classList.remove('over');
        take(e.dataTransfer?.files?.[0]);
      },
    },
    o.text,
  );
  return [zone, h('label', { class: 'sr-only', for: o.inputId }, o.label), input];
}
