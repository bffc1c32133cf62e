// The tubes view's charts: jobs processed, failed and put per tube, over
// the last hour (by minute) or day (by ten minutes), from the store's
// history (GET /dashboard/series), and this server's delivery lateness
// over the last hour. The figures are built once, at a fixed size, and
// their lines and legends are redrawn in place every thirty seconds. A
// title is read whole (it wraps, on two lines at most); the top of the
// scale is written at the chart's top line, in the chart's unit.
(function () {
  "use strict";
  var box = document.getElementById("charts");
  var NS = "http://www.w3.org/2000/svg";
  var W = 360, H = 110, PAD = 4;
  var rangeKey = "hourglass-range";
  var range = localStorage.getItem(rangeKey) === "day" ? "day" : "hour";
  var kinds = [
    { name: "processed", title: "processed (deleted)" },
    { name: "failed", title: "failed (buried or timed out)" },
    { name: "puts", title: "put" },
    { name: "lateness", title: "lateness: due to first reserve (HTTP, this server)", unit: "ms" }
  ];
  var palette = ["#2f6fde", "#e8590c", "#12b886", "#ae3ec9", "#f59f00", "#1098ad", "#d6336c", "#5c940d", "#667085", "#1d2330"];

  function el(name, attrs, parent) {
    var e = document.createElementNS(NS, name);
    for (var k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }
  function html(tag, cls, text, parent) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text) e.textContent = text;
    if (parent) parent.appendChild(e);
    return e;
  }

  // fmtMS writes milliseconds as 850 ms, 2.5 s, 2 min.
  function fmtMS(v) {
    if (v >= 60000) return Math.round(v / 60000) + " min";
    if (v >= 1000) return (Math.round(v / 100) / 10) + " s";
    return Math.round(v) + " ms";
  }
  function fmt(v) {
    if (v >= 10000) return Math.round(v / 1000) + "k";
    if (v >= 1000) return (v / 1000).toFixed(1) + "k";
    return String(Math.round(v * 10) / 10);
  }

  // The skeleton: a head with the range switch, a figure per kind.
  var figs = {}, head, note;
  function build() {
    head = html("div", "charts-head", null, box);
    html("h2", null, "History", head);
    var sw = html("div", "range", null, head);
    [["hour", "last hour"], ["day", "last day"]].forEach(function (r) {
      var b = html("button", r[0] === range ? "on" : "", r[1], sw);
      b.type = "button";
      b.dataset.range = r[0];
      b.setAttribute("aria-pressed", r[0] === range);
    });
    sw.addEventListener("click", function (e) {
      var b = e.target.closest("button[data-range]");
      if (!b) return;
      range = b.dataset.range;
      localStorage.setItem(rangeKey, range);
      sw.querySelectorAll("button").forEach(function (x) {
        x.classList.toggle("on", x === b);
        x.setAttribute("aria-pressed", x === b);
      });
      load();
    });
    var grid = html("div", "charts", null, box);
    kinds.forEach(function (k) {
      var fig = html("figure", "chart", null, grid);
      fig.dataset.chart = k.name;
      var cap = html("figcaption", null, null, fig);
      html("span", "title", k.title, cap);
      var plot = html("div", "plot", null, fig);
      var max = html("span", "max", "", plot);
      var svg = el("svg", { viewBox: "0 0 " + W + " " + H, role: "img", "aria-label": k.title, preserveAspectRatio: "none" }, plot);
      el("line", { x1: 0, y1: H - PAD, x2: W, y2: H - PAD, class: "axis" }, svg);
      el("line", { x1: 0, y1: PAD, x2: W, y2: PAD, class: "grid" }, svg);
      var g = el("g", {}, svg);
      var legend = html("p", "legend", null, fig);
      figs[k.name] = { g: g, legend: legend, max: max };
    });
    note = html("p", "note axis-note", "", box);
  }

  // draw puts lines ([{label, values}], values < 0 are gaps) in a figure.
  function draw(f, lines, unit, empty) {
    var top = 0, n = 0;
    lines.forEach(function (l) {
      n = Math.max(n, l.values.length);
      l.values.forEach(function (v) { top = Math.max(top, v); });
    });
    var x = function (i) { return n > 1 ? i * W / (n - 1) : 0; };
    var y = function (v) { return H - PAD - (top > 0 ? v / top : 0) * (H - 2 * PAD); };
    var paths = [];
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
      // A point with no neighbour is drawn as a dot.
      d = d.replace(/M([0-9.]+) ([0-9.]+)(?=M|$)/g, "M$1 $2h2");
      if (d) paths.push(el("path", { d: d, fill: "none", stroke: palette[li % palette.length], "stroke-width": 1.5, "stroke-linecap": "round", "vector-effect": "non-scaling-stroke" }));
    });
    f.g.replaceChildren.apply(f.g, paths);
    f.max.textContent = top > 0 ? (unit === "ms" ? fmtMS(top) : fmt(top)) : "";
    f.max.title = top > 0 ? "the highest value shown" : "";
    var keys = [];
    if (!lines.length) keys.push(html("span", "none", empty));
    lines.forEach(function (l, li) {
      var total = 0;
      l.values.forEach(function (v) { if (v > 0) total += v; });
      var last = -1;
      l.values.forEach(function (v) { if (v >= 0) last = v; });
      keys.push(html("span", "key c" + (li % palette.length), l.label + (unit === "ms" ? (last >= 0 ? " " + fmtMS(last) + " last" : "") : " " + fmt(total))));
    });
    f.legend.replaceChildren.apply(f.legend, keys);
  }

  function show(s) {
    var when = range === "day" ? "the last day" : "the last hour";
    s.charts.forEach(function (c) {
      var f = figs[c.name];
      if (!f) return;
      draw(f, c.lines.map(function (l) { return { label: l.tube || "all tubes", values: l.values }; }), "",
        s.kept ? "none in " + when : "the store keeps no history");
    });
    draw(figs.lateness, [
      { label: "p50", values: s.lateness_p50_ms },
      { label: "p99", values: s.lateness_p99_ms }
    ].filter(function (l) { return l.values.some(function (v) { return v >= 0; }); }), "ms", "no HTTP deliveries in the last hour");
    var t = window.hourglassTime || function (d) { return d.toISOString(); };
    var n = s.charts.length && s.charts[0].lines.length ? s.charts[0].lines[0].values.length : (range === "day" ? 144 : 60);
    note.textContent = "Jobs from " + t(new Date(s.end_ms - s.step_ms * n)) + " to " + t(new Date(s.end_ms)) +
      ", " + (range === "day" ? "10 minutes" : "a minute") + " a point, as every server on the store counts them. Lateness: p50 and p99 of each 10 s of the last hour, from a job's due time to its first reserve over HTTP (a job that waits for a worker counts).";
  }

  function load() {
    if (box.hidden) return;
    window.hourglassGet("/dashboard/series?range=" + range)
      .then(function (r) { return r && r.json(); })
      .then(function (s) { if (s) show(s); }, function () {});
  }
  build();
  window.hourglassCharts = load;
  load();
  setInterval(load, 30000);
  window.addEventListener("hashchange", function () { setTimeout(load, 50); });
})();
