// Squall UI: draws the topology graph (static/graph.js). Layout by dagre (vendored, @dagrejs/dagre 3.1.3); the
// nodes and edges come from the page (#graph-data, service/ui/graph.py). Each node links to its component page.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  function el(name, attrs, parent) {
    var e = document.createElementNS(SVG, name);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (parent) { parent.appendChild(e); }
    return e;
  }
  function draw() {
    var svg = document.getElementById("graph");
    var data = document.getElementById("graph-data");
    if (!svg || !data || typeof dagre === "undefined") { return; }
    var g = JSON.parse(data.textContent);
    var layout = new dagre.graphlib.Graph({ multigraph: true });
    layout.setGraph({ rankdir: "LR", nodesep: 30, ranksep: 110, marginx: 16, marginy: 16 });
    layout.setDefaultEdgeLabel(function () { return {}; });
    g.nodes.forEach(function (n) { layout.setNode(n.id, { width: n.size, height: 54, data: n }); });
    g.edges.forEach(function (e, i) { layout.setEdge(e.source, e.target, { label: e.label, width: e.label.length * 6.5, height: 14, data: e }, "e" + i); });
    dagre.layout(layout);
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var defs = el("defs", {}, svg);
    var marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: "10", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto-start-reverse" }, defs);
    el("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#57606a" }, marker);
    layout.edges().forEach(function (id) {
      var e = layout.edge(id);
      var grp = el("g", { "class": "edge" }, svg);
      var d = e.points.map(function (p, i) { return (i ? "L" : "M") + p.x + " " + p.y; }).join(" ");
      el("path", { d: d, "marker-end": "url(#arrow)" }, grp);
      var t = el("text", { x: e.x, y: e.y + 4, "text-anchor": "middle" }, grp);
      t.textContent = e.label;
    });
    layout.nodes().forEach(function (id) {
      var n = layout.node(id);
      var detail = n.data.kind + " · " + n.data.executors + "/" + n.data.tasks + " · cap " + n.data.capacity.toFixed(2) + (n.data.state === "ok" ? "" : " · " + n.data.state);
      // No aria-label: the link's accessible name is its visible text, state included (WCAG 2.5.3).
      var a = el("a", { href: n.data.href, "class": "node state-" + n.data.state }, svg);
      a.setAttribute("data-component", id);
      el("rect", { x: n.x - n.width / 2, y: n.y - n.height / 2, width: n.width, height: n.height }, a);
      var name = el("text", { x: n.x, y: n.y - 4, "text-anchor": "middle", "font-weight": "700" }, a);
      name.textContent = id;
      var sub = el("text", { x: n.x, y: n.y + 14, "text-anchor": "middle" }, a);
      sub.textContent = detail;
    });
    var box = layout.graph();
    svg.setAttribute("viewBox", "0 0 " + Math.max(box.width, 200) + " " + Math.max(box.height, 80));
    svg.setAttribute("height", Math.max(box.height, 80));
    svg.setAttribute("data-drawn", String(g.nodes.length));
  }
  document.addEventListener("DOMContentLoaded", draw);
}());
