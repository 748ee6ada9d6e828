// A crowd link marks this browser (cookie assess_crowd: this site only, not readable by other sites,
// a limited lifetime) so that a later visit without ?study= (the worker edited the URL, or reloaded a
// page of the workbench) still opens only the crowd page of that study (assess.ui.crowd.crowd_frame).
export default function (component) {
  const { data } = component;
  const value = encodeURIComponent(data.link || "");
  document.cookie = `${data.name}=${value}; path=/; max-age=${data.max_age}; SameSite=Strict`;
}
