/// <reference lib="dom" />
/** The page's two DOM helpers: build an element, and set a parent's children without touching ones in place. */

type Child = Node | string | undefined | false;

export function el(tag: string, attrs: Record<string, string | undefined> = {}, ...children: Child[]): HTMLElement {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined) e.setAttribute(k, v);
  for (const c of children) if (c !== undefined && c !== false) e.append(c);
  return e;
}

/** Makes `nodes` the children of `parent`, moving only what changed (a focused input stays focused). */
export function syncChildren(parent: Element, nodes: readonly Node[]): void {
  const now = parent.childNodes;
  if (now.length === nodes.length && nodes.every((n, i) => now[i] === n)) return;
  parent.replaceChildren(...nodes);
}
