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

  // The header: which server, which store, for how long.
  var started = 0;
  function info() {
    return fetch("/dashboard/info", { headers: headers(false), cache: "no-store" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (i) {
        if (!i) return;
        var v = i.version + (i.commit ? " · " + i.commit.slice(0, 12) : "");
        document.getElementById("info-version").textContent = v;
        document.getElementById("info-version").title = i.version + " " + (i.commit || "") + " " + i.go_version;
        document.getElementById("info-store").textContent = i.store || "?";
        started = Date.now() - i.uptime_ms;
        uptime();
      }, function () {});
  }
  function uptime() {
    if (!started) return;
    var s = Math.floor((Date.now() - started) / 1000), d = Math.floor(s / 86400), out;
    if (d > 0) out = d + "d " + Math.floor(s % 86400 / 3600) + "h";
    else if (s >= 3600) out = Math.floor(s / 3600) + "h " + Math.floor(s % 3600 / 60) + "m";
    else out = Math.floor(s / 60) + "m " + (s % 60) + "s";
    document.getElementById("info-uptime").textContent = out;
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
    info();
    refresh();
  });
  info();
  refresh();
  setInterval(refresh, 2000);
  setInterval(uptime, 1000);
})();
