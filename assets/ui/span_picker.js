// The span picker (assess.ui.spans). The passage is rendered as text nodes only (createTextNode),
// never as HTML. Offsets are UTF-16 code units of the concatenated text nodes
// (Range.toString().length), which Python converts to code points (assess.nuggets.span_from_utf16)
// and checks against the stored passage. The function runs again whenever its data changes,
// without the previous cleanup: listeners are therefore kept on the parent element and replaced,
// never added twice.
export default function (component) {
  const { data, parentElement, setTriggerValue } = component;
  if (parentElement.__spanPickerCleanup) parentElement.__spanPickerCleanup();
  let root = parentElement.querySelector(":scope > .sp-root");
  if (!root) {
    root = document.createElement("div");
    root.className = "sp-root";
    parentElement.appendChild(root);
  }
  root.replaceChildren();
  const bar = document.createElement("div");
  bar.className = "sp-bar";
  const button = document.createElement("button");
  button.type = "button";
  button.className = "sp-add";
  button.textContent = data.button || "Add selection as nugget (N)";
  const msg = document.createElement("span");
  msg.className = "sp-msg";
  msg.setAttribute("role", "status");
  msg.textContent = data.hint || "";
  bar.append(button, msg);
  const box = document.createElement("div");
  box.className = "sp-text";
  box.dataset.passage = data.id || "";
  let full = "";
  for (const [piece, marked] of data.segments || []) {
    const node = document.createTextNode(piece);
    if (marked) {
      const mark = document.createElement("mark");
      mark.className = "sp-nugget";
      mark.appendChild(node);
      box.appendChild(mark);
    } else {
      box.appendChild(node);
    }
    full += piece;
  }
  root.append(bar, box);

  function offsetOf(node, offset) {
    if (!box.contains(node)) {
      return (box.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_PRECEDING) ? 0 : full.length;
    }
    const range = document.createRange();
    range.selectNodeContents(box);
    range.setEnd(node, offset);
    return range.toString().length;
  }
  function current() {
    const sel = window.getSelection();
    if (!sel || sel.rangeCount === 0 || sel.isCollapsed) return null;
    const range = sel.getRangeAt(0);
    if (!range.intersectsNode(box)) return null;
    const start = offsetOf(range.startContainer, range.startOffset);
    const end = offsetOf(range.endContainer, range.endOffset);
    return end > start ? { start, end } : null;
  }
  let last = null;
  const onSelection = () => { const c = current(); if (c) last = c; };
  function submit(chosen) {
    const c = chosen || current() || last;
    if (!c) { msg.textContent = "Select some passage text first."; return; }
    msg.textContent = "Saving…";
    last = null;
    setTriggerValue(data.event || "span",
                    { id: data.id, start: c.start, end: c.end, text: full.slice(c.start, c.end), units: "utf-16" });
  }
  const key = data.key === null ? null : (data.key || "n").toLowerCase(); // null: shortcuts turned off
  const onKey = (e) => {
    if (!key || e.defaultPrevented || e.repeat || e.ctrlKey || e.metaKey || e.altKey) return;
    if ((e.key || "").toLowerCase() !== key) return;
    const t = e.target;
    if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName || ""))) return;
    const c = current();
    if (!c) return;          // the selection is not in this passage (another picker, or nothing)
    e.preventDefault();
    e.stopPropagation();
    submit(c);
  };
  const keepSelection = (e) => e.preventDefault();
  const onClick = () => submit(null);
  button.addEventListener("mousedown", keepSelection);
  button.addEventListener("click", onClick);
  document.addEventListener("selectionchange", onSelection);
  document.addEventListener("keydown", onKey, true);
  const cleanup = () => {
    document.removeEventListener("selectionchange", onSelection);
    document.removeEventListener("keydown", onKey, true);
    button.removeEventListener("mousedown", keepSelection);
    button.removeEventListener("click", onClick);
    if (parentElement.__spanPickerCleanup === cleanup) delete parentElement.__spanPickerCleanup;
  };
  parentElement.__spanPickerCleanup = cleanup;
  return cleanup;
}
