// A keyboard queue page opens each new item at its top: when the item on screen changes (a key press
// re-draws the panel in place, so the browser keeps the old scroll position), the block holding the
// panel is scrolled so that its first lines (the progress, the item's id) are in view. Nothing moves
// while the same item is drawn again (typing a note, opening an expander).
export default function (component) {
  const { data, parentElement } = component;
  const item = JSON.stringify((data && data.item) || null);
  const seen = (window.__assessItemTop = window.__assessItemTop || {});
  const page = (data && data.page) || "";
  if (seen[page] === item) return;
  const first = seen[page] === undefined;
  seen[page] = item;
  if (first) return; // a page's first item: the page opened at its top
  const block = parentElement.closest('[data-testid="stVerticalBlock"]');
  if (!block) return;
  const header = document.querySelector('[data-testid="stHeader"]');
  const margin = (header ? header.getBoundingClientRect().height : 0) + 8;
  const settle = () => {
    const top = block.getBoundingClientRect().top;
    if (top < margin || top > window.innerHeight - 80) {
      block.style.scrollMarginTop = `${margin}px`;
      block.scrollIntoView({ block: "start", behavior: "instant" });
    }
  };
  requestAnimationFrame(settle);
}
