// The dashboard's live part: it reloads the server-rendered panels every
// two seconds, and runs the buttons' actions through the /v1 API.
(function () {
  "use strict";
  var panels = document.getElementById("panels");
  var status = document.getElementById("status");
  var auth = document.getElementById("auth");
  var tokenKey = "hourglass-token";

  function headers(json) {
    var h = {};
    var t = sessionStorage.getItem(tokenKey);
    if (t) h["Authorization"] = "Bearer " + t;
    if (json) h["Content-Type"] = "application/json";
    return h;
  }

  // One refresh at a time; a refresh asked for meanwhile runs after it,
  // so that what an action changed is always shown.
  var busy = false, again = false;
  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    busy = true;
    return fetch("/dashboard/panels", { headers: headers(false), cache: "no-store" })
      .then(function (r) {
        if (r.status === 401) {
          auth.hidden = false;
          status.textContent = "a token is needed";
          return;
        }
        if (!r.ok) {
          status.textContent = "error " + r.status;
          return;
        }
        return r.text().then(function (html) {
          panels.innerHTML = html;
          status.textContent = "updated " + new Date().toLocaleTimeString();
        });
      })
      .catch(function () { status.textContent = "server unreachable"; })
      .finally(function () {
        busy = false;
        if (again) {
          again = false;
          refresh();
        }
      });
  }

  function act(b) {
    var a = b.dataset.action, url, method = "POST", body;
    if (a === "kick") {
      url = "/v1/jobs/" + b.dataset.id + "/kick";
    } else if (a === "delete") {
      url = "/v1/jobs/" + b.dataset.id;
      method = "DELETE";
    } else if (a === "kick-tube") {
      url = "/v1/tubes/" + encodeURIComponent(b.dataset.tube) + "/kick";
      body = JSON.stringify({ bound: Number(b.dataset.bound) });
    } else if (a === "schedule-pause" || a === "schedule-resume" || a === "schedule-trigger") {
      url = "/v1/schedules/" + encodeURIComponent(b.dataset.schedule) + "/" + a.slice("schedule-".length);
    } else {
      return;
    }
    b.disabled = true;
    fetch(url, { method: method, headers: headers(body !== undefined), body: body })
      .then(function (r) {
        if (r.ok) {
          status.textContent = a + " done";
          return;
        }
        return r.json().then(function (j) { status.textContent = a + ": " + j.error.message; },
          function () { status.textContent = a + ": error " + r.status; });
      })
      .catch(function () { status.textContent = "server unreachable"; })
      .finally(refresh);
  }

  panels.addEventListener("click", function (e) {
    var b = e.target.closest("button[data-action]");
    if (b) act(b);
  });
  auth.addEventListener("submit", function (e) {
    e.preventDefault();
    sessionStorage.setItem(tokenKey, document.getElementById("token").value);
    auth.hidden = true;
    refresh();
  });
  refresh();
  setInterval(refresh, 2000);
})();
