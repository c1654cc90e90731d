// datasette-obelisk: small enhancements; every page works without this file.
document.addEventListener("DOMContentLoaded", () => {
  // "Expand all" / "Collapse all" for folded tool calls on a transcript.
  document.querySelectorAll("[data-ob-toggle-all]").forEach((button) => {
    button.hidden = false;
    button.addEventListener("click", () => {
      const open = button.dataset.obToggleAll === "open";
      document.querySelectorAll(".ob-tool").forEach((details) => { details.open = open; });
    });
  });
  // Facet selects submit their form as soon as they change.
  document.querySelectorAll("form[data-ob-autosubmit] select").forEach((select) => {
    select.addEventListener("change", () => select.form.submit());
  });
  // Open the tool call a link points at (#tool-...), now and when the fragment changes.
  const openTarget = () => {
    let id;
    try {
      id = decodeURIComponent(location.hash.slice(1));
    } catch (error) {
      return;  // a fragment that is no percent-encoding (#%): nothing to open
    }
    const target = id && document.getElementById(id);
    const message = !target && /^m([0-9]+)$/.exec(id);
    if (message && document.querySelector(".ob-transcript")) {
      // A message of this session on another page: the page that starts with it.
      const url = new URL(location.href);
      if (url.searchParams.get("start") !== message[1]) {
        url.searchParams.set("start", message[1]);
        location.replace(url.toString());
      }
      return;
    }
    if (!target) return;
    document.querySelectorAll(".ob-target").forEach((element) => element.classList.remove("ob-target"));
    target.classList.add("ob-target");
    const details = target.closest("details");
    if (details) details.open = true;
  };
  openTarget();
  window.addEventListener("hashchange", openTarget);
});
