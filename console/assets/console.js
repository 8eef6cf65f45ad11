// Solocron console: live refresh and actions without a page load. The pages
// work without it; this only re-fetches the page the server renders and
// swaps its live parts, and sends the action forms in the background.
(function () {
  "use strict";
  var PERIOD = 3000;
  // WAIT bounds a refresh, ACT an action: a replica that is frozen or cut
  // off mid-connection never answers, and a fetch without a bound waited
  // for ever: the page went on looking live, and a button stayed disabled.
  // The server bounds its own calls to the store (5 s by default), so a
  // slow store answers 503 well within them.
  var WAIT = 10000, ACT = 15000;
  var busy = false;

  // A control's identity across two drawings of a page: its id, else its
  // kind, name, link or form and words.
  var CONTROLS = "a[href], button, input, select, textarea, summary";
  function key(e) {
    if (e.id) { return "#" + e.id; }
    return e.tagName + "|" + (e.getAttribute("name") || "") + "|" + (e.getAttribute("href") || "") + "|" +
      (e.form ? e.form.getAttribute("action") : "") + "|" + e.textContent.trim();
  }
  function like(e, root) {
    var all = root.querySelectorAll(CONTROLS), k = key(e);
    for (var i = 0; i < all.length; i++) { if (key(all[i]) === k) { return all[i]; } }
    return null;
  }

  // replace puts fresh in old's place, carrying over what the operator is
  // doing there: what they typed or chose (the server draws these fields
  // empty), which <details> they opened, and the keyboard focus. Without
  // it a refresh every few seconds wiped a pause reason being typed and a
  // backfill's range, closed the form and sent the focus to the top.
  function replace(old, fresh) {
    var a = old.querySelectorAll("input, select, textarea"), i, j;
    for (i = 0; i < a.length; i++) {
      if (a[i].type === "hidden" || !a[i].name) { continue; }
      var b = fresh.querySelectorAll("[name]");
      for (j = 0; j < b.length; j++) {
        if (b[j].name === a[i].name && b[j].type !== "hidden" && (b[j].form && a[i].form ? b[j].form.getAttribute("action") === a[i].form.getAttribute("action") : true)) {
          b[j].value = a[i].value;
          break;
        }
      }
    }
    var d = old.querySelectorAll("details"), e = fresh.querySelectorAll("details");
    for (i = 0; i < d.length && i < e.length; i++) {
      if (d[i].className === e[i].className) { e[i].open = d[i].open; }
    }
    var f = document.activeElement, back = f && f !== document.body && old.contains(f) ? like(f, fresh) : null;
    old.replaceWith(fresh);
    if (back) { back.focus({ preventScroll: true }); }
  }

  function swap(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    var now = document.querySelectorAll("[data-live]");
    var next = doc.querySelectorAll("[data-live]");
    if (now.length !== next.length) { return; }
    for (var i = 0; i < now.length; i++) {
      replace(now[i], document.importNode(next[i], true));
    }
    // The actions follow the state (Pause becomes Resume).
    var a = document.querySelector("main .actions"), b = doc.querySelector("main .actions");
    if (a && b) { replace(a, document.importNode(b, true)); }
    bind();
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
    return fetch(location.href, { credentials: "same-origin", headers: { "Accept": "text/html" }, signal: AbortSignal.timeout(WAIT) })
      .then(function (r) {
        if (r.redirected) {
          // Sent to the sign-in form: the session ended (its 12 hours, a
          // sign-out in another tab, a new token). Keep the page, but not
          // as if it were live.
          stale("the session has ended: reload the page to sign in again.");
          return null;
        }
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
      .catch(function (e) {
        stale(e && e.name === "TimeoutError" ?
          "this replica did not answer within " + (WAIT / 1000) + " seconds (it may be frozen, overloaded or cut off; another replica's console still works)." :
          "this replica does not answer (it may be down; another replica's console still works).");
      })
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

  // ask shows question in a modal dialog and calls yes if the operator
  // confirms. The actions that stop work or start many runs (Cancel, a
  // backfill and its cancel) ask first: one stray click must not kill a
  // run. Run now and Retry act at once, as their names say; a double click
  // sends them once (bind). Focus starts on "Back", Escape closes the
  // dialog (the browser's own modal dialog), and focus returns to the
  // button that opened it.
  var dialog = null;
  function ask(question, verb, danger, opener, yes) {
    if (!dialog) {
      dialog = document.createElement("dialog");
      dialog.className = "confirm";
      dialog.setAttribute("aria-labelledby", "confirm-question");
      dialog.innerHTML = '<p id="confirm-question"></p><div class="buttons"><button type="button" class="no">Back</button><button type="button" class="yes"></button></div>';
      document.body.appendChild(dialog);
      dialog.querySelector(".no").addEventListener("click", function () { dialog.close(""); });
      dialog.querySelector(".yes").addEventListener("click", function () { dialog.close("yes"); });
    }
    dialog.querySelector("#confirm-question").textContent = question;
    var y = dialog.querySelector(".yes");
    y.textContent = verb;
    y.className = "yes" + (danger ? " danger" : "");
    dialog.returnValue = "";
    dialog.onclose = function () {
      dialog.onclose = null;
      var to = opener && (document.contains(opener) ? opener : like(opener, document));
      if (to) { to.focus(); }
      if (dialog.returnValue === "yes") { yes(); }
    };
    dialog.showModal();
    dialog.querySelector(".no").focus();
  }

  // question is the form's data-confirm, its {field} replaced by the
  // form's values (a backfill's range).
  function question(form) {
    return form.dataset.confirm.replace(/\{(\w+)\}/g, function (m, k) {
      var f = form.elements[k];
      return f && f.value ? f.value.replace("T", " ") : m;
    });
  }

  // recent holds when each action was last sent: a double click, or Enter
  // pressed twice, sends an action once — even when the refresh swapped
  // the button for a new one between the two.
  var recent = {};
  function bind() {
    document.querySelectorAll("form[data-action]").forEach(function (form) {
      if (form.dataset.bound) { return; }
      form.dataset.bound = "1";
      form.addEventListener("submit", function (e) {
        e.preventDefault();
        var button = form.querySelector("button");
        if (form.dataset.confirm) {
          ask(question(form), form.dataset.verb || (button ? button.textContent : "Yes"), button && button.classList.contains("danger"), button, function () { send(form, button); });
          return;
        }
        var now = Date.now();
        if (recent[form.action] && now - recent[form.action] < 1500) { return; }
        recent[form.action] = now;
        send(form, button);
      });
    });
  }

  function send(form, button) {
    if (button) { button.disabled = true; }
    fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)), credentials: "same-origin", signal: AbortSignal.timeout(ACT) })
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
      .catch(function (e) {
        flash(e && e.name === "TimeoutError" ?
          "No answer within " + (ACT / 1000) + " seconds: whether the action was applied is unknown. Check the page before sending it again." :
          "The action could not be sent.");
      })
      .finally(function () { if (button) { button.disabled = false; } });
  }

  bind();
  setInterval(refresh, PERIOD);
  document.addEventListener("visibilitychange", function () { if (document.visibilityState === "visible") { refresh(); } });
})();
