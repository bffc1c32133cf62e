// The dashboard's live part. Views, by the location's hash:
//   #view=jobs (the default), limits, hashes, locks, schedules, store:
//     a view rendered on the server (GET /dashboard/panels?view=…);
//   #tube=…&state=…: a tube's jobs (GET /dashboard/browse);
//   #job=…: a job's page (GET /dashboard/job);
//   q=… with the tubes view or a tube's: the search (by id, tube, body).
// A job, tube or view that is not there is answered 404 with a page that
// says so, shown like a view.
// The view on screen is fetched again every two seconds (the tube view
// every ten) and its new HTML
// is merged into the page in place (morph): only the values that changed
// are touched, so nothing moves under the reader, and what they selected,
// opened or typed stays. Times come from the server as <time datetime>
// in UTC and are shown in the zone the reader chose (UTC or local,
// remembered in localStorage). Buttons act through the /v1 API (and the
// dashboard's bulk delete of buried jobs); those marked data-confirm ask a
// second click first.
(function () {
  "use strict";
  var panels = document.getElementById("panels");
  var view = document.getElementById("view");
  var charts = document.getElementById("charts");
  var status = document.getElementById("status");
  var auth = document.getElementById("auth");
  var search = document.getElementById("search");
  var nav = document.getElementById("nav");
  var tzSelect = document.getElementById("tz");
  var tokenKey = "hourglass-token", tzKey = "hourglass-tz";

  // Time, in the zone the reader chose.
  var zone = localStorage.getItem(tzKey) === "local" ? "local" : "utc";
  tzSelect.value = zone;
  function pad(n, w) { n = String(n); while (n.length < (w || 2)) n = "0" + n; return n; }
  function localZoneName(d) {
    try {
      var p = new Intl.DateTimeFormat(undefined, { timeZoneName: "short" }).formatToParts(d);
      for (var i = 0; i < p.length; i++) if (p[i].type === "timeZoneName") return p[i].value;
    } catch (e) { /* an old browser: no name */ }
    return "local";
  }
  // fmtTime writes d as 2026-03-01 14:05:09 UTC (24-hour), or without
  // the date when short.
  function fmtTime(d, short) {
    var u = zone === "utc";
    var s = pad(u ? d.getUTCHours() : d.getHours()) + ":" + pad(u ? d.getUTCMinutes() : d.getMinutes()) + ":" +
      pad(u ? d.getUTCSeconds() : d.getSeconds());
    if (!short) {
      s = (u ? d.getUTCFullYear() : d.getFullYear()) + "-" + pad((u ? d.getUTCMonth() : d.getMonth()) + 1) + "-" +
        pad(u ? d.getUTCDate() : d.getDate()) + " " + s;
    }
    return s + " " + (u ? "UTC" : localZoneName(d));
  }
  function localizeTimes(root) {
    root.querySelectorAll("time[datetime]").forEach(function (t) {
      var d = new Date(t.getAttribute("datetime"));
      if (!isNaN(d)) {
        t.textContent = fmtTime(d);
        t.title = t.getAttribute("datetime");
      }
    });
  }
  tzSelect.addEventListener("change", function () {
    zone = tzSelect.value === "local" ? "local" : "utc";
    localStorage.setItem(tzKey, zone);
    localizeTimes(document);
    if (window.hourglassCharts) window.hourglassCharts();
  });
  window.hourglassTime = fmtTime;

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
        setStatus("a token is needed");
        return null;
      }
      if (r.status === 404 && (r.headers.get("Content-Type") || "").indexOf("text/html") === 0) return r;
      if (!r.ok) {
        return r.json().then(function (j) { throw new Error(j.error.message); },
          function () { throw new Error("error " + r.status); });
      }
      return r;
    });
  }

  function setStatus(s) { status.textContent = s; status.title = s; }

  // The route: the parameters of the location's hash.
  function route() { return new URLSearchParams(location.hash.slice(1)); }
  function routeView(p) {
    if (p.get("job") || p.get("tube")) return "jobs";
    return p.get("view") || "jobs";
  }

  // morph makes the live node `from` like `to` (a node of the same tag),
  // touching only what differs. Children are matched by position; a child
  // with another tag or another data-key (a row of another job) is
  // replaced. What the reader changed stays: a checkbox's check, an open
  // <details>, the value of a field being typed in.
  function morph(from, to) {
    if (from.nodeType === 3 || from.nodeType === 8) {
      if (from.nodeValue !== to.nodeValue) from.nodeValue = to.nodeValue;
      return;
    }
    var keep = from.tagName === "DETAILS" ? { open: true } : {};
    var i, a;
    for (i = 0; i < to.attributes.length; i++) {
      a = to.attributes[i];
      if (from.getAttribute(a.name) !== a.value) from.setAttribute(a.name, a.value);
    }
    for (i = from.attributes.length - 1; i >= 0; i--) {
      a = from.attributes[i];
      if (!to.hasAttribute(a.name) && !keep[a.name]) from.removeAttribute(a.name);
    }
    if ((from.tagName === "INPUT" || from.tagName === "SELECT") && from === document.activeElement) return;
    var fc = from.childNodes, tc = Array.prototype.slice.call(to.childNodes);
    for (i = 0; i < tc.length; i++) {
      var f = fc[i], t = tc[i];
      if (!f) {
        from.appendChild(t);
      } else if (f.nodeType !== t.nodeType || f.nodeName !== t.nodeName ||
        (f.nodeType === 1 && (f.getAttribute("data-key") !== t.getAttribute("data-key") || f.id !== t.id))) {
        from.replaceChild(t, f);
      } else {
        morph(f, t);
      }
    }
    while (fc.length > tc.length) from.removeChild(from.lastChild);
  }

  // render puts html into target: in place when it shows the same thing.
  function render(target, html, same) {
    var tpl = document.createElement(target.tagName);
    tpl.innerHTML = html;
    localizeTimes(tpl);
    if (same) {
      morph(target, tpl);
    } else {
      target.replaceChildren.apply(target, Array.prototype.slice.call(tpl.childNodes));
    }
    applySelection();
  }

  // One load at a time; one asked for meanwhile runs after it, so that
  // what an action changed is always shown.
  var busy = false, again = false, shown = { panels: "", view: "" };
  function refresh(auto) {
    if (busy) {
      again = true;
      return;
    }
    var p = route(), url, target, v = routeView(p);
    if (p.get("job")) {
      url = "/dashboard/job?id=" + encodeURIComponent(p.get("job"));
      target = view;
    } else if (p.get("tube")) {
      url = "/dashboard/browse?" + p.toString();
      target = view;
    } else {
      url = "/dashboard/panels?view=" + encodeURIComponent(v) + (p.get("q") ? "&q=" + encodeURIComponent(p.get("q")) : "");
      target = panels;
    }
    // Not while the reader is choosing, typing or confirming.
    if (auto) {
      var act = document.activeElement;
      if (target.contains(act) && (act.tagName === "SELECT" || (act.tagName === "INPUT" && act.type !== "checkbox"))) return;
      if (target.querySelector("button.confirming, details.menu[open]")) return;
    }
    nav.querySelectorAll("a").forEach(function (a) {
      var on = a.dataset.view === v;
      a.classList.toggle("active", on);
      if (on) a.setAttribute("aria-current", "page"); else a.removeAttribute("aria-current");
    });
    busy = true;
    view.hidden = target !== view;
    panels.hidden = target === view;
    charts.hidden = target === view || v !== "jobs";
    var key = target === view ? "view" : "panels";
    return get(url)
      .then(function (r) {
        if (!r) return;
        return r.text().then(function (html) {
          render(target, html, shown[key] === url);
          shown[key] = url;
          panels.dataset.view = v;
          setStatus("updated " + fmtTime(new Date(), true));
        });
      })
      .catch(function (e) {
        if (target === view && shown.view !== url) {
          view.replaceChildren();
          shown.view = "";
        }
        setStatus(e.message || "server unreachable");
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
        v.textContent = i.label;
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
    else out = Math.floor(s / 60) + "m " + pad(s % 60) + "s";
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
          setStatus("deleted " + done + " of " + total + " buried");
          if (r.deleted > 0 && r.buried > 0) return step();
          return r;
        });
    }
    return step();
  }

  // The selection of the tube view: job ids, for the tube and state shown.
  var selected = new Set(), selectionOf = "";
  function selectionKey() {
    var p = route();
    return p.get("tube") ? p.get("tube") + "\n" + (p.get("state") || "ready") : "";
  }
  function applySelection() {
    var k = selectionKey();
    if (k !== selectionOf) {
      selected.clear();
      selectionOf = k;
    }
    var boxes = view.querySelectorAll("input[data-select]"), all = boxes.length > 0;
    boxes.forEach(function (b) {
      b.checked = selected.has(b.value);
      if (!b.checked) all = false;
      b.closest("tr").classList.toggle("picked", b.checked);
    });
    var bar = view.querySelector(".selection");
    if (!bar) return;
    bar.querySelector("[data-select-all]").checked = all;
    bar.querySelector(".selected-count").textContent = selected.size;
    bar.querySelectorAll("button").forEach(function (b) { b.disabled = selected.size === 0; });
  }
  view.addEventListener("change", function (e) {
    var b = e.target;
    if (b.matches("input[data-select]")) {
      if (b.checked) selected.add(b.value); else selected.delete(b.value);
    } else if (b.matches("input[data-select-all]")) {
      view.querySelectorAll("input[data-select]").forEach(function (c) {
        if (b.checked) selected.add(c.value); else selected.delete(c.value);
      });
    } else {
      return;
    }
    applySelection();
  });

  // eachSelected runs one call per selected job, four at a time, and
  // says how many succeeded.
  function eachSelected(verb, fn) {
    var ids = Array.from(selected), ok = 0, failed = [], next = 0;
    function worker() {
      if (next >= ids.length) return Promise.resolve();
      var id = ids[next++];
      return fn(id).then(function () {
        ok++;
        selected.delete(id);
      }, function (e) { failed.push("#" + id + ": " + e.message); }).then(worker);
    }
    var ws = [];
    for (var i = 0; i < Math.min(4, ids.length); i++) ws.push(worker());
    return Promise.all(ws).then(function () {
      var msg = verb + " " + ok + " of " + ids.length;
      if (failed.length) throw new Error(msg + "; " + failed.length + " not: " + failed[0]);
      return { message: msg };
    });
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
    case "cancel":
      p = call("POST", "/v1/jobs/" + b.dataset.id + "/cancel", { reason: "cancelled from the dashboard" }).then(function () {
        if (route().get("job") === b.dataset.id) {
          location.hash = new URLSearchParams({ tube: tube, state: b.dataset.state }).toString();
        }
      });
      break;
    case "cancel-selected":
      p = eachSelected("cancelled", function (id) {
        return call("POST", "/v1/jobs/" + id + "/cancel", { reason: "cancelled from the dashboard" });
      });
      break;
    case "kick-selected":
      p = eachSelected("kicked", function (id) { return call("POST", "/v1/jobs/" + id + "/kick"); });
      break;
    case "delete-selected":
      p = eachSelected("deleted", function (id) { return call("DELETE", "/v1/jobs/" + id); });
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
      p = call("POST", "/v1/tubes/" + encodeURIComponent(tube) + "/pause", { delay_ms: Number(b.dataset.ms) });
      var menu = b.closest("details");
      if (menu) menu.open = false;
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
    p.then(function (r) {
      setStatus(r && r.message ? r.message : a + " done" + (r && r.kicked !== undefined ? ": " + r.kicked + " kicked" : ""));
    }, function (e) { setStatus(a + ": " + (e.message || "server unreachable")); })
      .finally(function () {
        b.disabled = false;
        refresh();
      });
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
    if (b.classList.contains("confirming")) {
      b.classList.remove("confirming");
      b.textContent = b.dataset.label;
    }
    act(b);
  }
  panels.addEventListener("click", click);
  view.addEventListener("click", click);

  // The search: a job id opens the job; other text filters the tube shown
  // (its listed jobs), else the tubes view; nothing clears the filter.
  var searchQ = document.getElementById("search-q");
  search.addEventListener("submit", function (e) {
    e.preventDefault();
    var q = searchQ.value.trim(), p = route();
    if (/^#?[0-9]+$/.test(q)) {
      location.hash = "job=" + q.replace(/^#/, "");
      return;
    }
    if (!p.get("tube")) p = new URLSearchParams({ view: "jobs" });
    p.delete("after");
    p.delete("before");
    if (q) p.set("q", q); else p.delete("q");
    location.hash = p.toString();
  });
  function syncSearch() {
    var q = route().get("q") || "";
    if (document.activeElement !== searchQ) searchQ.value = q;
  }
  document.addEventListener("click", function (e) {
    document.querySelectorAll("details.menu[open]").forEach(function (d) {
      if (!d.contains(e.target)) d.open = false;
    });
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
    syncSearch();
    refresh();
    window.scrollTo(0, 0);
  });
  if (panels.children.length) {
    shown.panels = "/dashboard/panels?view=jobs";
    localizeTimes(panels);
  }
  syncSearch();
  info();
  refresh();
  // Every two seconds; the tube view every ten, since each of its loads
  // reads the tube's window of up to 1,000 jobs again, bodies and all.
  var ticks = 0;
  setInterval(function () {
    ticks++;
    if (route().get("tube") && ticks % 5 !== 0) return;
    refresh(true);
  }, 2000);
  setInterval(uptime, 1000);
  window.hourglassGet = get;
})();
