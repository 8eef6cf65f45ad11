// Solocron console: live refresh and actions without a page load. The pages
// work without it; this only re-fetches the page the server renders and
// swaps its live parts, and sends the action forms in the background.
(function () {
  "use strict";
  var PERIOD = 3000;
  var busy = false;

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var now = document.querySelectorAll("[data-live]");
    var next = doc.querySelectorAll("[data-live]");
    if (now.length !== next.length) { return; }
    for (var i = 0; i < now.length; i++) {
      now[i].replaceWith(document.importNode(next[i], true));
    }
    // The actions follow the state (Pause becomes Resume).
    var a = document.querySelector(".actions"), b = doc.querySelector(".actions");
    if (a && b) { a.replaceWith(document.importNode(b, true)); bind(); }
    var u = document.getElementById("updated"), v = doc.getElementById("updated");
    if (u && v) { u.textContent = v.textContent; }
  }

  // Only a page with live parts is re-fetched: an error page's address may
  // be an action's (a refused POST) or a page that does not exist, which a
  // GET every few seconds would only answer 404 again.
  var live = document.querySelector("[data-live]") !== null;

  function refresh() {
    if (!live || busy || document.visibilityState === "hidden") { return Promise.resolve(); }
    busy = true;
    return fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.redirected || !r.ok) { return null; } // signed out, or the store failed: keep the page
        return r.text();
      })
      .then(function (html) { if (html) { swap(html); } })
      .catch(function () {})
      .finally(function () { busy = false; });
  }

  var MESSAGES = {
    trigger: "Run requested: a replica picks it up within a heartbeat.",
    pause: "Paused cluster-wide.",
    resume: "Resumed cluster-wide.",
    cancel: "Cancel asked: the replica running it stops it at its next lease renewal.",
    retry: "Retry requested: this new run is picked up within a heartbeat.",
    backfill: "Backfill started: replicas run its instants within a heartbeat.",
    "backfill-cancel": "Backfill cancelled: runs it started go on to their end."
  };

  function flash(msg) {
    var f = document.getElementById("flash");
    if (f) { f.textContent = msg; }
  }

  function bind() {
    document.querySelectorAll("form[data-action]").forEach(function (form) {
      if (form.dataset.bound) { return; }
      form.dataset.bound = "1";
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        var button = form.querySelector("button");
        if (button) { button.disabled = true; }
        fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin" })
          .then(function (r) {
            if (!r.ok) {
              // The server says why (a full queue, a run that ended meanwhile).
              return r.text().then(function (html) {
                var e = new DOMParser().parseFromString(html, "text/html").querySelector("p.error");
                flash("The action failed (" + r.status + "): " + (e ? e.textContent : "reload the page and try again."));
              });
            }
            var to = new URL(r.url);
            if (to.pathname !== location.pathname) { location.assign(to.href); return; } // another page: a retry's new run
            var done = to.searchParams.get("done");
            flash(MESSAGES[done] || "Done.");
            return r.text().then(swap);
          })
          .catch(function () { flash("The action could not be sent."); })
          .finally(function () { if (button) { button.disabled = false; } });
      });
    });
  }

  bind();
  setInterval(refresh, PERIOD);
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "visible") { refresh(); } });
})();
