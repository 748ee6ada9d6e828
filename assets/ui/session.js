// The sign-in session's cookie (assess.ui.frame): written after a sign-in, removed after a sign-out. It
// holds a random secret whose hash the store keeps; this site only (SameSite=Strict), Secure over https.
// Also reads a personal sign-in link's token from the address's fragment (#signin=TOKEN: never sent to
// any server, so no request line, referrer or proxy log holds it), removes it from the address bar and
// hands it to the server once.
export default function (component) {
  const { data, setTriggerValue } = component;
  const secure = window.location.protocol === "https:" ? "; Secure" : "";
  if (data.set) {
    document.cookie = `${data.name}=${encodeURIComponent(data.set)}; path=/; max-age=${data.max_age}; SameSite=Strict${secure}`;
  } else if (data.clear) {
    document.cookie = `${data.name}=; path=/; max-age=0; SameSite=Strict${secure}`;
  }
  const found = /(?:^#|&)signin=([^&]+)/.exec(window.location.hash || "");
  if (found) {
    history.replaceState(history.state, "", window.location.pathname + window.location.search);
    setTriggerValue("signin", decodeURIComponent(found[1]));
  }
}
