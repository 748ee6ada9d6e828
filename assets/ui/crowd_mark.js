// The crowd page's cookies (assess.ui.crowd.crowd_mark), each this site's only and with a limited
// lifetime: the crowd link this browser follows while its batch is unfinished (a later visit without
// ?study= still opens only that crowd page; max_age 0 removes it), and per worker id the secret that
// binds that id to this browser (assess.ui.crowd.crowd_bind). Over https the cookies are
// SameSite=None; Secure; Partitioned, so that they also work inside MTurk's frame (kept per top-level
// site); over plain http (a local pilot) SameSite=Strict.
export default function (component) {
  const { data } = component;
  const attributes =
    window.location.protocol === "https:" ? "; SameSite=None; Secure; Partitioned" : "; SameSite=Strict";
  for (const cookie of data.cookies || []) {
    const value = encodeURIComponent(cookie.value || "");
    document.cookie = `${cookie.name}=${value}; path=/; max-age=${cookie.max_age}${attributes}`;
  }
}
