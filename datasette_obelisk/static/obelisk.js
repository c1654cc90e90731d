// datasette-obelisk: small enhancements; every page works without this file.
document.addEventListener("DOMContentLoaded", () => {
  // "Expand all" / "Collapse all" for folded tool calls on a transcript.
  const folds = document.querySelector(".ob-tool") !== null;  // (none: nothing to expand)
  document.querySelectorAll("[data-ob-toggle-all]").forEach((button) => {
    button.hidden = !folds;
    button.addEventListener("click", () => {
      const open = button.dataset.obToggleAll === "open";
      document.querySelectorAll(".ob-tool").forEach((details) => { details.open = open; });
    });
  });
  // A select chosen with the pointer submits its form at once; one changed from the
  // keyboard (arrow keys change it value by value) waits for the form's button.
  document.querySelectorAll("form[data-ob-autosubmit] select").forEach((select) => {
    let keyed = false;
    select.addEventListener("keydown", () => { keyed = true; });
    select.addEventListener("pointerdown", () => { keyed = false; });
    select.addEventListener("change", () => { if (!keyed) select.form.requestSubmit(); });
  });
  // Back or forward to a page (or reloading it): its form shows what its results are for, not
  // what was typed or chosen before leaving (which the browser would restore). Not on a first
  // visit: what is typed in the (focused) box before the page has loaded is the reader's.
  window.addEventListener("pageshow", (event) => {
    const navigation = performance.getEntriesByType("navigation")[0];
    if (!event.persisted && navigation && navigation.type === "navigate") return;
    document.querySelectorAll("form[data-ob-sync]").forEach((form) => form.reset());
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
    const message = !target && /^m([1-9][0-9]*)$/.exec(id);
    if (message && document.querySelector("[data-ob-pages]")) {
      // A message of this session on another page: the page that starts with it.
      const url = new URL(location.href);
      if (url.searchParams.get("start") !== message[1]) {
        url.searchParams.set("start", message[1]);
        location.replace(url.toString());
      }
      return;
    }
    const call = !target && /^tool-(.+)$/.exec(id);
    if (call && document.querySelector("[data-ob-pages]")) {
      // A tool call of this session on another page: the server shows the page that holds it.
      const url = new URL(location.href);
      if (url.searchParams.get("call") !== call[1]) {
        ["start", "call"].forEach((name) => url.searchParams.delete(name));
        url.searchParams.set("call", call[1]);
        location.replace(url.toString());
      }
      return;
    }
    if (!target) return;
    document.querySelectorAll(".ob-target").forEach((element) => element.classList.remove("ob-target"));
    if (target.closest(".ob-transcript")) target.classList.add("ob-target");  // a message or a call, not a page's part
    const details = target.closest("details");
    if (details) details.open = true;
  };
  // A link naming a call by ?call=ID alone (typed, or from a program): the server chose the page
  // that shows it; show the call as its #tool-ID link would.
  const asked = new URL(location.href).searchParams.get("call");
  const call = !location.hash && asked && document.getElementById("tool-" + asked);
  if (call) history.replaceState(history.state, "", "#tool-" + encodeURIComponent(asked));
  openTarget();
  if (call) call.scrollIntoView();
  window.addEventListener("hashchange", openTarget);
});
