// After typing a note, Enter (or Escape) gives the keyboard back to the page's shortcuts: the
// text field loses focus once Streamlit has taken its value (hence the zero timeout).
export default function () {
  if (window.__assessKeyRelease) return;
  window.__assessKeyRelease = true;
  document.addEventListener("keydown", (event) => {
    const field = event.target;
    if (!field || (field.tagName !== "INPUT" && field.tagName !== "TEXTAREA")) return;
    if (event.key === "Escape" || (event.key === "Enter" && field.tagName === "INPUT")) {
      setTimeout(() => field.blur(), 0);
    }
  }, true);
}
