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
  // Open the tool call a link points at (#tool-...).
  const target = location.hash && document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (target) {
    target.classList.add("ob-target");
    const details = target.closest("details");
    if (details) details.open = true;
  }
});
