/* A graph drawn in SVG: a force layout of a neighbourhood (a few hundred nodes at most), pan by dragging,
 * zoom with the wheel or the buttons, click a node to select it. No dependencies.
 *
 * Nexus.graph(container, {nodes: [{id, label, type, distance}], edges: [{src, dst, label}], selected,
 *                         onSelect(id)}) -> {select(id)}
 */
"use strict";
(() => {
  const Nexus = (window.Nexus = window.Nexus || {});
  const SVG = "http://www.w3.org/2000/svg";

  function svg(tag, attrs, children) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    for (const child of children || []) node.append(child);
    return node;
  }

  function hue(text) {
    let hash = 0;
    for (const ch of String(text)) hash = (hash * 31 + ch.codePointAt(0)) >>> 0;
    return hash % 360;
  }

  Nexus.colorOf = (type) => `hsl(${hue(type)}, 55%, 52%)`;

  /** Positions: rings by distance from the centre, then a few hundred steps of springs and repulsion. */
  function layout(nodes, edges) {
    const byDistance = {};
    for (const n of nodes) (byDistance[n.distance ?? 1] ||= []).push(n);
    for (const [d, ring] of Object.entries(byDistance)) {
      ring.forEach((n, i) => {
        const angle = (2 * Math.PI * i) / ring.length + Number(d);
        n.x = Number(d) * 140 * Math.cos(angle);
        n.y = Number(d) * 140 * Math.sin(angle);
      });
    }
    const index = new Map(nodes.map((n) => [n.id, n]));
    const links = edges.map((e) => [index.get(e.src), index.get(e.dst)]).filter(([a, b]) => a && b && a !== b);
    const steps = nodes.length > 150 ? 120 : 250;
    for (let step = 0; step < steps; step++) {
      const heat = 1 - step / steps;
      for (const n of nodes) (n.vx = -n.x * 0.01), (n.vy = -n.y * 0.01);
      for (let i = 0; i < nodes.length; i++) {
        const a = nodes[i];
        for (let j = i + 1; j < nodes.length; j++) {
          const b = nodes[j];
          let dx = a.x - b.x;
          let dy = a.y - b.y;
          let d2 = dx * dx + dy * dy;
          if (d2 < 0.01) (dx = Math.random() - 0.5), (dy = Math.random() - 0.5), (d2 = 0.5);
          if (d2 > 250000) continue;
          const push = 2400 / d2;
          a.vx += dx * push;
          a.vy += dy * push;
          b.vx -= dx * push;
          b.vy -= dy * push;
        }
      }
      for (const [a, b] of links) {
        const dx = b.x - a.x;
        const dy = b.y - a.y;
        const d = Math.sqrt(dx * dx + dy * dy) || 1;
        const pull = ((d - 110) / d) * 0.08;
        a.vx += dx * pull;
        a.vy += dy * pull;
        b.vx -= dx * pull;
        b.vy -= dy * pull;
      }
      for (const n of nodes) {
        if (n.distance === 0) continue; // the centre stays put
        const speed = Math.sqrt(n.vx * n.vx + n.vy * n.vy) || 1;
        const limit = Math.min(speed, 30 * heat + 1);
        n.x += (n.vx / speed) * limit;
        n.y += (n.vy / speed) * limit;
      }
    }
    return links;
  }

  Nexus.graph = (container, { nodes, edges, selected, onSelect }) => {
    nodes = nodes.map((n) => ({ ...n }));
    const links = layout(nodes, edges);
    const view = { x: 0, y: 0, k: 1 };
    const scene = svg("g", { class: "scene" });
    const root = svg("svg", { class: "graph", role: "img", "aria-label": "graph of entities" }, [scene]);
    const labelled = new Map(edges.map((e) => [`${e.src}\u0000${e.dst}`, e.label]));

    for (const [a, b] of links) {
      const line = svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: "edge" });
      const label = labelled.get(`${a.id}\u0000${b.id}`);
      line.append(svg("title", {}, [`${a.label} -${label}-> ${b.label}`]));
      scene.append(line);
      if (label && nodes.length <= 40) {
        scene.append(svg("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2, class: "edge-label" }, [label]));
      }
    }
    const circles = new Map();
    for (const n of nodes) {
      const group = svg("g", { class: "node", transform: `translate(${n.x},${n.y})`, "data-id": n.id, tabindex: 0 });
      const circle = svg("circle", { r: n.distance === 0 ? 11 : 7, fill: Nexus.colorOf(n.type) });
      group.append(circle, svg("text", { x: 12, y: 4 }, [n.label]), svg("title", {}, [`${n.label} (${n.type})`]));
      group.addEventListener("click", (event) => (event.stopPropagation(), select(n.id, true)));
      group.addEventListener("keydown", (event) => event.key === "Enter" && select(n.id, true));
      circles.set(n.id, group);
      scene.append(group);
    }

    function apply() {
      scene.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
    }
    function fit() {
      const xs = nodes.map((n) => n.x);
      const ys = nodes.map((n) => n.y);
      const [w, h] = [root.clientWidth || 800, root.clientHeight || 500];
      const spanX = Math.max(...xs, 1) - Math.min(...xs, -1) + 200;
      const spanY = Math.max(...ys, 1) - Math.min(...ys, -1) + 80;
      view.k = Math.min(2, Math.max(0.1, Math.min(w / spanX, h / spanY)));
      view.x = w / 2 - view.k * ((Math.max(...xs, 0) + Math.min(...xs, 0)) / 2 + 50);
      view.y = h / 2 - view.k * ((Math.max(...ys, 0) + Math.min(...ys, 0)) / 2);
      apply();
    }
    function zoom(factor, cx, cy) {
      const k = Math.min(8, Math.max(0.05, view.k * factor));
      view.x = cx - ((cx - view.x) * k) / view.k;
      view.y = cy - ((cy - view.y) * k) / view.k;
      view.k = k;
      apply();
    }
    function select(id, fromClick) {
      for (const [key, group] of circles) group.classList.toggle("selected", key === id);
      if (fromClick && onSelect) onSelect(id);
    }

    let drag = null;
    root.addEventListener("pointerdown", (event) => {
      if (event.target.closest(".node")) return; // a click on an entity, not a pan
      drag = { x: event.clientX - view.x, y: event.clientY - view.y };
      root.setPointerCapture(event.pointerId);
    });
    root.addEventListener("pointermove", (event) => {
      if (!drag) return;
      view.x = event.clientX - drag.x;
      view.y = event.clientY - drag.y;
      apply();
    });
    root.addEventListener("pointerup", () => (drag = null));
    root.addEventListener(
      "wheel",
      (event) => {
        event.preventDefault();
        const box = root.getBoundingClientRect();
        zoom(event.deltaY < 0 ? 1.15 : 1 / 1.15, event.clientX - box.left, event.clientY - box.top);
      },
      { passive: false },
    );

    const button = (label, title, action) => {
      const b = document.createElement("button");
      b.type = "button";
      b.textContent = label;
      b.title = title;
      b.addEventListener("click", action);
      return b;
    };
    const middle = () => [root.clientWidth / 2, root.clientHeight / 2];
    const tools = document.createElement("div");
    tools.className = "graph-tools";
    tools.append(
      button("+", "Zoom in", () => zoom(1.3, ...middle())),
      button("−", "Zoom out", () => zoom(1 / 1.3, ...middle())),
      button("Fit", "Show everything", fit),
    );
    const types = [...new Set(nodes.map((n) => n.type))].sort();
    const legend = document.createElement("div");
    legend.className = "legend";
    for (const type of types) {
      const swatch = document.createElement("span");
      swatch.className = "swatch";
      swatch.style.background = Nexus.colorOf(type);
      const entry = document.createElement("span");
      entry.append(swatch, type);
      legend.append(entry);
    }
    const frame = document.createElement("div");
    frame.className = "graph-frame";
    frame.append(root, tools, legend);
    container.replaceChildren(frame);
    requestAnimationFrame(fit);
    if (selected) select(selected, false);
    return { select: (id) => select(id, false), fit };
  };
})();
