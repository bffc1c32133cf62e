// The overview's charts: the last hour from GET /dashboard/series, drawn
// as inline SVG every ten seconds.
(function () {
  "use strict";
  var box = document.getElementById("charts");
  var NS = "http://www.w3.org/2000/svg";
  var W = 360, H = 110, PAD = 4;
  var titles = {
    puts: "puts per 10 s (store, every server)",
    reserves: "reserves per 10 s (store, every server)",
    deletes: "deletes per 10 s (store, every server)",
    buries: "buries per 10 s (store, every server)",
    timeouts: "timeouts per 10 s (store, every server)"
  };
  var palette = ["#2f6fde", "#e8590c", "#12b886", "#ae3ec9", "#f59f00", "#1098ad", "#d6336c", "#5c940d"];

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function fmt(v) {
    if (v >= 10000) return Math.round(v / 1000) + "k";
    if (v >= 1000) return (v / 1000).toFixed(1) + "k";
    return String(Math.round(v * 10) / 10);
  }

  // chart draws lines ([{label, values}], values < 0 are gaps) in a figure.
  function chart(title, lines, unit) {
    var fig = document.createElement("figure");
    fig.className = "chart";
    var cap = document.createElement("figcaption");
    cap.textContent = title;
    fig.appendChild(cap);
    var top = 0, n = 0;
    lines.forEach(function (l) {
      n = Math.max(n, l.values.length);
      l.values.forEach(function (v) { top = Math.max(top, v); });
    });
    var svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": title, preserveAspectRatio: "none" }, fig);
    el("line", { x1: 0, y1: H - PAD, x2: W, y2: H - PAD, class: "axis" }, svg);
    el("line", { x1: 0, y1: PAD, x2: W, y2: PAD, class: "grid" }, svg);
    var x = function (i) { return n > 1 ? i * W / (n - 1) : 0; };
    var y = function (v) { return H - PAD - (top > 0 ? v / top : 0) * (H - 2 * PAD); };
    lines.forEach(function (l, li) {
      var d = "", pen = false;
      l.values.forEach(function (v, i) {
        if (v < 0) {
          pen = false;
          return;
        }
        d += (pen ? "L" : "M") + x(i).toFixed(1) + " " + y(v).toFixed(1);
        pen = true;
      });
      if (d) el("path", { d: d, fill: "none", stroke: palette[li % palette.length], "stroke-width": 1.5, "vector-effect": "non-scaling-stroke" }, svg);
    });
    var legend = document.createElement("p");
    legend.className = "legend";
    var max = document.createElement("span");
    max.className = "max";
    max.textContent = "max " + fmt(top) + (unit || "");
    legend.appendChild(max);
    if (!lines.length) {
      var none = document.createElement("span");
      none.textContent = "none in the last hour";
      legend.appendChild(none);
    }
    lines.forEach(function (l, li) {
      var s = document.createElement("span");
      s.className = "key c" + (li % palette.length);
      var total = 0;
      l.values.forEach(function (v) { if (v > 0) total += v; });
      s.textContent = l.label + (unit ? "" : " " + fmt(total));
      legend.appendChild(s);
    });
    fig.appendChild(legend);
    return fig;
  }

  function draw(s) {
    var figs = [];
    s.charts.forEach(function (c) {
      var lines = c.lines.map(function (l) { return { label: l.tube || "all tubes", values: l.values }; });
      figs.push(chart(titles[c.name] || c.name, lines));
    });
    figs.push(chart("delivery lateness, ms (HTTP first reserves)", [
      { label: "p50", values: s.lateness_p50_ms },
      { label: "p99", values: s.lateness_p99_ms }
    ].filter(function (l) { return l.values.some(function (v) { return v >= 0; }); }), " ms"));
    var head = document.createElement("h2");
    head.textContent = "The last hour";
    var axis = document.createElement("p");
    axis.className = "note";
    axis.textContent = "from " + new Date(s.end_ms - s.step_ms * s.lateness_p50_ms.length).toLocaleTimeString() +
      " to " + new Date(s.end_ms).toLocaleTimeString() + ", 10 s a point; the tables below hold the job counts now";
    var grid = document.createElement("div");
    grid.className = "charts";
    figs.forEach(function (f) { grid.appendChild(f); });
    box.replaceChildren(head, grid, axis);
  }

  function load() {
    if (box.hidden) return;
    window.hourglassGet("/dashboard/series")
      .then(function (r) { return r && r.json(); })
      .then(function (s) { if (s) draw(s); }, function () {});
  }
  window.hourglassCharts = load;
  load();
  setInterval(load, 10000);
  window.addEventListener("hashchange", function () { setTimeout(load, 0); });
})();
