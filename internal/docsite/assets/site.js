// The etl-craft catalog site: the search box and the graphs. It works from
// file:// as from a web server: the search index is a script
// (search-index.js) and each graph's data is inline JSON; the graphs are laid
// out by dagre (assets/vendor/dagre).
(function () {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  // The search index and the graphs give pages by their path from the
  // site's top folder; a page in a folder below it (tables/) says the way
  // up in <html data-root>.
  var ROOT = document.documentElement.getAttribute('data-root') || '';
  function page(path) { return ROOT + path; }

  function svg(tag, attrs) {
    var e = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    return e;
  }

  function setUpSearch() {
    var box = document.getElementById('search');
    var list = document.getElementById('search-results');
    var index = window.ETL_CRAFT_SEARCH || [];
    if (!box || !list) { return; }
    box.addEventListener('input', function () {
      var q = box.value.trim().toLowerCase();
      list.textContent = '';
      if (!q) { list.hidden = true; return; }
      var shown = 0;
      for (var i = 0; i < index.length && shown < 30; i++) {
        var entry = index[i];
        if (entry.s.indexOf(q) < 0) { continue; }
        var li = document.createElement('li');
        var a = document.createElement('a');
        a.href = page(entry.u);
        a.textContent = entry.t;
        var kind = document.createElement('span');
        kind.className = 'kind';
        kind.textContent = entry.k;
        a.appendChild(kind);
        li.appendChild(a);
        list.appendChild(li);
        shown++;
      }
      if (shown === 0) {
        var none = document.createElement('li');
        var text = document.createElement('span');
        text.className = 'none';
        text.textContent = 'Nothing matches \u201c' + box.value.trim() + '\u201d';
        none.appendChild(text);
        list.appendChild(none);
      }
      list.hidden = false;
    });
    document.addEventListener('keydown', function (ev) {
      if (ev.key === 'Escape') { list.hidden = true; }
    });
  }

  function draw(box, data) {
    if (!data.nodes || data.nodes.length === 0) {
      box.textContent = 'Nothing to draw.';
      return;
    }
    var g = new dagre.graphlib.Graph();
    g.setGraph({ rankdir: 'LR', nodesep: 18, ranksep: 56, marginx: 10, marginy: 10 });
    g.setDefaultEdgeLabel(function () { return {}; });
    data.nodes.forEach(function (n) {
      g.setNode(n.id, { width: Math.max(70, n.label.length * 7.4 + 24), height: 30, node: n });
    });
    data.edges.forEach(function (e) {
      if (g.hasNode(e.from) && g.hasNode(e.to)) { g.setEdge(e.from, e.to); }
    });
    dagre.layout(g);
    var size = g.graph();
    var root = svg('svg', { width: size.width, height: size.height, viewBox: '0 0 ' + size.width + ' ' + size.height, role: 'img' });
    var defs = svg('defs');
    var marker = svg('marker', { id: box.id + '-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' });
    marker.appendChild(svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', fill: '#8c959f' }));
    defs.appendChild(marker);
    root.appendChild(defs);
    g.edges().forEach(function (e) {
      var pts = g.edge(e).points;
      var d = 'M ' + pts.map(function (p) { return p.x + ' ' + p.y; }).join(' L ');
      root.appendChild(svg('path', { d: d, 'class': 'edge', 'marker-end': 'url(#' + box.id + '-arrow)', 'data-from': e.v, 'data-to': e.w }));
    });
    g.nodes().forEach(function (id) {
      var n = g.node(id);
      var group = svg('g', { 'class': 'node role-' + n.node.role, 'data-role': n.node.role, 'data-id': id });
      var holder = group;
      if (n.node.url) {
        holder = svg('a', { href: page(n.node.url) });
        group.appendChild(holder);
      }
      var title = svg('title');
      title.textContent = n.node.label;
      holder.appendChild(title);
      holder.appendChild(svg('rect', { x: n.x - n.width / 2, y: n.y - n.height / 2, width: n.width, height: n.height }));
      var text = svg('text', { x: n.x, y: n.y + 4, 'text-anchor': 'middle' });
      text.textContent = n.node.label;
      holder.appendChild(text);
      root.appendChild(group);
    });
    box.appendChild(root);
    box.setAttribute('data-drawn', 'true');
  }

  function drawGraphs() {
    var scripts = document.querySelectorAll('script.graph-data');
    Array.prototype.forEach.call(scripts, function (s) {
      var box = document.getElementById(s.getAttribute('data-target'));
      if (box) { draw(box, JSON.parse(s.textContent)); }
    });
  }

  setUpSearch();
  drawGraphs();
}());
