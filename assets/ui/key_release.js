// Gives the page's single-key shortcuts back after any widget is used. Streamlit ignores a shortcut whose key
// event comes from a form control (any INPUT, TEXTAREA or SELECT), and a toggle, a checkbox, a radio or a
// select keeps the focus after it is used: without this, no key works until the page is clicked.
// - In a text field, Enter (single-line) or Escape leaves the field once Streamlit has taken its value (hence
//   the zero timeout); Tab leaves it by itself.
// - On a control that takes no typing (a toggle or checkbox, a radio, a slider's range, a select whose list is
//   closed), a plain letter or digit, and on a toggle, checkbox or closed select also Left / Right, leaves the
//   control and is pressed again on the page, where the shortcuts hear it. Space, Enter, Up / Down and the
//   radio's arrows still work the control.
export default function () {
  if (window.__assessKeyRelease) return;
  window.__assessKeyRelease = true;
  const UNTYPED = new Set(["checkbox", "radio", "range", "button", "submit", "reset", "color", "file"]);
  const ARROWS = new Set(["ArrowLeft", "ArrowRight"]);

  // What the focused element is: "text" (typing goes there), a control kind, or null (not a form control).
  const kind = (el) => {
    if (!el || !el.tagName) return null;
    if (el.tagName === "TEXTAREA" || el.isContentEditable) return "text";
    if (el.tagName === "SELECT") return "select";
    if (el.tagName !== "INPUT") return null;
    if (el.getAttribute("role") === "combobox") return el.getAttribute("aria-expanded") === "true" ? "text" : "select";
    const type = (el.type || "text").toLowerCase();
    if (type === "radio" || type === "range") return "choice";
    return UNTYPED.has(type) ? "toggle" : "text";
  };

  window.addEventListener("keydown", (event) => {
    if (!event.isTrusted) return;  // a key this listener pressed again
    const path = event.composedPath ? event.composedPath() : [];
    const field = path.length ? path[0] : event.target;
    const what = kind(field);
    if (what === null) return;
    if (what === "text") {
      if (event.key === "Escape" || (event.key === "Enter" && field.tagName === "INPUT")) {
        setTimeout(() => field.blur(), 0);
      }
      return;
    }
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    const plain = event.key.length === 1 && /^[a-z0-9]$/i.test(event.key);
    if (!plain && !(ARROWS.has(event.key) && what !== "choice")) {
      if (event.key === "Escape") setTimeout(() => field.blur(), 0);
      return;
    }
    event.preventDefault();
    event.stopImmediatePropagation();
    field.blur();
    const again = { key: event.key, code: event.code, shiftKey: event.shiftKey, bubbles: true, cancelable: true, composed: true };
    document.body.dispatchEvent(new KeyboardEvent("keydown", again));
  }, true);
}
