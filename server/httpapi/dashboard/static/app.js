// The dashboard's live part. The overview reloads the server-rendered
// panels every two seconds and the charts every ten; "#tube=…&state=…"
// shows the job browser and "#job=…" a job's page, both rendered on the
// server too. Buttons act through the /v1 API (and the dashboard's bulk
// delete); those marked data-confirm ask a second click first.
(function () {
  "use strict";
  var panels = document.getElementById("panels");
  var view = document.getElementById("view");
  var charts = document.getElementById("charts");
  var status = document.getElementById("status");
  var auth = document.getElementById("auth");
  var search = document.getElementById("search");
  var tokenKey = "hourglass-token";

  function headers(json) {
    var h = {};
    var t = sessionStorage.getItem(tokenKey);
    if (t) h["Authorization"] = "Bearer " + t;
    if (json) h["Content-Type"] = "application/json";
    return h;
  }

  function get(url) {
    return fetch(url, { headers: headers(false), cache: "no-store" }).then(function (r) {
      if (r.status === 401) {
        auth.hidden = false;
        status.textContent = "a token is needed";
        return null;
      }
      if (!r.ok) {
        return r.json().then(function (j) { throw new Error(j.error.message); },
          function () { throw new Error("error " + r.status); });
      }
      return r;
    });
  }

  // The route: the parameters of the location's hash.
  function route() { return new URLSearchParams(location.hash.slice(1)); }

  // One load at a time; one asked for meanwhile runs after it, so that
  // what an action changed is always shown.
  var busy = false, again = false;
  function refresh() {
    if (busy) {
      again = true;
      return;
    }
    var p = route(), url, target;
    if (p.get("job")) {
      url = "/dashboard/job?id=" + encodeURIComponent(p.get("job"));
      target = view;
    } else if (p.get("tube")) {
      url = "/dashboard/browse?" + p.toString();
      target = view;
    } else {
      // Not while the operator is choosing in a panel or confirming.
      var a = document.activeElement;
      if (panels.contains(a) && (a.tagName === "SELECT" || a.tagName === "INPUT")) return;
      if (panels.querySelector("button.confirming")) return;
      url = "/dashboard/panels";
      target = panels;
    }
    busy = true;
    view.hidden = target !== view;
    panels.hidden = charts.hidden = target === view;
    return get(url)
      .then(function (r) {
        if (!r) return;
        return r.text().then(function (html) {
          target.innerHTML = html;
          status.textContent = "updated " + new Date().toLocaleTimeString();
        });
      })
      .catch(function (e) {
        if (target === view) view.innerHTML = "";
        status.textContent = e.message || "server unreachable";
      })
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
    return get("/dashboard/info")
      .then(function (r) { return r && r.json(); })
      .then(function (i) {
        if (!i) return;
        var v = document.getElementById("info-version");
        v.textContent = i.version + (i.commit ? " · " + i.commit.slice(0, 12) : "");
        v.title = i.version + " " + (i.commit || "") + " " + i.go_version;
        document.getElementById("info-store").textContent = i.store || "—";
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

  function call(method, url, body) {
    var json = body !== undefined;
    return fetch(url, { method: method, headers: headers(json), body: json ? JSON.stringify(body) : undefined })
      .then(function (r) {
        if (r.ok) return r.status === 204 ? {} : r.json();
        return r.json().then(function (j) { throw new Error(j.error.message); },
          function () { throw new Error("error " + r.status); });
      });
  }

  // Deletes the buried jobs of a tube, a thousand a request, until none
  // is left or a request deletes none.
  function deleteBuried(tube, total) {
    var done = 0;
    function step() {
      return call("POST", "/dashboard/tubes/" + encodeURIComponent(tube) + "/delete-buried", { max: 1000 })
        .then(function (r) {
          done += r.deleted;
          status.textContent = "deleted " + done + " of " + total + " buried";
          if (r.deleted > 0 && r.buried > 0) return step();
          return r;
        });
    }
    return step();
  }

  function act(b) {
    var a = b.dataset.action, tube = b.dataset.tube, p;
    var box = b.closest(".actions, .bulk, td, section");
    switch (a) {
    case "kick":
      p = call("POST", "/v1/jobs/" + b.dataset.id + "/kick");
      break;
    case "delete":
      p = call("DELETE", "/v1/jobs/" + b.dataset.id).then(function () {
        // From the job's page, on to its tube's list.
        if (route().get("job") === b.dataset.id) {
          location.hash = new URLSearchParams({ tube: tube, state: b.dataset.state }).toString();
        }
      });
      break;
    case "kick-tube":
      p = call("POST", "/v1/tubes/" + encodeURIComponent(tube) + "/kick", { bound: Number(b.dataset.bound) });
      break;
    case "kick-n":
      p = call("POST", "/v1/tubes/" + encodeURIComponent(tube) + "/kick",
        { bound: Number(box.querySelector("[data-kick-n]").value) });
      break;
    case "delete-buried":
      p = deleteBuried(tube, b.dataset.count);
      break;
    case "pause":
      p = call("POST", "/v1/tubes/" + encodeURIComponent(tube) + "/pause",
        { delay_ms: Number(box.querySelector("[data-pause-for]").value) });
      break;
    case "resume":
      p = call("POST", "/v1/tubes/" + encodeURIComponent(tube) + "/pause", { delay_ms: 0 });
      break;
    case "schedule-pause":
    case "schedule-resume":
    case "schedule-trigger":
      p = call("POST", "/v1/schedules/" + encodeURIComponent(b.dataset.schedule) + "/" + a.slice("schedule-".length));
      break;
    default:
      return;
    }
    b.disabled = true;
    p.then(function (r) { status.textContent = a + " done" + (r && r.kicked !== undefined ? ": " + r.kicked + " kicked" : ""); },
      function (e) { status.textContent = a + ": " + (e.message || "server unreachable"); })
      .finally(refresh);
  }

  // A button with data-confirm acts on a second click within five seconds.
  function click(e) {
    var b = e.target.closest("button[data-action]");
    if (!b) return;
    if (b.dataset.confirm && !b.classList.contains("confirming")) {
      b.classList.add("confirming");
      b.dataset.label = b.textContent;
      b.textContent = b.dataset.confirm + " click again";
      setTimeout(function () {
        if (!b.classList.contains("confirming")) return;
        b.classList.remove("confirming");
        b.textContent = b.dataset.label;
      }, 5000);
      return;
    }
    b.classList.remove("confirming");
    act(b);
  }
  panels.addEventListener("click", click);
  view.addEventListener("click", click);

  search.addEventListener("submit", function (e) {
    e.preventDefault();
    var id = document.getElementById("search-id").value.trim().replace(/^#/, "");
    if (/^[0-9]+$/.test(id)) location.hash = "job=" + id;
    else status.textContent = "a job id is a whole number";
  });
  auth.addEventListener("submit", function (e) {
    e.preventDefault();
    sessionStorage.setItem(tokenKey, document.getElementById("token").value);
    auth.hidden = true;
    info();
    refresh();
    if (window.hourglassCharts) window.hourglassCharts();
  });
  window.addEventListener("hashchange", function () {
    view.innerHTML = "";
    refresh();
    window.scrollTo(0, 0);
  });
  info();
  refresh();
  setInterval(function () { if (!route().get("tube") && !route().get("job")) refresh(); }, 2000);
  setInterval(uptime, 1000);
  window.hourglassGet = get;
})();
