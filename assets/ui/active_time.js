// Item top: a keyboard queue page opens each new item at its top: when the item on screen changes (a key press
// re-draws the panel in place, so the browser keeps the old scroll position), the block holding the
// panel is scrolled so that its first lines (the progress, the item's id) are in view. Nothing moves
// while the same item is drawn again (typing a note, opening an expander).
function openAtTop(component) {
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

// The item panel's one component (assess.ui.cursor: Cursor.shown and the end screen), two jobs: a new item
// opens at its top (openAtTop above), and, when the panel has label keys (`buttons`), the active time per judgment.
//
// Active time per judgment (assess.ui.cursor, docs/judging.md#active-time): how long the item on screen was
// visible, focused and in use before the key press (or click) that labels it.
//
// The clock runs while the tab is visible (document.visibilityState) and the window has the focus
// (document.hasFocus()), and for at most `idle_ms` after the last input (key, pointer, wheel, scroll): a longer
// stretch without input counts only its first `idle_ms`. It starts when a new item is drawn and starts again
// after every timed press. A press of one of the panel's label keys (`keys`) or a click on one of its label
// buttons (`buttons`, by Streamlit's `st-key-<key>` class) sets the state value `press` = {item, ms, seq}.
// Streamlit sends it in the same rerun as the button's own trigger (widget updates of one event are flushed
// together), so the button's callback reads it (Cursor.active_ms). Nothing else ever triggers a rerun.
export default function (component) {
  openAtTop(component);
  const { data, setStateValue } = component;
  const clock0 = window.__assessClock;
  if (!data.buttons || !data.buttons.length) {
    if (clock0) clock0.mounted = false; // the end screen: nothing is timed
    return;
  }
  const now = () => performance.now();
  const active = () => document.visibilityState !== "hidden" && !document.hidden && document.hasFocus();
  const item = JSON.stringify(data.item);
  const clock = (window.__assessClock = window.__assessClock || { item: null, seq: 0 });

  const elapsed = (t) =>
    clock.total + (clock.since === null ? 0 : Math.max(0, Math.min(t, clock.lastInput + clock.idle) - clock.since));
  const settle = (t) => {
    clock.total = elapsed(t);
    clock.since = null;
  };
  const restart = (t) => {
    clock.total = 0;
    clock.lastInput = t;
    clock.since = active() ? t : null;
  };

  clock.page = data.page;
  clock.keys = (data.keys || []).map((k) => String(k).toLowerCase());
  clock.buttons = data.buttons || [];
  clock.idle = data.idle_ms || 60000;
  clock.send = setStateValue;
  clock.mounted = true;
  if (clock.item !== item) {
    clock.item = item;
    clock.value = data.item;
    restart(now());
  }
  clock.report = () => {
    const t = now();
    clock.seq += 1;
    clock.send("press", { item: clock.value, ms: Math.round(elapsed(t)), seq: clock.seq });
    restart(t);
  };
  clock.input = (t) => {
    settle(t);
    clock.lastInput = t;
    if (active()) clock.since = t;
  };

  if (!window.__assessClockListeners) {
    window.__assessClockListeners = true;
    const c = () => window.__assessClock;
    const typing = (el) => el && (el.tagName === "INPUT" || el.tagName === "TEXTAREA" || el.isContentEditable);
    window.addEventListener(
      "keydown",
      (event) => {
        const k = c();
        if (!k || !k.mounted) return;
        if (!event.repeat && !typing(event.target) && !event.ctrlKey && !event.metaKey && !event.altKey) {
          if (k.keys.includes(String(event.key).toLowerCase())) k.report();
        }
        k.input(now());
      },
      true,
    );
    document.addEventListener(
      "click",
      (event) => {
        const k = c();
        if (!k || !k.mounted || !(event.target instanceof Element)) return;
        const hit = k.buttons.some((b) => event.target.closest(`.st-key-${CSS.escape(b)} button`));
        if (hit) k.report();
      },
      true,
    );
    const input = () => {
      const k = c();
      if (k && k.mounted) k.input(now());
    };
    for (const name of ["pointerdown", "pointermove", "wheel", "scroll", "touchstart"]) {
      window.addEventListener(name, input, { capture: true, passive: true });
    }
    // Leaving the tab or the window stops the clock; coming back is input and starts it again.
    document.addEventListener("visibilitychange", input, true);
    window.addEventListener("focus", input, true);
    window.addEventListener("blur", input, true);
  }
  return () => {
    clock.mounted = false;
  };
}
