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

  // stale says, above the page, that what it shows is no longer live and
  // why (the store did not answer, the replica does not answer); "" takes
  // it away. A page kept as it was when a refresh fails must not pass for
  // the present during an outage.
  function stale(why) {
    var s = document.getElementById("stale");
    if (!why) { if (s) { s.remove(); } return; }
    if (!s) {
      s = document.createElement("p");
      s.id = "stale";
      s.className = "stale";
      s.setAttribute("role", "alert");
      var main = document.getElementById("main");
      main.insertBefore(s, main.firstChild);
    }
    var u = document.getElementById("updated");
    s.textContent = "Not up to date (" + (u ? u.textContent : "") + "): " + why + " Retrying every " + (PERIOD / 1000) + " seconds.";
  }

  function refresh() {
    if (!live || busy || document.visibilityState === "hidden") { return Promise.resolve(); }
    busy = true;
    return fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" } })
      .then(function (r) {
        if (r.redirected) { return null; } // signed out: keep the page
        if (!r.ok) {
          // The store failed (503, its error page says why): keep the page,
          // and say it is stale.
          return r.text().then(function (html) {
            var e = new DOMParser().parseFromString(html, "text/html").querySelector("p.error");
            stale("the last refresh failed (" + r.status + ")" + (e ? ": " + e.textContent : "."));
            return null;
          });
        }
        return r.text();
      })
      .then(function (html) { if (html) { swap(html); stale(""); } })
      .catch(function () { stale("this replica does not answer (it may be down; another replica's console still works)."); })
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
